package results

import (
	"encoding/json"
	"strings"
	"testing"

	"linerate/wire"
)

// cutRun is an 8 s run at 20 kpps whose client lost carrier from 2.3 s to
// 5.0 s and whose server's link was set down from 2.0 s to 5.0 s.
func cutRun(lost uint64) *Result {
	up := 5.0
	res := &Result{Spec: wire.Spec{Proto: wire.UDP, Direction: wire.Forward, Payload: 82, Rate: wire.Rate{PPS: 20000}}, FrameSize: 128, Targets: []TargetResult{{}},
		LinkEvents: []LinkEvent{
			{Side: SideClient, Target: -1, Iface: "lra", Why: "no carrier", Down: 2.3, Up: &up, Seconds: 2.7},
			{Side: SideServer, Target: 0, Iface: "lrb", Why: "set down", Down: 2, Up: &up, Seconds: 3},
		}}
	for i := 1; i <= 8; i++ {
		res.Intervals = append(res.Intervals, IntervalStats{T: float64(i), SentPPS: 20000, ReceivedUnknown: i >= 3 && i <= 5})
	}
	s := &res.Summary
	s.Seconds, s.SentPackets, s.SentBytes, s.SentPPS = 8, 160000, 160000*82, 20000
	s.LostPackets, s.ReceivedPackets = lost, 160000-lost
	s.LossRatio = float64(lost) / 160000
	s.ReceivedPPS = float64(s.ReceivedPackets) / 8
	return res
}

func TestSentWhileDown(t *testing.T) {
	res := cutRun(60000)
	if got := res.LinkDownSeconds(); got != 3 {
		t.Errorf("link down %.2f s, want 3 (the two ends' events overlap)", got)
	}
	if got := res.SentWhileDown(); got != 60000 {
		t.Errorf("sent while down %d, want 60000", got)
	}
	res.Intervals[3].SentUnknown, res.Intervals[3].SentPPS = true, 0
	if got := res.SentWhileDown(); got != 60000 {
		t.Errorf("sent while down, a second unknown: %d, want 60000 (the run's mean)", got)
	}
	res.Spec.Warmup = wire.Seconds(3e9) // the window starts at 3 s: 2 s of the cut in it
	res.Summary.Seconds = 5
	if got := res.SentWhileDown(); got != 40000 {
		t.Errorf("sent while down in a window from 3 s: %d, want 40000", got)
	}
}

// TestVerdictLinkDown: a run with a link-down event and loss is "link
// down", with the seconds and what was lost then; never the sender's CPU.
func TestVerdictLinkDown(t *testing.T) {
	res := cutRun(61000)
	res.BuildLedger(false, false) // no drops: no ledger
	Verdict(res, []ThreadCPU{{Role: "udp-send", Busy: 0.97}})
	s := res.Summary
	if s.LimitedBy != LimitLinkDown {
		t.Errorf("limited by %q (%s), want link down", s.LimitedBy, s.LimitedWhy)
	}
	for _, want := range []string{"down for 3.0 s", "60000 of the 61000 packets lost were sent then", "; server's lrb was down (set down) from 2.0 s to 5.0 s (3.0 s)"} {
		if !strings.Contains(s.LimitedWhy, want) {
			t.Errorf("why %q: no %q", s.LimitedWhy, want)
		}
	}
	// With several targets, the server is numbered.
	res = cutRun(61000)
	res.Targets = append(res.Targets, TargetResult{})
	Verdict(res, nil)
	if want := "; server 1's lrb was down"; !strings.Contains(res.Summary.LimitedWhy, want) {
		t.Errorf("two targets: why %q: no %q", res.Summary.LimitedWhy, want)
	}
	// No loss and the rate met (the sender held the frames): the verdict
	// is the usual one.
	res = cutRun(0)
	Verdict(res, []ThreadCPU{{Role: "udp-send", Busy: 0.1}})
	if res.Summary.LimitedBy != LimitAskedRate {
		t.Errorf("no loss: limited by %q (%s), want asked rate", res.Summary.LimitedBy, res.Summary.LimitedWhy)
	}
	// TCP across a cut says the link was down, not "cannot tell".
	res = cutRun(0)
	res.Spec.Proto, res.Spec.Rate = wire.TCP, wire.Rate{}
	Verdict(res, nil)
	if res.Summary.LimitedBy != LimitLinkDown || !strings.Contains(res.Summary.LimitedWhy, "TCP waited") {
		t.Errorf("tcp: limited by %q (%s), want link down", res.Summary.LimitedBy, res.Summary.LimitedWhy)
	}
}

func TestLinkEventJSON(t *testing.T) {
	res := cutRun(0)
	res.LinkEvents[1].Up = nil
	b, err := json.Marshal(res.LinkEvents)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"side":"client","target":-1,"iface":"lra","why":"no carrier","down":2.3,"up":5,"seconds":2.7},` +
		`{"side":"server","target":0,"iface":"lrb","why":"set down","down":2,"up":null,"seconds":3}]`
	if string(b) != want {
		t.Errorf("json\n%s\nwant\n%s", b, want)
	}
}
