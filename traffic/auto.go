package traffic

import (
	"strings"

	"linerate/internal/usage"
	"linerate/wire"
)

// autoEngine picks, per test, the fastest engine that can run it.
var autoEngine = &udpEngine{name: autoName, fits: func(*wire.Spec) error { return nil }, open: openAutoEngine}

// udpEngines are the engines --engine names; the first is the default.
var udpEngines = []*udpEngine{socketEngine, ringEngine, xdpEngine, autoEngine}

// openAutoEngine runs the fastest engine that can do the test, in the
// order of the packet rates docs/benchmarks.md measures: AF_XDP when it
// applies, else the ring, else the socket engine. The result's engine
// names the one that ran, and a note says why.
func openAutoEngine(r *clientRun, to []*target) error {
	whyNotXDP := xdpWhyNot(r, to)
	if whyNotXDP == "" {
		r.cfg.Engine = xdpEngine.name
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
		r.cfg.Engine = socketEngine.name
		r.notes = append(r.notes, "--engine auto ran the socket engine: "+why)
		return openSocketEngine(r, to)
	}
	r.cfg.Engine = ringEngine.name
	r.notes = append(r.notes, "--engine auto ran the ring (AF_PACKET TX_RING): IPv4 from the client, on a direct route, as root; not AF_XDP: "+whyNotXDP)
	return openEach(r, to, (*target).openRing)
}

// engineNamed is the engine called name ("": the default).
func engineNamed(name string) (*udpEngine, error) {
	if name == "" {
		return socketEngine, nil
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
