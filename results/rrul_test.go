package results

import (
	"fmt"
	"testing"

	"linerate/wire"
)

func TestGoodputOverTime(t *testing.T) {
	got := GoodputOverTime([]TCPSample{{T: 1, Acked: 1e6}, {T: 2, Acked: 3e6}, {T: 3.5, Acked: 6e6}})
	want := []Goodput{{1, 8e6}, {2, 16e6}, {3.5, 16e6}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("second %d: %v, want %v", i, got[i], want[i])
		}
	}
	if g := GoodputOverTime([]TCPSample{{T: 1, Cwnd: 10}, {T: 2, Cwnd: 20}}); g != nil {
		t.Errorf("samples without bytes acked: %v, want none", g)
	}
}

func TestNewRRUL(t *testing.T) {
	res := &Result{Spec: wire.Spec{Proto: wire.TCP, Direction: wire.Bidir, Streams: 2, StreamDSCP: []int{0, 46}}}
	res.Summary.LatencyIdle = &Latency{Sent: 10, Received: 10, P50: 0.1, P95: 0.2}
	res.Summary.LatencyLoad = &Latency{Sent: 50, Received: 49, P50: 5.1, P95: 9.2}
	for _, s := range []StreamResult{
		{Stream: 1, Direction: wire.Reverse, Totals: Totals{ReceivedBPS: 30e6}},
		{Stream: 0, Direction: wire.Forward, Totals: Totals{ReceivedBPS: 10e6, Retransmits: 3}, TCP: &TCPStat{RTTMicros: 2500,
			OverTime: []TCPSample{{T: 1, Acked: 1e6}}}},
		{Stream: 1, Direction: wire.Forward, Totals: Totals{ReceivedBPS: 20e6}},
		{Stream: 0, Direction: wire.Reverse, Totals: Totals{ReceivedBPS: 40e6}},
	} {
		res.Streams = append(res.Streams, s)
	}
	r := NewRRUL(res, []ProbeSample{{T: 0.4, RTT: 5}, {T: -1, RTT: 0.1, Idle: true}})
	if r.UpBPS != 30e6 || r.DownBPS != 70e6 {
		t.Errorf("up %v down %v, want 30e6 and 70e6", r.UpBPS, r.DownBPS)
	}
	if r.InducedP50 == nil || *r.InducedP50 != 5 || r.InducedP95 == nil || *r.InducedP95 != 9 {
		t.Errorf("induced %v %v, want 5 and 9 ms", r.InducedP50, r.InducedP95)
	}
	var order []string
	for _, f := range r.Flows {
		order = append(order, string(f.Direction)+" "+f.Mark)
	}
	if want := "[forward BE forward EF reverse BE reverse EF]"; fmt.Sprint(order) != want {
		t.Errorf("flows %s, want %s", fmt.Sprint(order), want)
	}
	if f := r.Flows[0]; f.RTTMs != 2.5 || f.Retransmits != 3 || len(f.OverTime) != 1 || f.OverTime[0].BPS != 8e6 {
		t.Errorf("first flow %+v", f)
	}
	if r.Probes[0].T != -1 {
		t.Errorf("probes not in time order: %+v", r.Probes)
	}
	res.Summary.LatencyIdle = &Latency{Sent: 10}
	if r := NewRRUL(res, nil); r.InducedP50 != nil {
		t.Errorf("induced latency %v without an idle reply", *r.InducedP50)
	}
}
