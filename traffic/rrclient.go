package traffic

import (
	"fmt"
	"net/netip"

	"linerate/internal/usage"
	"linerate/results"
	"linerate/traffic/rr"
	"linerate/traffic/session"
	"linerate/traffic/tcp"
	"linerate/wire"
)

// checkRR checks a transaction test before any connection; it has no send
// engine to choose (the result names the socket engine).
func (c *Config) checkRR() (wire.Spec, *udpEngine, error) {
	sp := c.Spec
	rr := *sp.RR
	if rr.Timeout == 0 {
		rr.Timeout = wire.Seconds(wire.DefaultRRTimeout)
	}
	sp.RR = &rr
	if c.Engine != "" && c.Engine != "auto" && c.Engine != udpEngines[0].name {
		return wire.Spec{}, nil, usage.Field("Engine", "%s: a transaction test sends with sockets", c.Engine)
	}
	c.Engine = udpEngines[0].name
	if err := sp.Check(); err != nil {
		return wire.Spec{}, nil, usage.Wrap(err)
	}
	if err := c.setup(func() error { return tcp.CheckCongestion(sp.Congestion) }); err != nil {
		return wire.Spec{}, nil, err
	}
	return sp, udpEngines[0], nil
}

// openRR makes this target's transaction streams toward its data port.
func (t *target) openRR(r *clientRun) error {
	sp := &t.spec
	port := t.acc.TCPPort
	if sp.Proto == wire.UDP {
		if len(t.acc.UDPPorts) != 1 {
			return fmt.Errorf("%s: %w: %d transaction ports", t.name, wire.ErrProtocol, len(t.acc.UDPPorts))
		}
		port = t.acc.UDPPorts[0]
	}
	if port == 0 {
		return fmt.Errorf("%s: %w: no transaction port", t.name, wire.ErrProtocol)
	}
	cookie, err := wire.ParseCookie(t.acc.Cookie)
	if err != nil {
		return err
	}
	c, err := rr.NewClient(sp, t.local, netip.AddrPortFrom(t.addr.Addr(), port), cookie, r.cfg.setup)
	if err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	t.rr = c
	t.fwd = append(t.fwd, share{e: r.sess.Add(session.Sending, t.name, c)})
	return nil
}

// assembleRR puts together a transaction test: per target what the
// server answered and its samples, then the transactions, their latency
// and failures over every target's streams.
func (r *clientRun) assembleRR(res *results.Result) {
	rr := &results.RR{Seconds: r.sess.Seconds()}
	var all results.Histogram
	for i, t := range r.targets {
		tr := &res.Targets[i]
		tr.Target, tr.Address, tr.Local, tr.ServerID = t.name, t.addr.String(), t.local.String(), t.serverID
		sr, errs, _ := t.serverResult()
		tr.Errors = append(append(tr.Errors, errs...), sr.Errors...)
		tr.Machine = sr.Machine
		for _, c := range sr.Received {
			rr.Answered += c.Packets
		}
		if sr.RR != nil {
			rr.Connections += sr.RR.Connections
		}
		for _, s := range sr.Samples {
			res.Samples = append(res.Samples, results.Sample{Side: results.SideServer, Target: i, Rates: s})
		}
		if sr.SampleError != "" {
			tr.Notes = append(tr.Notes, "server samples: "+sr.SampleError)
		}
		if t.rr != nil {
			t.rr.Tally(rr, &all)
		}
	}
	if rr.Seconds > 0 {
		rr.TPS = float64(rr.Transactions) / rr.Seconds
	}
	rr.Latency = all.Latency()
	res.RR = rr
	r.linkEvents(res)
	results.OrderSamples(res.Samples)
}
