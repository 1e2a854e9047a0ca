package report

import (
	"strings"
	"testing"

	"linerate/results"
	"linerate/wire"
)

// cutResult is a one-target UDP bench whose client's lra was set down
// from 2.0 s to 5.0 s and whose server's lrb lost carrier at 6.5 s until
// the end; the run stopped early at 7.0 s.
func cutResult() *results.Result {
	up := 5.0
	return &results.Result{
		Spec:      wire.Spec{Proto: wire.UDP, Direction: wire.Forward, Payload: 82, Ports: 1, Streams: 1, Threads: 1, Duration: wire.Seconds(8e9)},
		FrameSize: 128, Engine: "ring",
		Targets: []results.TargetResult{{Target: "10.99.0.2:7557"}},
		LinkEvents: []results.LinkEvent{
			{Side: results.SideClient, Target: -1, Iface: "lra", Why: "set down", Down: 2, Up: &up, Seconds: 3},
			{Side: results.SideServer, Target: 0, Iface: "lrb", Why: "no carrier", Down: 6.5, Seconds: 0.5},
		},
		StoppedEarly: &results.StoppedEarly{Reason: "server 10.99.0.2:7557: connection reset by peer", At: 7, Detected: 7.2},
	}
}

func TestBenchTextLinkEvents(t *testing.T) {
	var b strings.Builder
	BenchText(&b, cutResult())
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"\nlink lra (client) down 2.0 s → 5.0 s: set down\n",
		"\nlink lrb (server) down 6.5 s → the end of the run: no carrier\n",
		"STOPPED EARLY at 7.0 s",
		"connection reset by peer",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the text", want)
		}
	}
	// Two targets: the server is numbered.
	r := cutResult()
	r.Targets = append(r.Targets, results.TargetResult{Target: "10.99.0.3:7557"})
	b.Reset()
	BenchText(&b, r)
	if want := "\nlink lrb (server 1) down 6.5 s"; !strings.Contains(b.String(), want) {
		t.Errorf("two targets: no %q in\n%s", want, b.String())
	}
}

// A third-party flow's link events reach the controller's text (bench
// --from), under their flow.
func TestFlowSetTextLinkEvents(t *testing.T) {
	fs := &results.FlowSet{Spec: cutResult().Spec, Flows: []results.FlowRun{{From: "lan", To: []string{"wan"}, Result: cutResult()}}}
	var b strings.Builder
	FlowSetText(&b, fs)
	out := b.String()
	i, j := strings.Index(out, "flow 1: lan → wan\n"), strings.Index(out, "\nlink lra (client) down 2.0 s → 5.0 s: set down\n")
	if i < 0 || j < i {
		t.Errorf("no event line under flow 1 in\n%s", out)
	}
}

// How a set's flows started together is in its text: the spread of their
// windows and the start barrier.
func TestFlowSetTextStart(t *testing.T) {
	spread := 3.5
	fs := &results.FlowSet{Spec: cutResult().Spec, Flows: []results.FlowRun{{From: "lan", To: []string{"wan"}, Result: cutResult()},
		{From: "dmz", To: []string{"wan"}, Result: cutResult()}}, StartSpreadMS: &spread, Barrier: &results.Barrier{Used: true, SetupMS: 640}}
	var b strings.Builder
	FlowSetText(&b, fs)
	out := b.String()
	for _, want := range []string{"the 2 flows' measured windows opened within 3.5 ms of each other\n",
		"start barrier: every flow was set up (the slowest in 640 ms), then all were let go at once\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the text lacks %q:\n%s", want, out)
		}
	}
	fs.Barrier = &results.Barrier{Used: false, Without: []string{"dmz"}}
	b.Reset()
	FlowSetText(&b, fs)
	if strings.Contains(b.String(), "start barrier: every flow") {
		t.Errorf("a barrier not used by every flow is said to be:\n%s", b.String())
	}
}
