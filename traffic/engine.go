package traffic

import (
	"linerate/traffic/session"
	"linerate/traffic/sock"
	"linerate/traffic/udp"
	"linerate/wire"
)

// udpEngine is one way for the client to send UDP (--engine). An engine
// is a sending flow type and an entry in udpEngines (auto.go): open makes
// the flows for the targets the client sends to and adds them to the
// run's session, each target's share of them in the target's fwd. An
// engine is known by its value (socketEngine, ringEngine, xdpEngine,
// autoEngine), its name only read from and written for people.
type udpEngine struct {
	name string // as --engine takes it and a result records it
	// fits says why the engine cannot run the test asked for, as a usage
	// error, or nil. Per-target limits (an address family) are open's.
	fits func(sp *wire.Spec) error
	open func(r *clientRun, to []*target) error
}

// The engines' names.
const (
	socketName = "socket"
	ringName   = "ring"
	xdpName    = "xdp"
	autoName   = "auto"
)

// socketEngine sends through UDP sockets with sendmmsg: the default, and
// the one engine for every test.
var socketEngine = &udpEngine{name: socketName, fits: func(*wire.Spec) error { return nil }, open: openSocketEngine}

// openSocketEngine makes one sendmmsg sender for every target at once: its
// threads share the targets' sockets, and each target gets the asked rate.
func openSocketEngine(r *clientRun, to []*target) error {
	var fds []int
	var streams []uint16
	type span struct {
		t       *target
		from, n int
	}
	var spans []span
	for _, t := range to {
		f, err := t.openUDP(r.cfg)
		if err != nil {
			sock.CloseFDs(fds)
			return err
		}
		spans = append(spans, span{t, len(fds), len(f)})
		fds = append(fds, f...)
		for i := range f {
			streams = append(streams, uint16(i))
		}
	}
	sp := &r.spec
	pps := sp.UDPPacketsPerSecond(r.overhead) * float64(len(r.targets))
	e := r.sess.Add(session.Sending, "", udp.NewSender(udp.SenderConfig{FDs: fds, Streams: streams, Payload: sp.Payload, Sizes: sp.Sizes, PPS: pps, Threads: sp.Threads, CPUs: r.cfg.CPUs}))
	for _, s := range spans {
		s.t.fwd = append(s.t.fwd, share{e: e, from: s.from, n: s.n})
	}
	return nil
}
