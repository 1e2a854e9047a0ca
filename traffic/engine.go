package traffic

import (
	"strings"

	"linerate/internal/usage"
	"linerate/traffic/session"
	"linerate/traffic/sock"
	"linerate/traffic/udp"
	"linerate/wire"
)

// udpEngine is one way for the client to send UDP (--engine). An engine
// is a sending flow type and an entry in udpEngines: open makes the flows
// for the targets the client sends to and adds them to the run's session,
// each target's share of them in the target's fwd.
type udpEngine struct {
	name string
	// fits says why the engine cannot run the test asked for, as a usage
	// error, or nil. Per-target limits (an address family) are open's.
	fits func(sp *wire.Spec) error
	open func(r *clientRun, to []*target) error
}

// udpEngines are the engines --engine names; the first is the default.
var udpEngines = []*udpEngine{
	{name: "socket", fits: func(*wire.Spec) error { return nil }, open: openSocketEngine},
	{name: "ring", fits: ringFits, open: belowQdiscs((*target).openRing)},
	{name: "xdp", fits: xdpFits, open: belowQdiscs((*target).openXDP)},
	{name: "auto", fits: func(*wire.Spec) error { return nil }, open: openAutoEngine},
}

// openAutoEngine runs the fastest engine that can do the test, in the
// order of the packet rates docs/benchmarks.md measures: AF_XDP when it
// applies, else the ring, else the socket engine. The result's engine
// names the one that ran, and a note says why.
func openAutoEngine(r *clientRun, to []*target) error {
	whyNotXDP := xdpWhyNot(r, to)
	if whyNotXDP == "" {
		r.cfg.Engine = "xdp"
		opened := func() (n int) {
			for _, t := range to {
				n += len(t.fwd)
			}
			return n
		}
		before := opened()
		err := openEach(r, to, (*target).openXDP)
		if err == nil {
			r.notes = append(r.notes, "--engine auto ran AF_XDP: IPv4 from the client, on a direct route, as root")
			return nil
		}
		if opened() != before || usage.Is(err) {
			return err // a sender already runs: no falling back halfway
		}
		// The ring fits wherever AF_XDP does: a first socket AF_XDP could
		// not bind (another program's on the queue) costs speed, not the
		// test.
		whyNotXDP = "it could not start: " + err.Error()
	}
	if why := ringWhyNot(r, to); why != "" {
		r.cfg.Engine = "socket"
		r.notes = append(r.notes, "--engine auto ran the socket engine: "+why)
		return openSocketEngine(r, to)
	}
	r.cfg.Engine = "ring"
	r.notes = append(r.notes, "--engine auto ran the ring (AF_PACKET TX_RING): IPv4 from the client, on a direct route, as root; not AF_XDP: "+whyNotXDP)
	return openEach(r, to, (*target).openRing)
}

// belowQdiscs is an engine asked for by name that sends below the qdiscs
// (--engine ring, xdp): open makes its senders of each target, and a note
// names the configured qdiscs they bypass.
func belowQdiscs(open func(*target, *clientRun) error) func(*clientRun, []*target) error {
	return func(r *clientRun, to []*target) error {
		if err := openEach(r, to, open); err != nil {
			return err
		}
		warnBypass(r, to)
		return nil
	}
}

// openEach makes, with open, the senders of each target in turn.
func openEach(r *clientRun, to []*target, open func(*target, *clientRun) error) error {
	for _, t := range to {
		if err := open(t, r); err != nil {
			return err
		}
	}
	return nil
}

// engineNamed is the engine called name ("": the default).
func engineNamed(name string) (*udpEngine, error) {
	if name == "" {
		return udpEngines[0], nil
	}
	var names []string
	for _, e := range udpEngines {
		if e.name == name {
			return e, nil
		}
		names = append(names, e.name)
	}
	return nil, usage.Field("Engine", "%q: want %s", name, strings.Join(names, " or "))
}

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
