package session

import (
	"sync"
	"time"

	"linerate/box"
)

// Sampling starts recording the machine's counters once a second. each, if
// not nil, is called with every interval's rates; stop ends the recording
// and returns every interval, or why there are none.
type Sampling func(each func(box.Rates)) (stop func() ([]box.Rates, error))

// windowSampling runs a Sampling over a test's measured window: started by
// a timer at the window's start, stopped by the test's teardown. Stopping
// waits for a start that is under way, and a start after the stop does
// nothing, so that no sampler outlives its test whatever the order.
type windowSampling struct {
	mu      sync.Mutex
	cancel  func() bool
	stop    func() ([]box.Rates, error)
	began   bool // the window started (the timer's function ran)
	stopped bool
}

// startAt arms the sampling (nil: none) for at, on clk; mark, if set,
// runs first then.
func (w *windowSampling) startAt(clk Clock, at time.Time, s Sampling, each func(box.Rates), mark func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cancel = clk.AfterFunc(at.Sub(clk.Now()), func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.stopped {
			return
		}
		w.began = true
		if mark != nil {
			mark()
		}
		if s != nil {
			w.stop = s(each)
		}
	})
}

// finish stops the sampling and returns its intervals; began is false when
// the window never started (the test ended before it did).
func (w *windowSampling) finish() (rates []box.Rates, began bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.cancel != nil {
		w.cancel()
	}
	st := w.stop
	w.stop = nil
	if st == nil {
		return nil, w.began, nil
	}
	rates, err = st()
	return rates, w.began, err
}
