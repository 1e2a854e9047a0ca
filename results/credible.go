package results

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// A peer's figures (an iperf3 server's results, a linerate agent's) are
// believed only once they agree with what this end counted and with what
// a host can do at all (docs/security.md, "Numbers from peers"). Figures
// that fail are kept as the peer sent them, never clamped: the target is
// marked (TargetResult.NotCredible, with the reasons) and the run fails
// with ErrNotCredible.

// ErrNotCredible is wrapped by the error of a run whose peer reported
// figures that fail the checks.
var ErrNotCredible = errors.New("the peer's figures are not credible")

// Bounds of physics, far beyond any host, so that only a figure no host
// could produce fails them.
const (
	// MaxHostBPS is more bits per second than one host moves through its
	// sockets: every byte a socket sends or receives is copied through
	// memory at least once, and this is more than any memory copies.
	MaxHostBPS = 1e14
	// MaxHostPPS is MaxHostBPS in the smallest Ethernet frames (64
	// bytes, and the preamble and gap of 20 more on the wire).
	MaxHostPPS = MaxHostBPS / (84 * 8)
	// MaxCPUs is the most CPUs a Linux kernel runs on (NR_CPUS with
	// MAXSMP): no process uses more than this many CPUs' time.
	MaxCPUs = 8192
)

// Doubts collects why a peer's figures are not credible, one sentence
// each; empty when they pass.
type Doubts []string

// Addf adds a reason.
func (d *Doubts) Addf(format string, args ...any) { *d = append(*d, fmt.Sprintf(format, args...)) }

// MostReceived is the most a receiver can count of what its sender
// counted: everything sent in the measured window, what was sent in the
// warmup before it (bytes queued at the window's start are read in it;
// 0 where the receiver tells warmup datagrams apart), a hundredth more
// for datagrams the path duplicated, and 64 for counts of one.
func MostReceived(sent, warmup uint64) uint64 {
	return sent + warmup + sent/100 + 64
}

// Received checks a receiver's count (what, its unit: "bytes") against
// its sender's: received more than MostReceived allows is not credible.
func (d *Doubts) Received(who, what string, received, sent, warmup uint64) {
	if most := MostReceived(sent, warmup); received > most {
		d.Addf("%s received %d %s of %d sent (%d in the warmup): more than the sender sent", who, received, what, sent, warmup)
	}
}

// Sent checks a sender's count against the receiver's (this end's):
// a sender that says it sent less than was received is not credible.
func (d *Doubts) Sent(who, what string, sent, warmup, received uint64) {
	if received > MostReceived(sent, warmup) {
		d.Addf("%s sent %d %s (%d in the warmup), and %d were received: less than arrived", who, sent, what, warmup, received)
	}
}

// Rate checks that bytes and packets (0: not counted) in seconds are
// within what a host can move.
func (d *Doubts) Rate(who string, bytes, packets uint64, seconds float64) {
	if !(seconds > 0) || math.IsInf(seconds, 0) {
		return // no window to judge by: Seconds checks it where it is the peer's
	}
	if bps := float64(bytes) * 8 / seconds; bps > MaxHostBPS {
		d.Addf("%s: %d bytes in %.3g s is %.3g b/s, more than a host moves (%.3g)", who, bytes, seconds, bps, float64(MaxHostBPS))
	}
	if pps := float64(packets) / seconds; pps > MaxHostPPS {
		d.Addf("%s: %d packets in %.3g s is %.3g packets/s, more than a host moves (%.3g)", who, packets, seconds, pps, float64(MaxHostPPS))
	}
}

// Percent checks a percentage (what names it) is a number from 0 to max;
// a share (0 to 1, max 1) likewise. Sums of shares (100 less idle and
// iowait) round to a hair beyond their bounds, which is let through.
func (d *Doubts) Percent(what string, v, max float64) {
	const hair = 1e-9
	if !(v >= -hair && v <= max+hair) {
		d.Addf("%s %v: want 0 to %v", what, v, max)
	}
}

// Seconds checks a window a peer measured against this end's (want): a
// number from half of it to twice it and a second.
func (d *Doubts) Seconds(what string, v, want float64) {
	if !(v >= want/2 && v <= 2*want+1) {
		d.Addf("%s %v s: this end measured %.3g s", what, v, want)
	}
}

// Mark keeps the doubts on the target and returns the run's error, nil
// when there are none.
func (d Doubts) Mark(tr *TargetResult) error {
	if len(d) == 0 {
		return nil
	}
	tr.NotCredible = append(tr.NotCredible, d...)
	return fmt.Errorf("%w: %s", ErrNotCredible, strings.Join(d, "; "))
}
