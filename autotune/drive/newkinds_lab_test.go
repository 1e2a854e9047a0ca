package drive

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"linerate/autotune"
	"linerate/internal/testenv"
	"linerate/tune"
)

// In the router lab with lan, the bench's client, as the device under
// test: the rig probes the path to wan, jumbo-frames proposes MTU 9000 on
// lan's interface (the probe carried all lan sends; the far end's limit is
// unknown), and tune auto tries it from diagnose, with a qdisc change
// given as --try. Each is kept or rolled back like any change, and a
// rollback of what was kept leaves lan as it was.
func TestAutoTriesJumboAndQdisc(t *testing.T) {
	testenv.RequireRoot(t)
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("tc is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	l, _ := autoLab(t, ctx)
	lan, _ := l.Node("lan")
	rootQdisc := func() string {
		out, err := exec.Command("ip", "netns", "exec", lan.Netns, "tc", "-j", "qdisc", "show", "dev", "router", "root").Output()
		if err != nil {
			t.Fatal(err)
		}
		var qs []map[string]any
		if err := json.Unmarshal(out, &qs); err != nil || len(qs) != 1 {
			t.Fatalf("%s: %v", out, err)
		}
		return qs[0]["kind"].(string) + " " + qs[0]["handle"].(string)
	}
	before, qdisc := routerTunables(t, ctx, lan.Netns), rootQdisc()

	rig, err := LabRig(l, LabNodes{Client: "lan", Server: "wan", DUT: "lan"}, autoBench())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rig.Close(); err != nil {
			t.Error(err)
		}
	})
	if rig.Path == nil {
		t.Fatal("a rig whose client is the device under test has no path probe")
	}
	store := tune.NewStore(t.TempDir())
	t.Cleanup(func() {
		if _, err := store.RollbackAll(context.Background(), tune.Open, false, false); err != nil {
			t.Errorf("cleanup rollback: %v", err)
		}
	})
	try := []tune.Item{{Kind: "qdisc", Target: "router", Value: "pfifo,limit=1000"}}
	// A pair past the fewest judged at the most: the test checks each
	// outcome, not how many pairs a noisy lab needs to decide.
	rep, err := autotune.Run(ctx, autotune.Config{Rig: rig, Store: store, Rounds: 2, MaxRounds: autotune.MinLook + 1, Try: try, Passes: 1, Progress: testLog{t}})
	if err != nil {
		t.Fatalf("tune auto: %v", err)
	}
	tried := map[string]autotune.Trial{}
	for _, tr := range rep.Trials {
		tried[tr.Item.Kind.String()+":"+tr.Item.Target] = tr
	}
	for k, src := range map[string]string{"mtu:router": "diagnose jumbo-frames", "qdisc:router": "--try"} {
		tr, ok := tried[k]
		if !ok {
			t.Errorf("tune auto did not try %s; trials: %v", k, rep.Trials)
			continue
		}
		if tr.Source != src {
			t.Errorf("%s from %q, want %q", k, tr.Source, src)
		}
		switch tr.Outcome {
		case autotune.Kept, autotune.RolledBack, autotune.Undecided, autotune.Refused:
			if tr.Outcome != autotune.Kept && !tr.Restored {
				t.Errorf("%s %s and not restored", k, tr.Outcome)
			}
		default:
			t.Errorf("%s: outcome %q (%s)", k, tr.Outcome, tr.Why)
		}
		t.Logf("%s (%s): %s, %s; note: %s", tr.Item, tr.Source, tr.Outcome, tr.Why, tr.Item.Note)
	}
	if tr := tried["mtu:router"]; tr.Item.Value != "9000" {
		t.Errorf("jumbo-frames proposed %s, want 9000", tr.Item)
	}
	rollbackRestores(t, ctx, store, lan.Netns, before)
	if got := rootQdisc(); got != qdisc {
		t.Errorf("after rollback lan's root qdisc is %s, was %s", got, qdisc)
	}
}
