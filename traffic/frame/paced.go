package frame

// The paced loop the ring and AF_XDP senders share: a run requests frames
// as the rate allows, stamps each with its port, stream, sequence number
// and send time, and kicks the kernel, until the warmup and the measured
// window have passed; then it waits for the kernel to give every frame
// back and counts what went. Only the way a frame reaches the kernel
// differs, behind queue: the AF_PACKET ring's slots (RingSender) or the
// AF_XDP socket's TX ring and UMEM (XDPSender).

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"linerate/internal/usage"
	"linerate/traffic/session"
	"linerate/wire"
)

// pacedSender is what a paced run reads of its sender: the settings,
// the frames' length and mix, and the live count of frames requested.
// RingSender and XDPSender embed it.
type pacedSender struct {
	cfg      RingConfig
	frameLen int       // bytes handed to the device per frame (no FCS); the largest, with a mix
	mix      *frameMix // nil: every frame is frameLen bytes
	// progress counts frames requested so far, warmup included, for
	// Progress while a run runs.
	progress atomic.Uint64
}

// Progress is the number of frames handed to the kernel so far in the
// current run, warmup included, and their bytes; safe to call while the
// run runs.
func (f *pacedSender) Progress() (packets, bytes uint64) {
	p := f.progress.Load()
	if f.mix != nil {
		return p, f.mix.frameBytes(0, p)
	}
	return p, p * uint64(f.frameLen)
}

// A queue is where a paced run's frames go and how the kernel is asked to
// send them.
type queue interface {
	// settle readies a turn at now, before the run takes its allowance;
	// again skips the turn.
	settle(ctx context.Context, r *pacedRun, now time.Time) (again bool, err error)
	// fill requests up to want frames, as many as there is room for, each
	// stamped by r.stampNext, and records them with r.fillDone.
	fill(r *pacedRun, want uint64) (uint64, error)
	// kick asks the kernel to send the requested frames, without waiting;
	// an interface that is down is errLinkDown.
	kick() error
	// waitWritable waits a moment for the kernel to free room.
	waitWritable()
	// drain kicks the kernel until it gave every frame back, for at most
	// a second, and returns how many it still holds.
	drain() uint64
}

// runPaced sends q's frames paced by f's settings, the warmup from start (zero:
// now), and returns what went; engine names the sender in errors. One OS
// thread serves the whole run, so that its CPU time is the run's.
func (f *pacedSender) runPaced(ctx context.Context, start time.Time, q queue, engine string) (RingCounts, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if f.cfg.CPU >= 0 {
		restore, err := pinThread(f.cfg.CPU)
		if err != nil {
			return RingCounts{}, usage.Errorf("%s sender: pin to CPU %d: %w", engine, f.cfg.CPU, err)
		}
		defer restore()
	}
	cpu0 := session.ThreadUsage()
	f.progress.Store(0)
	r := f.newRun(runStart(start))
	err := r.loop(ctx, q)
	counts := r.tally(q.drain())
	counts.CPU = session.ThreadUsage() - cpu0
	return counts, err
}

// errLinkDown is a kick refused because the interface is down (ENETDOWN):
// the ring and AF_XDP senders pause (the frames stay requested) and try
// again every linkDownRetry until it is up or the run is over.
var errLinkDown = errors.New("interface is down")

// linkDownRetry is how often a sender whose interface is down tries again.
const linkDownRetry = 10 * time.Millisecond

// pauseIfDown sleeps linkDownRetry and says so when err is errLinkDown;
// any other error is returned as it is.
func pauseIfDown(ctx context.Context, err error) (paused bool, _ error) {
	if !errors.Is(err, errLinkDown) {
		return false, err
	}
	return true, sleep(ctx, linkDownRetry)
}

// catchUp bounds how long after the end of a rate-limited run the
// sender goes on catching up with the rate. The rate is held on average: a
// sender that was descheduled sends what it owes in bursts, mid-run and at
// the end alike.
const catchUp = time.Second

// kickBatch caps how many frames are requested before each kick, so that
// the kernel starts sending while the ring still has room.
const kickBatch = 512

// pacedRun is the state of one run.
type pacedRun struct {
	f        *pacedSender
	seqs     []uint64 // next datagram number per stream (the header carries its low 32 bits)
	port     uint16   // index of the next frame's port
	queued   uint64   // frames requested in the measured phase
	warm     uint64   // frames requested during the warmup
	flags    byte
	measured time.Time // the warmup's end
	end      time.Time // the measured phase's end, when hasEnd
	hasEnd   bool
	// phaseStart and phaseSent (frames requested since it) pace the
	// current phase.
	phaseStart time.Time
	phaseSent  uint64
	// downSince is when a kick found the link down (zero: it is up);
	// heldBack is the measured frames the rate allowed while it was down,
	// never sent: a paced sender does not catch up a cut in a burst.
	downSince time.Time
	heldBack  uint64
}

// kicked looks at a kick's error: a link that is down pauses the run
// (down, and the loop calls retryDown until it is up) instead of ending
// it; any other error ends the run.
func (r *pacedRun) kicked(err error) (down bool, _ error) {
	if errors.Is(err, errLinkDown) {
		r.downSince = time.Now()
		return true, nil
	}
	return false, err
}

// retryDown waits linkDownRetry and kicks again while the link is down.
// Once it is up, the pacing resumes from now: the frames the rate
// allowed meanwhile are held back (measured ones counted), not owed. over
// is the run's end reached while the link was down.
func (r *pacedRun) retryDown(ctx context.Context, kick func() error) (over bool, err error) {
	paused, err := pauseIfDown(ctx, kick())
	if err != nil {
		return false, err
	}
	now := time.Now()
	over = r.hasEnd && !now.Before(r.end)
	if paused && !over {
		return false, nil
	}
	upTo := now
	if over {
		upTo = r.end
	}
	if rate := r.f.cfg.Rate; rate > 0 && r.flags&wire.FlagWarmup == 0 && upTo.After(r.downSince) {
		from := r.downSince
		if from.Before(r.measured) {
			from = r.measured
		}
		r.heldBack += uint64(rate * upTo.Sub(from).Seconds())
	}
	r.phaseStart = r.phaseStart.Add(now.Sub(r.downSince))
	r.downSince = time.Time{}
	return over, nil
}

// runStart is when a run's warmup starts: start, unless zero or to come
// (a run is never ahead of its clock), else now.
func runStart(start time.Time) time.Time {
	if now := time.Now(); start.IsZero() || start.After(now) {
		return now
	}
	return start
}

// newRun is a run of f's settings whose warmup starts at start.
func (f *pacedSender) newRun(start time.Time) *pacedRun {
	r := &pacedRun{f: f, seqs: make([]uint64, f.cfg.streams()), measured: start.Add(f.cfg.Warmup),
		hasEnd: f.cfg.Duration > 0, phaseStart: start}
	r.end = r.measured.Add(f.cfg.Duration)
	if f.cfg.Warmup > 0 {
		r.flags = wire.FlagWarmup
	}
	return r
}

// loop requests frames of q as the rate allows and kicks the kernel,
// until the run is over or ctx ends.
func (r *pacedRun) loop(ctx context.Context, q queue) error {
	for {
		if !r.downSince.IsZero() {
			// The link is down: retry what is requested, request no more.
			if over, err := r.retryDown(ctx, q.kick); over || err != nil {
				return err
			}
			continue
		}
		now := time.Now()
		if again, err := q.settle(ctx, r, now); err != nil {
			return err
		} else if again {
			continue
		}
		want, next, done := r.allowance(now)
		if done {
			return nil
		}
		if want == 0 {
			if err := sleep(ctx, time.Until(next)); err != nil {
				return err
			}
			continue
		}
		n, err := q.fill(r, want)
		if err != nil {
			return err
		}
		if down, err := r.kicked(q.kick()); err != nil {
			return err
		} else if down {
			continue
		}
		if n < want {
			// The ring is full: let the kernel free room.
			q.waitWritable()
		}
		if r.flags&wire.FlagWarmup == 0 && r.f.cfg.Count > 0 && r.queued >= r.f.cfg.Count {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// allowance is how many frames may be requested at now; when none, next
// is when to look again; done is the end of the run. The first call past
// the warmup starts the measured phase.
func (r *pacedRun) allowance(now time.Time) (want uint64, next time.Time, done bool) {
	if r.flags&wire.FlagWarmup != 0 && !now.Before(r.measured) {
		r.flags &^= wire.FlagWarmup
		r.phaseStart, r.phaseSent = r.measured, 0
	}
	rate, count := r.f.cfg.Rate, r.f.cfg.Count
	measuring := r.flags&wire.FlagWarmup == 0
	last := false
	if measuring && r.hasEnd && !now.Before(r.end) {
		if rate == 0 || now.Sub(r.end) > catchUp {
			return 0, next, true
		}
		// Catch up to what the rate allowed by the end, then stop.
		now, last = r.end, true
	}
	want = kickBatch
	if rate > 0 {
		due := uint64(rate * now.Sub(r.phaseStart).Seconds())
		if due <= r.phaseSent {
			if last {
				return 0, next, true
			}
			next = r.phaseStart.Add(time.Duration(float64(r.phaseSent+1) / rate * float64(time.Second)))
			if !measuring && next.After(r.measured) {
				next = r.measured
			}
			if r.hasEnd && measuring && next.After(r.end) {
				next = r.end
			}
			return 0, next, false
		}
		want = min(due-r.phaseSent, kickBatch)
	}
	if measuring && count > 0 {
		if r.queued >= count {
			return 0, next, true
		}
		want = min(want, count-r.queued)
	}
	return want, next, false
}

// tally is what the run sent, given the frames the kernel still held
// after the drain.
func (r *pacedRun) tally(pending uint64) RingCounts {
	s := r.f
	queued, warm := r.queued, r.warm
	// Frames still pending after the drain were never sent; they are the
	// most recent ones, so they come off the measured count first.
	if pending > queued {
		warm -= min(warm, pending-queued)
		pending = queued
	}
	c := RingCounts{Packets: queued - pending, WarmupPackets: warm, HeldBack: r.heldBack}
	// Frame g (counting from 0 across both phases) went to stream g %
	// streams; the measured ones are g in [warm, warm+Packets).
	n := s.cfg.streams()
	c.StreamPackets, c.StreamWarmup = make([]uint64, n), make([]uint64, n)
	for i := range n {
		c.StreamWarmup[i] = framesToPort(warm, i, n)
		c.StreamPackets[i] = framesToPort(warm+c.Packets, i, n) - c.StreamWarmup[i]
	}
	c.Bytes = c.Packets * uint64(s.frameLen)
	if s.mix != nil {
		c.Bytes = 0
		for i := range n {
			c.Bytes += s.mix.frameBytes(c.StreamWarmup[i], c.StreamPackets[i])
		}
	}
	return c
}

// stampNext writes the headers of the next frame into data, a slot that holds
// a frame built by buildRingFrame, for port (the stream index), sent at
// sent, and returns the frame's length (no FCS) and the next frame's port.
func (r *pacedRun) stampNext(data []byte, port uint16, sent int64) (length uint32, next uint16) {
	f := r.f
	length = uint32(f.frameLen)
	if f.mix != nil {
		length = f.mix.put(data, r.seqs[port])
	}
	f.cfg.stamp(data, port, wire.Header{Flags: r.flags, Seq: uint32(r.seqs[port]), Sent: sent})
	r.seqs[port]++
	if port++; int(port) == len(r.seqs) {
		port = 0
	}
	return length, port
}

// fillDone records n frames requested, the next one for port.
func (r *pacedRun) fillDone(n uint64, port uint16) {
	r.port = port
	r.phaseSent += n
	r.f.progress.Add(n)
	if r.flags&wire.FlagWarmup == 0 {
		r.queued += n
	} else {
		r.warm += n
	}
}

// kickError is the error of a kick's sendto on iface that failed with e
// (neither done nor to retry): the link down, the interface gone, or
// anything else.
func kickError(iface string, e unix.Errno) error {
	switch e {
	case unix.ENETDOWN:
		return fmt.Errorf("send on %s: %w: %w", iface, errLinkDown, e)
	case unix.ENXIO:
		return fmt.Errorf("send on %s: the interface is gone: %w", iface, e)
	}
	return fmt.Errorf("send on %s: %w", iface, e)
}

// framesToPort is how many of the frames 0..n-1, sent round-robin over
// ports, went to port index i.
func framesToPort(n uint64, i, ports int) uint64 {
	p, k := uint64(ports), uint64(i)
	if n <= k {
		return 0
	}
	return (n-k-1)/p + 1
}

// sleep sleeps for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pinThread binds the calling thread, which the caller has locked, to
// cpu; restore gives it its old CPU set back. If that fails the thread is
// locked once more, so that it dies with its goroutine rather than run other
// goroutines on one CPU.
func pinThread(cpu int) (restore func(), err error) {
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, err
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return nil, err
	}
	return func() {
		if unix.SchedSetaffinity(0, &old) != nil {
			runtime.LockOSThread()
		}
	}, nil
}
