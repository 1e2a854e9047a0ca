package plan

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"linerate/ceiling"
	"linerate/results"
	"linerate/wire"
)

// settings are what a flow may take from defaults: each value given, and
// the node that gave it (for errors at its line).
type settings struct {
	proto, direction, engine                    string
	rate                                        wire.Rate
	size, payload, streams, ports, threads, mss int
	flows                                       int
	dscp                                        int
	copy                                        bool
	rr                                          *wire.RR
	at                                          map[string]*yaml.Node
}

func (s *settings) clone() *settings {
	c := *s
	c.at = maps.Clone(s.at)
	return &c
}

// settings reads the keys of fs into s, over what s holds.
func (p *parser) settings(fs []*field, s *settings) error {
	for _, f := range fs {
		var err error
		switch f.key {
		case "proto":
			s.proto, err = p.oneOf(f.v, "proto", "udp", "tcp")
		case "direction":
			s.direction, err = p.oneOf(f.v, "direction", string(wire.Forward), string(wire.Reverse), string(wire.Bidir))
		case "engine":
			s.engine, err = p.oneOf(f.v, "engine", string(results.EngineAuto), string(results.EngineSocket), string(results.EngineRing), string(results.EngineXDP))
		case "copy":
			s.copy, err = p.boolean(f.v, "copy")
		case "dscp":
			var v string
			if v, err = p.scalar(f.v, "dscp"); err == nil {
				if s.dscp, err = wire.ParseDSCP(v); err != nil {
					err = p.errorf(f.v, "%v", err)
				}
			}
		case "rr":
			s.rr, err = p.rr(f.v)
		case "rate":
			var v string
			if v, err = p.scalar(f.v, "rate"); err == nil {
				if s.rate, err = wire.ParseRate(v); err != nil {
					err = p.errorf(f.v, "%v", err)
				}
			}
		default:
			err = p.count(f, s)
		}
		if err != nil {
			return err
		}
		s.at[f.key] = f.v
	}
	return nil
}

// count reads one of the whole-number settings; the upper limits are the
// agents' (wire.Spec.Check, run on every flow).
func (p *parser) count(f *field, s *settings) error {
	v, err := p.integer(f.v, f.key)
	if err != nil {
		return err
	}
	low, ptr := 1, (*int)(nil)
	switch f.key {
	case "size":
		low, ptr = ceiling.MinFrameBytes, &s.size
	case "payload":
		low, ptr = 0, &s.payload
	case "streams":
		ptr = &s.streams
	case "flows":
		ptr = &s.flows
	case "ports":
		ptr = &s.ports
	case "threads":
		ptr = &s.threads
	case "mss":
		low, ptr = 88, &s.mss // the kernel's TCP_MIN_MSS (include/net/tcp.h)
	}
	if v < low {
		return p.errorf(f.v, "%s %d: want at least %d", f.key, v, low)
	}
	*ptr = v
	return nil
}

func (p *parser) oneOf(n *yaml.Node, what string, allowed ...string) (string, error) {
	s, err := p.scalar(n, what)
	if err != nil {
		return "", err
	}
	if !slices.Contains(allowed, s) {
		return "", p.errorf(n, "%s %q: want %s", what, s, orList(allowed))
	}
	return s, nil
}

func orList(s []string) string {
	switch len(s) {
	case 1:
		return s[0]
	case 2:
		return s[0] + " or " + s[1]
	}
	out := ""
	for i, w := range s {
		switch {
		case i == len(s)-1:
			out += " or " + w
		case i > 0:
			out += ", " + w
		default:
			out = w
		}
	}
	return out
}

func (p *parser) flows(f *field, defaults *settings, pl *Plan) error {
	n := f.v
	if n.Kind != yaml.SequenceNode {
		return p.errorf(n, "flows: want a list of flows (- {from: pi1, to: cm4, proto: tcp}), not %s", kindOf(n))
	}
	if len(n.Content) == 0 {
		return p.errorf(n, "flows: none given")
	}
	for i, c := range n.Content {
		if err := p.flow(i+1, resolve(c), defaults, pl); err != nil {
			return err
		}
	}
	return nil
}

// flow reads flow number idx and adds it to pl, once per address.
func (p *parser) flow(idx int, n *yaml.Node, defaults *settings, pl *Plan) error {
	what := fmt.Sprintf("flow %d", idx)
	fs, err := p.mapping(n, what, flowKeys)
	if err != nil {
		return err
	}
	s := defaults.clone()
	var (
		ends      [2]string
		endNodes  [2]*yaml.Node
		addrs     []string
		addrNodes []*yaml.Node
		own       []*field
		name      string
		nameNode  *yaml.Node
	)
	for _, ff := range fs {
		switch ff.key {
		case "from", "to":
			i := 0
			if ff.key == "to" {
				i = 1
			}
			if ends[i], err = p.scalar(ff.v, what+": "+ff.key); err != nil {
				return err
			}
			endNodes[i] = ff.v
		case "address":
			items := []*yaml.Node{ff.v}
			if ff.v.Kind == yaml.SequenceNode {
				items = ff.v.Content
				if len(items) == 0 {
					return p.errorf(ff.v, "%s: address: an empty list", what)
				}
			}
			for _, a := range items {
				a = resolve(a)
				s, err := p.address(a, what+": address")
				if err != nil {
					return err
				}
				if slices.Contains(addrs, s) {
					return p.errorf(a, "%s: address %s given twice", what, s)
				}
				addrs, addrNodes = append(addrs, s), append(addrNodes, a)
			}
		case "name":
			if name, err = p.scalar(ff.v, what+": name"); err != nil {
				return err
			}
			if !hostNameRE.MatchString(name) {
				return p.errorf(ff.v, "%s: name %q: want letters, digits, '.', '-' and '_' (at most 63)", what, name)
			}
			nameNode = ff.v
		default:
			own = append(own, ff)
		}
	}
	if err := p.settings(own, s); err != nil {
		return err
	}
	for i, key := range []string{"from", "to"} {
		if endNodes[i] == nil {
			return p.errorf(n, "%s: no %s: name the %s host", what, key, map[string]string{"from": "sending", "to": "receiving"}[key])
		}
		if err := p.knownHost(endNodes[i], pl, what+": "+key, ends[i]); err != nil {
			return err
		}
	}
	if ends[0] == ends[1] && !pl.Host(ends[0]).Discovered() {
		return p.errorf(endNodes[1], "%s: from and to are both %s: a flow runs between two hosts", what, ends[0])
	}
	if to := pl.Host(ends[1]); to.Discovered() && len(addrs) > 0 {
		return p.errorf(addrNodes[0], "%s: address: %s is %s, whose agents are each reached at their own address", what, to.Name, to.Reach)
	}
	if s.proto == "" && s.rr != nil {
		s.proto = string(wire.TCP)
	}
	if s.proto == "" {
		return p.errorf(n, "%s: no proto: give udp or tcp (here or under defaults)", what)
	}
	if nameNode != nil && pl.named(name) {
		return p.errorf(nameNode, "%s: name %s given to another flow already", what, name)
	}
	if name == "" {
		name = ends[0] + "-" + ends[1]
		if pl.named(name) {
			name = fmt.Sprintf("%s.%d", name, idx)
		}
	}
	fl := Flow{Index: idx, Line: n.Line, Name: name, From: ends[0], To: ends[1], Proto: wire.Proto(s.proto),
		Direction: cmp.Or(wire.Direction(s.direction), wire.Forward), Rate: s.rate,
		Streams: cmp.Or(s.streams, 1), Threads: cmp.Or(s.threads, 1), Ports: 1, MTU: defaultMTU, DSCP: s.dscp}
	if err := p.protoSettings(what, s, defaults, &fl); err != nil {
		return err
	}
	to := pl.Host(fl.To)
	if len(addrs) == 0 {
		addrs = []string{to.DataAddress()}
		addrNodes = []*yaml.Node{n}
	}
	for i, a := range addrs {
		if len(pl.Flows) == maxFlows {
			return p.errorf(addrNodes[i], "%s: more than %d flows in the plan", what, maxFlows)
		}
		f := fl
		f.Address = a
		if pt := to.Port(a); pt != nil {
			f.Port, f.SpeedBps, f.MTU = pt.Name, pt.SpeedBps, pt.MTU
		} else if len(to.Ports) > 0 {
			return p.errorf(addrNodes[i], "%s: %s has no port with address %s (its ports: %s)", what, to.Name, a, portList(to))
		}
		pl.Flows = append(pl.Flows, f)
	}
	return nil
}

func portList(h *Host) string {
	var s []string
	for _, pt := range h.Ports {
		s = append(s, pt.Name+" "+strings.Join(pt.Addresses, " "))
	}
	return strings.Join(s, ", ")
}

// protoSettings fills what depends on the protocol and refuses keys that
// do not apply to it: a key for the other protocol in the flow itself is a
// mistake; under defaults it is meant for the flows of that protocol.
func (p *parser) protoSettings(what string, s, defaults *settings, fl *Flow) error {
	refuse := func(key, why string) error {
		if n := s.at[key]; n != nil && n != defaults.at[key] {
			return p.errorf(n, "%s: %s", what, why)
		}
		delete(s.at, key)
		return nil
	}
	if s.rr != nil {
		return p.rrSettings(what, s, defaults, refuse, fl)
	}
	if fl.Proto == wire.TCP {
		for _, r := range [][2]string{
			{"size", "size is a udp frame size: a tcp flow takes mss (the segment) or payload (the bytes of each write)"},
			{"ports", "ports spreads udp flows over destination ports: a tcp flow takes streams (connections)"},
			{"flows", "flows spreads udp over source ports: a tcp flow takes streams (connections)"},
			{"engine", "engine is the udp send engine: a tcp flow has none to choose"},
		} {
			if err := refuse(r[0], r[1]); err != nil {
				return err
			}
		}
		fl.Payload, fl.MSS, fl.Copy = s.payload, s.mss, s.copy
		return nil
	}
	if err := refuse("mss", "mss is a tcp segment size: a udp flow sets its packets with size (the frame) or payload"); err != nil {
		return err
	}
	if err := refuse("copy", "copy says how a tcp flow writes (from user memory instead of sendfile): a udp flow has no such choice"); err != nil {
		return err
	}
	if s.at["size"] != nil && s.at["payload"] != nil {
		ownSize, ownPayload := s.at["size"] != defaults.at["size"], s.at["payload"] != defaults.at["payload"]
		switch {
		case ownSize == ownPayload:
			return p.errorf(s.at["payload"], "%s: size and payload: give one", what)
		case ownSize: // the flow's own size wins over a default payload
			delete(s.at, "payload")
			s.payload = 0
		default:
			delete(s.at, "size")
			s.size = 0
		}
	}
	fl.Size, fl.Payload = s.size, s.payload
	if fl.Size == 0 && s.at["payload"] == nil {
		fl.Payload = defaultUDPPayload
	}
	fl.Ports = cmp.Or(s.ports, fl.Threads)
	if err := p.udpFlows(what, s, defaults, fl); err != nil {
		return err
	}
	fl.Engine = cmp.Or(results.Engine(s.engine), results.EngineAuto)
	if fl.Engine.BelowSocket() && fl.Direction != wire.Forward {
		return p.errorf(s.at["engine"], "%s: engine %s sends forward only (from the sending host's interface): direction %s needs the socket engine (or auto)", what, fl.Engine, fl.Direction)
	}
	return nil
}

// udpFlows sets a udp flow's streams from flows (as bench's --flows):
// ports (default 1) × flows/ports streams, each from a source port of its
// own. A flow's own streams and flows together are a mistake; one given
// in the flow wins over the other from defaults.
func (p *parser) udpFlows(what string, s, defaults *settings, fl *Flow) error {
	at := s.at["flows"]
	if at == nil {
		return nil
	}
	own := func(k string) bool { return s.at[k] != nil && s.at[k] != defaults.at[k] }
	switch {
	case own("streams") && own("flows"):
		return p.errorf(at, "%s: streams and flows: give one (flows counts every flow, streams those of one port)", what)
	case own("streams"):
		return nil
	}
	fl.Ports = cmp.Or(s.ports, 1)
	if s.flows%fl.Ports != 0 {
		return p.errorf(at, "%s: flows %d over ports %d: want a multiple of ports", what, s.flows, fl.Ports)
	}
	fl.Streams = s.flows / fl.Ports
	return nil
}

// rr reads a flow's rr: (a transaction test): connect, size
// (REQ[,RESP]) and timeout, each optional; rr: {} is netperf's TCP_RR of
// a byte each way.
func (p *parser) rr(n *yaml.Node) (*wire.RR, error) {
	fs, err := p.mapping(n, "rr", rrKeys)
	if err != nil {
		return nil, err
	}
	rr := &wire.RR{Request: 1, Response: 1, Timeout: wire.Seconds(wire.DefaultRRTimeout)}
	for _, f := range fs {
		switch f.key {
		case "connect":
			rr.Connect, err = p.boolean(f.v, "rr: connect")
		case "size":
			var v string
			if v, err = p.scalar(f.v, "rr: size"); err == nil {
				if rr.Request, rr.Response, err = wire.ParseRRSize(v); err != nil {
					err = p.errorf(f.v, "rr: size %v", err)
				}
			}
		case "timeout":
			var d time.Duration
			if d, err = p.duration(f.v, "rr: timeout"); err == nil {
				rr.Timeout = wire.Seconds(d)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return rr, nil
}

// rrSettings fills a transaction flow and refuses the keys of bulk
// traffic given in the flow itself (under defaults they are meant for
// the bulk flows).
func (p *parser) rrSettings(what string, s, defaults *settings, refuse func(key, why string) error, fl *Flow) error {
	for _, r := range [][2]string{
		{"rate", "rate: a transaction flow runs its streams back to back (rr)"},
		{"ports", "ports: a transaction flow uses one server port (rr); its streams are the concurrency"},
		{"flows", "flows: a transaction flow's concurrency is its streams (rr)"},
		{"threads", "threads: a transaction flow runs a loop per stream (rr): give streams"},
		{"size", "size: a transaction flow's sizes are rr: size: REQ[,RESP]"},
		{"payload", "payload: a transaction flow's sizes are rr: size: REQ[,RESP]"},
		{"mss", "mss: not for a transaction flow (rr)"},
		{"engine", "engine: a transaction flow sends with sockets (rr)"},
		{"copy", "copy: not for a transaction flow (rr)"},
	} {
		if err := refuse(r[0], r[1]); err != nil {
			return err
		}
	}
	if fl.Direction != wire.Forward {
		if n := s.at["direction"]; n != nil && n != defaults.at["direction"] {
			return p.errorf(n, "%s: direction %s: a transaction goes both ways already (rr)", what, fl.Direction)
		}
		fl.Direction = wire.Forward
	}
	if s.rr.Connect && fl.Proto != wire.TCP {
		return p.errorf(s.at["rr"], "%s: rr: connect: a connection per transaction is tcp's, not %s", what, fl.Proto)
	}
	rr := *s.rr
	fl.RR, fl.Threads, fl.Rate = &rr, 1, wire.Rate{}
	return nil
}

// HasRR says whether any flow of the plan is a transaction test.
func (pl *Plan) HasRR() bool {
	return slices.ContainsFunc(pl.Flows, func(f Flow) bool { return f.RR != nil })
}

// OnlyRR says whether every flow of the plan is a transaction test.
func (pl *Plan) OnlyRR() bool {
	return len(pl.Flows) > 0 && !slices.ContainsFunc(pl.Flows, func(f Flow) bool { return f.RR == nil })
}

// IPv4 reports whether the flow goes over IPv4: its address is an IPv4
// address, or a name (taken as IPv4 until it is resolved).
func (f *Flow) IPv4() bool {
	a, err := netip.ParseAddr(f.Address)
	return err != nil || a.Unmap().Is4()
}

// PayloadFor is the flow's UDP payload or TCP write size; a UDP frame size
// leaves the payload to the address family.
func (f *Flow) PayloadFor(v4 bool) int {
	if f.Size > 0 {
		return f.Size - wire.UDPOverhead(v4)
	}
	return f.Payload
}

// Spec is the test the flow asks of its agents, for a round of duration
// after warmup. The runner adds the receiving end's ports (ClientPorts,
// here zeros, one per port, for UDP that comes back) and latency probes.
func (f *Flow) Spec(duration, warmup time.Duration, v4 bool) wire.Spec {
	if f.RR != nil {
		// A transaction test counts from its start: no warmup.
		rr := *f.RR
		return wire.Spec{Proto: f.Proto, Direction: wire.Forward, Duration: wire.Seconds(duration), Streams: f.Streams, Ports: 1, Threads: 1,
			DSCP: f.DSCP, RR: &rr}
	}
	sp := wire.Spec{Proto: f.Proto, Direction: f.Direction, Duration: wire.Seconds(duration), Warmup: wire.Seconds(warmup),
		Rate: f.Rate, Payload: f.PayloadFor(v4), Streams: f.Streams, Ports: f.Ports, Threads: f.Threads, MSS: f.MSS, DSCP: f.DSCP,
		ZeroCopy: f.Proto == wire.TCP && !f.Copy && f.Rate.Unlimited()}
	if f.Proto == wire.UDP && f.Direction != wire.Forward {
		sp.ClientPorts = make([]uint16, f.Ports)
	}
	return sp
}

// tcpTimestamps is the TCP timestamps option Linux puts on every segment
// (RFC 7323; net.ipv4.tcp_timestamps=1 by default): 10 bytes padded to 12.
const tcpTimestamps = 12

// Frame is the Ethernet frame the flow sends: a UDP datagram of its
// payload, a full TCP segment at its MTU, or a segment of its MSS. Linux
// sends timestamps on every segment and counts them in TCP_MAXSEG, so a
// segment carries MSS − 12 bytes: --mss 88 is a 146-byte frame.
func (f *Flow) Frame() (ceiling.Frame, error) {
	v4 := f.IPv4()
	if f.Proto == wire.UDP {
		return ceiling.PayloadFrame(f.PayloadFor(v4), ceiling.Headers{Proto: ceiling.UDP, IPv6: !v4})
	}
	h := ceiling.Headers{Proto: ceiling.TCP, IPv6: !v4, TCPTimestamps: true}
	if f.MSS > 0 {
		return ceiling.PayloadFrame(f.MSS-tcpTimestamps, h)
	}
	return ceiling.MTUFrame(f.MTU, h)
}
