package plan

import (
	"errors"
	"testing"
	"time"

	"linerate/wire"
)

// A flow with rr: is a transaction test: tcp unless it says udp, a
// connection per transaction with connect, its sizes REQ[,RESP]; its spec
// is the one bench rr sends (no warmup, one port, forward), which the
// agents accept; bulk keys under defaults are for the bulk flows.
func TestParseRR(t *testing.T) {
	pl, err := Parse("p.yaml", []byte(hosts+`  c: 10.0.0.3
defaults: {rate: 100M, size: 1518, proto: udp}
flows:
  - {from: a, to: b, rr: {connect: true, size: "64,1448", timeout: 500ms}, proto: tcp, streams: 4}
  - {from: c, to: b, rr: {}, proto: udp}
  - {from: a, to: c, rr: {}, proto: tcp}
  - {from: c, to: a}
duration: 3s
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []*wire.RR{
		{Request: 64, Response: 1448, Connect: true, Timeout: wire.Seconds(500 * time.Millisecond)},
		{Request: 1, Response: 1, Timeout: wire.Seconds(2 * time.Second)},
		{Request: 1, Response: 1, Timeout: wire.Seconds(2 * time.Second)},
		nil,
	}
	for i, w := range want {
		f := pl.Flows[i]
		switch {
		case w == nil && f.RR != nil:
			t.Errorf("flow %d: rr %+v, want a bulk flow", i+1, *f.RR)
		case w != nil && (f.RR == nil || *f.RR != *w):
			t.Errorf("flow %d: rr %+v, want %+v", i+1, f.RR, *w)
		}
		if w == nil {
			continue
		}
		sp := f.Spec(pl.Duration, pl.Warmup, true)
		if err := sp.Check(); err != nil {
			t.Errorf("flow %d: spec %+v: %v", i+1, sp, err)
		}
		if sp.Warmup != 0 || sp.Ports != 1 || sp.Direction != wire.Forward || !sp.Rate.Unlimited() || sp.RR == nil || sp.Duration.D() != 3*time.Second {
			t.Errorf("flow %d: spec %+v", i+1, sp)
		}
	}
	if pl.Flows[0].Streams != 4 || pl.Flows[0].Proto != wire.TCP || pl.Flows[1].Proto != wire.UDP {
		t.Errorf("flows %+v", pl.Flows[:2])
	}
	if !pl.HasRR() || pl.OnlyRR() {
		t.Errorf("HasRR %v OnlyRR %v", pl.HasRR(), pl.OnlyRR())
	}
	// The bulk flow keeps its defaults; the expectation leaves the
	// transaction flows out.
	if f := pl.Flows[3]; f.Size != 1518 || f.Rate.Unlimited() {
		t.Errorf("bulk flow %+v", f)
	}
	e, err := pl.Expect(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Ports) != 1 || len(e.Ports[0].Flows) != 1 || e.Ports[0].Flows[0] != 3 {
		t.Errorf("ports %+v: want only flow 4's", e.Ports)
	}

	// rr under defaults makes every flow one, tcp by default.
	pl, err = Parse("p.yaml", []byte(hosts+"defaults: {rr: {connect: true}}\nflows:\n  - {from: a, to: b, streams: 8}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f := pl.Flows[0]; f.RR == nil || !f.RR.Connect || f.Proto != wire.TCP || !pl.OnlyRR() {
		t.Errorf("flow %+v", f)
	}
}

func TestParseRRErrors(t *testing.T) {
	for _, tc := range []struct{ name, plan, want string }{
		{"rate", "flows:\n  - {from: a, to: b, rr: {}, rate: 1G}\n", `p.yaml:5: flow 1: rate: a transaction flow runs its streams back to back (rr)`},
		{"flows", "flows:\n  - {from: a, to: b, rr: {}, flows: 4}\n", `p.yaml:5: flow 1: flows: a transaction flow's concurrency is its streams (rr)`},
		{"ports", "flows:\n  - {from: a, to: b, rr: {}, proto: udp, ports: 2}\n", `p.yaml:5: flow 1: ports: a transaction flow uses one server port (rr); its streams are the concurrency`},
		{"frame size", "flows:\n  - {from: a, to: b, rr: {}, size: 64}\n", `p.yaml:5: flow 1: size: a transaction flow's sizes are rr: size: REQ[,RESP]`},
		{"reverse", "flows:\n  - {from: a, to: b, rr: {}, direction: reverse}\n", `p.yaml:5: flow 1: direction reverse: a transaction goes both ways already (rr)`},
		{"connect udp", "flows:\n  - {from: a, to: b, rr: {connect: true}, proto: udp}\n", `p.yaml:5: flow 1: rr: connect: a connection per transaction is tcp's, not udp`},
		{"bad size", "flows:\n  - {from: a, to: b, rr: {size: 0}}\n", `p.yaml:5: rr: size "0": "0" is not a size of 1 to 65507 bytes`},
		{"three sizes", "flows:\n  - {from: a, to: b, rr: {size: '1,2,3'}}\n", `p.yaml:5: rr: size "1,2,3": want REQ or REQ,RESP`},
		{"unknown key", "flows:\n  - {from: a, to: b, rr: {conect: true}}\n", `p.yaml:5: rr: unknown key "conect": want connect, size, timeout`},
		{"not a mapping", "flows:\n  - {from: a, to: b, rr: true}\n", `p.yaml:5: rr: want a mapping of keys (key: value), not "true"`},
		{"timeout", "flows:\n  - {from: a, to: b, rr: {timeout: 2h}}\n", `p.yaml:5: flow 1: timeout 2h0m0s: want 1ms to 1m0s`},
	} {
		_, err := Parse("p.yaml", []byte(hosts+tc.plan))
		var pe *Error
		switch {
		case err == nil:
			t.Errorf("%s: no error, want %s", tc.name, tc.want)
		case !errors.As(err, &pe):
			t.Errorf("%s: %v is a %T, want *plan.Error", tc.name, err, err)
		case err.Error() != tc.want:
			t.Errorf("%s:\n got %s\nwant %s", tc.name, err, tc.want)
		}
	}
}
