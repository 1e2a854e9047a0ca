package admit

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// Pauses between accepts that failed for a passing reason: they double
// from the first to the last, as net/http's Server does.
const (
	firstPause = 5 * time.Millisecond
	lastPause  = time.Second
)

// Passing says err is a failure of accept that passes: descriptors ran
// out (EMFILE for the process, ENFILE for the system), the kernel's
// memory for a socket did (ENOBUFS, ENOMEM), or a deadline.
func Passing(err error) bool {
	var ne net.Error
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) ||
		errors.As(err, &ne) && ne.Timeout()
}

// Accept waits for the next connection on ln and survives failures that
// pass: after each, shed (when set) is asked to give up an idle
// connection so that its descriptor frees, note (when set) is told of
// the failure and the pause, and Accept tries again after the pause,
// which doubles from 5 ms to 1 s. stop ends a pause (the listener is
// closing); any other failure is returned.
func Accept(ln net.Listener, stop <-chan struct{}, shed func() bool, note func(err error, pause time.Duration)) (net.Conn, error) {
	var pause time.Duration
	for {
		c, err := ln.Accept()
		if err == nil || !Passing(err) {
			return c, err
		}
		if shed != nil {
			shed()
		}
		pause = min(max(2*pause, firstPause), lastPause)
		if note != nil {
			note(err, pause)
		}
		select {
		case <-stop:
			return nil, err
		case <-time.After(pause):
		}
	}
}
