package tcp

import (
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"linerate/results"
	"linerate/traffic/session"
)

// TCP streams are moved by loops, as iperf3 (up to 3.15) moves all of its
// streams in one: a locked OS thread per loop, each serving its share of
// the streams with non-blocking reads or writes in turn and waiting in
// poll(2) only when every one of them would block. Loops are faster than
// a goroutine per stream when both ends share the CPUs (goroutines spread
// over every CPU and wake each other across them: docs/benchmarks.md,
// "TCP: why loops"). An end runs a loop per stream up to the CPUs it may
// run on: with the senders' unsent bytes bounded (tcpNotSentLowat) a loop
// per CPU moved more than one loop for several streams
// (docs/benchmarks.md, "Unsent bytes bounded, a loop per CPU"); past the
// CPUs, more loops only take turns on them, and the total fell
// (docs/benchmarks.md, "Loops past the CPUs").
//
// tcpStreamsPerLoop bounds the streams whose reads size a loop's read
// buffer (readSize).
const tcpStreamsPerLoop = 4

// loopCount is how many loops move streams streams on an end that may run
// on cpus CPUs: one per stream but no more than the CPUs, at least
// threads (--threads asks for them), never more than the streams.
func loopCount(streams, threads, cpus int) int {
	n := max(threads, min(streams, cpus))
	return max(1, min(n, streams))
}

// stepResult is what one turn of a loop did for one stream.
type stepResult int

const (
	stepMoved   stepResult = iota // bytes moved: try again next turn
	stepBlocked                   // the socket would block: poll it
	stepIdle                      // nothing to do until a time (pacing)
	stepDone                      // the stream is over: drop it
)

// tcpLoop is one loop's streams and its way to be woken.
type tcpLoop struct {
	streams []int             // stream indexes this loop serves
	wake    int               // eventfd: written to make the loop look again
	events  int16             // POLLIN or POLLOUT
	ops     []*connOp         // per stream, the raw syscall it runs (and its socket)
	usage   results.ThreadCPU // how busy the loop's thread was, once run returned
	ran     bool
}

func newTCPLoop(events int16) (*tcpLoop, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, err
	}
	return &tcpLoop{wake: fd, events: events}, nil
}

// poke wakes the loop from its poll.
func (l *tcpLoop) poke() {
	one := [8]byte{1}
	_, _ = unix.Write(l.wake, one[:])
}

func (l *tcpLoop) close() { _ = unix.Close(l.wake) }

// run calls step(k, i) for each live stream i (k its place in the loop)
// that may move bytes, in turn, until every stream is done. A stream whose
// socket would block is not called again until poll(2) says it is ready:
// while others move bytes, one poll that does not wait asks about all of
// the blocked ones (instead of a failed read or write on each, every
// turn); when none moved, the loop waits in poll for a blocked socket to
// become ready, for a poke, or until the earliest of the idle streams'
// times and bound() (the loop's next deadline), whichever comes first. A
// poke or a deadline makes every stream be called again (to see that the
// run is over).
func (l *tcpLoop) run(role string, step func(k, i int) (stepResult, time.Duration), bound func() time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0, cpu0, pre0 := time.Now(), session.ThreadUsage(), session.Preemptions()
	defer func() {
		cpu, wall := session.ThreadUsage()-cpu0, time.Since(t0)
		l.usage = results.ThreadCPU{Role: role, CPU: -1, Seconds: cpu.Seconds(), Preempted: session.Preemptions() - pre0}
		if wall > 0 {
			l.usage.Busy = min(1, cpu.Seconds()/wall.Seconds())
		}
		l.ran = true
	}()
	live := make([]bool, len(l.streams))
	blocked := make([]bool, len(l.streams))
	left := len(l.streams)
	for k := range live {
		live[k] = true
	}
	pfd := make([]unix.PollFd, 0, len(l.streams)+1)
	at := make([]int, 0, len(l.streams)) // the stream of each pfd but the last
	var drain [8]byte
	all := func() {
		for k := range blocked {
			blocked[k] = false
		}
	}
	for left > 0 {
		moved := false
		wait := time.Duration(-1)
		for k, i := range l.streams {
			if !live[k] || blocked[k] {
				continue
			}
			switch r, d := step(k, i); r {
			case stepMoved:
				moved = true
			case stepBlocked:
				blocked[k] = true
			case stepIdle:
				if wait < 0 || d < wait {
					wait = d
				}
			case stepDone:
				live[k] = false
				left--
			}
		}
		if left == 0 {
			break
		}
		ms := 0
		if !moved {
			if b := bound(); wait < 0 || b < wait {
				wait = b
			}
			if wait <= 0 {
				all()
				continue
			}
			ms = int((wait + time.Millisecond - 1) / time.Millisecond)
		}
		pfd, at = pfd[:0], at[:0]
		for k := range l.streams {
			if live[k] && blocked[k] {
				pfd = append(pfd, unix.PollFd{Fd: int32(l.ops[k].sock.fd), Events: l.events})
				at = append(at, k)
			}
		}
		if moved && len(pfd) == 0 {
			continue
		}
		pfd = append(pfd, unix.PollFd{Fd: int32(l.wake), Events: unix.POLLIN})
		n, err := unix.Poll(pfd, ms)
		switch {
		case err != nil || n == 0 && ms > 0:
			// Interrupted, or waited until the deadline: look at all.
			all()
		case pfd[len(pfd)-1].Revents != 0:
			_, _ = unix.Read(l.wake, drain[:])
			all()
		default:
			for j, k := range at {
				if pfd[j].Revents != 0 {
					blocked[k] = false
				}
			}
		}
	}
}

// connOp runs one read, write or sendfile on a connection's descriptor
// while holding it (a close meanwhile cannot hand the number to another
// file), as a raw system call: the socket does not block and the loop's
// thread is its own, so the runtime need not know.
type connOp struct {
	sock  *tcpSock
	trap  uintptr // SYS_READ, SYS_WRITE or SYS_SENDFILE
	buf   []byte  // read into or written from (read and write)
	file  int     // sendfile's source
	size  int     // bytes per call
	n     int
	errno syscall.Errno
	fn    func(uintptr) // do, bound once: no allocation per call
}

func newConnOp(sock *tcpSock) *connOp {
	op := &connOp{sock: sock}
	op.fn = op.do
	return op
}

func (op *connOp) do(fd uintptr) {
	var r uintptr
	switch op.trap {
	case unix.SYS_SENDFILE:
		var off int64
		r, _, op.errno = syscall.RawSyscall6(unix.SYS_SENDFILE, fd, uintptr(op.file), uintptr(unsafe.Pointer(&off)), uintptr(op.size), 0, 0)
	default:
		r, _, op.errno = syscall.RawSyscall(op.trap, fd, uintptr(unsafe.Pointer(&op.buf[0])), uintptr(op.size))
	}
	if op.errno == 0 {
		op.n = int(r)
	} else {
		op.n = 0
	}
}

// call runs the operation once: the bytes moved, whether the socket
// would block, and any other error (net.ErrClosed when the connection was
// closed).
func (op *connOp) call() (n int, blocked bool, err error) {
	if err := op.sock.do(op.fn); err != nil {
		return 0, false, err
	}
	switch op.errno {
	case 0:
		return op.n, false, nil
	case syscall.EAGAIN, syscall.EINTR:
		return 0, true, nil
	default:
		return 0, false, op.errno
	}
}

// loopSet is a flow's loops and their lifetime: end waits for the running
// ones, so that a close never pulls a socket or an eventfd from under a
// loop.
type loopSet struct {
	loops  []*tcpLoop
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// spread deals the connections to loopCount loops, round robin.
func (s *loopSet) spread(conns []*tcpSock, threads int, events int16) error {
	s.loops = make([]*tcpLoop, 0, loopCount(len(conns), threads, runtime.NumCPU()))
	for range cap(s.loops) {
		l, err := newTCPLoop(events)
		if err != nil {
			s.release()
			return fmt.Errorf("eventfd: %w", err)
		}
		s.loops = append(s.loops, l)
	}
	for i, c := range conns {
		l := s.loops[i%len(s.loops)]
		l.streams = append(l.streams, i)
		l.ops = append(l.ops, newConnOp(c))
	}
	return nil
}

// each runs fn for every loop, each in a goroutine, and waits for them;
// after end it runs nothing.
func (s *loopSet) each(fn func(*tcpLoop)) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.wg.Add(len(s.loops))
	s.mu.Unlock()
	for _, l := range s.loops {
		go func() {
			defer s.wg.Done()
			fn(l)
		}()
	}
	s.wg.Wait()
}

// threads is how busy the loops' threads were (those that ran).
func (s *loopSet) threads() []results.ThreadCPU {
	var out []results.ThreadCPU
	for _, l := range s.loops {
		if l.ran {
			out = append(out, l.usage)
		}
	}
	return out
}

// poke wakes every loop from its poll.
func (s *loopSet) poke() {
	for _, l := range s.loops {
		l.poke()
	}
}

// end waits for the running loops (whoever calls it has told them to
// stop) and releases them.
func (s *loopSet) end() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.poke()
	s.wg.Wait()
	s.release()
}

func (s *loopSet) release() {
	for _, l := range s.loops {
		l.close()
	}
	s.loops = nil
}
