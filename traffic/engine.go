package traffic

import (
	"strings"

	"linerate/internal/usage"
)

// udpEngine is one way for the client to send UDP (--engine). An engine
// is a sending flow type and an entry in udpEngines: open makes the flows
// for the targets the client sends to and adds them to the run's session,
// each target's share of them in the target's fwd.
type udpEngine struct {
	name string
	// fits says why the engine cannot run the test asked for, as a usage
	// error, or nil. Per-target limits (an address family) are open's.
	fits func(sp *Spec) error
	open func(r *clientRun, to []*target) error
}

// udpEngines are the engines --engine names; the first is the default.
var udpEngines = []*udpEngine{
	{name: "socket", fits: func(*Spec) error { return nil }, open: openSocketEngine},
	{name: "ring", fits: ringFits, open: openRingEngine},
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
	return nil, usage.Errorf("--engine %q: want %s", name, strings.Join(names, " or "))
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
			closeFDs(fds)
			return err
		}
		spans = append(spans, span{t, len(fds), len(f)})
		fds = append(fds, f...)
		for i := range f {
			streams = append(streams, uint16(i))
		}
	}
	sp := &r.spec
	pps := sp.Rate.PacketsPerSecond(sp.Payload+r.overhead) * float64(len(r.targets))
	e := r.sess.add(sending, "", newUDPSender(udpSenderConfig{fds: fds, streams: streams, payload: sp.Payload, pps: pps, threads: sp.Threads, cpus: r.cfg.CPUs}))
	for _, s := range spans {
		s.t.fwd = append(s.t.fwd, share{e: e, from: s.from, n: s.n})
	}
	return nil
}

// ringFits: the ring sends UDP from the client only.
func ringFits(sp *Spec) error {
	if sp.Proto != "udp" || sp.Direction != Forward {
		return usage.Errorf("--engine ring sends UDP from the client only: not with %s %s", sp.Proto, sp.Direction)
	}
	return nil
}

// openRingEngine makes the ring senders of each target.
func openRingEngine(r *clientRun, to []*target) error {
	for _, t := range to {
		if err := t.openRing(r); err != nil {
			return err
		}
	}
	return nil
}
