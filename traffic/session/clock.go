package session

import "time"

// Clock is the time a session reads: the real one, or a test's.
type Clock interface {
	// Now is the clock's time.
	Now() time.Time
	// After sends the time on the channel once d has passed.
	After(d time.Duration) <-chan time.Time
	// AfterFunc calls f in its own goroutine after d; stop cancels it and
	// says whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
	// Ticker sends the time every d until stop.
	Ticker(d time.Duration) (c <-chan time.Time, stop func())
}

// RealClock is the time package's clock.
type RealClock struct{}

func (RealClock) Now() time.Time                         { return time.Now() }
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (RealClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}
func (RealClock) Ticker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
