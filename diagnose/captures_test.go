package diagnose_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"linerate/box"
	"linerate/diagnose"
	"linerate/source"
)

// evidenceFrom loads a capture from testdata/captures with its samples.
func evidenceFrom(t *testing.T, name string) *diagnose.Evidence {
	t.Helper()
	src, err := source.OpenCapture(filepath.Join("..", "testdata", "captures", name))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	b, rates, err := box.CollectSampled(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return &diagnose.Evidence{Box: b, Rates: rates}
}

func fired(t *testing.T, ev *diagnose.Evidence) map[string][]diagnose.Finding {
	t.Helper()
	fs, err := diagnose.Run(ev)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]diagnose.Finding{}
	for _, f := range fs {
		m[f.Rule] = append(m[f.Rule], f)
		t.Logf("%s %s: %s", f.Severity, f.Rule, f.Summary)
	}
	return m
}

// The seed-modelled captures give the findings their authors found by hand.
func TestSeedCaptures(t *testing.T) {
	for _, tc := range []struct {
		capture string
		want    []string
	}{
		{"routerpi", []string{"irq-single-cpu", "rps-off"}},
		{"apu4", []string{"rss-imbalance"}},
		{"cm4-i340", []string{"pcie-bottleneck"}},
	} {
		t.Run(tc.capture, func(t *testing.T) {
			got := fired(t, evidenceFrom(t, tc.capture))
			for _, id := range tc.want {
				if len(got[id]) == 0 {
					t.Errorf("%s: rule %s did not fire", tc.capture, id)
				}
			}
		})
	}
}

// RouterPi: the RTL8111H (eth1) is the single-queue NIC RPS must spread,
// the seed's `echo 8 > /sys/class/net/eth1/queues/rx-0/rps_cpus`.
func TestRouterPiRPSOnEth1(t *testing.T) {
	got := fired(t, evidenceFrom(t, "routerpi"))
	var subjects []string
	for _, f := range got["rps-off"] {
		subjects = append(subjects, f.Subject)
		if len(f.Fixes) == 0 || f.Fixes[0].Kind != "rps" {
			t.Errorf("rps-off on %s has no rps fix: %+v", f.Subject, f.Fixes)
		}
	}
	if !slices.Contains(subjects, "eth1") {
		t.Errorf("rps-off subjects %v, want eth1 among them", subjects)
	}
}

// The healthy capture of this machine raises no warnings.
func TestThisMachineNoFalseAlarms(t *testing.T) {
	for rule, fs := range fired(t, evidenceFrom(t, "this-machine")) {
		for _, f := range fs {
			if f.Severity != diagnose.Info {
				t.Errorf("false alarm on a healthy box: %s %s", rule, f.Summary)
			}
		}
	}
}
