package main

import (
	"encoding/json"
	"strings"
	"testing"

	"linerate/diagnose"
)

// TestDiagnoseRunEnds: a bench saved in a's history of a pair lab, then
// `diagnose RUN` in a. Its server end ran in b's namespace: the findings
// rest on what the run saved of b (its interface a), never on a's own
// interfaces, and the label says whose configuration it is. The client
// end ran here: its configuration is read live, and the label says so.
func TestDiagnoseRunEnds(t *testing.T) {
	l := upAgentLab(t, "dr-", "pair", "--rate", "100M")
	hist := t.TempDir()
	r := l.exec("a", "linerate", "bench", "udp", "--to", "b", "-t", "2", "--warmup", "300ms", "--history-dir", hist)
	i := strings.Index(r.stderr, "saved as run ")
	if r.code != 0 || i < 0 {
		t.Fatalf("bench: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := strings.Fields(r.stderr[i+len("saved as run "):])[0]
	for _, c := range []struct {
		side, label string
		iface       string // the end's own interface, the only one a finding may name
	}{
		{"server", "(server end; it ran on another machine or in another network namespace: of its configuration only what the run saved", "a"},
		{"client", "(client end; its configuration read now: it ran on this machine, in this network namespace)", "b"},
	} {
		d := l.exec("a", "linerate", "diagnose", id, "--side", c.side, "--history-dir", hist, "--no-save", "--json")
		var got struct {
			Source   string             `json:"source"`
			Findings []diagnose.Finding `json:"findings"`
		}
		if d.code != 0 || json.Unmarshal([]byte(d.stdout), &got) != nil {
			t.Fatalf("diagnose %s --side %s: %d\n%s%s", id, c.side, d.code, d.stdout, d.stderr)
		}
		t.Logf("%s: %s", c.side, got.Source)
		if !strings.Contains(got.Source, c.label) {
			t.Errorf("--side %s: source %q, want %q", c.side, got.Source, c.label)
		}
		for _, f := range got.Findings {
			t.Logf("  %s %s: %s", f.Rule, f.Subject, f.Summary)
			// "generator" is the run's load generator (generator-limited,
			// from the run's own verdict), no machine's configuration.
			if f.Subject != c.iface && f.Subject != "box" && f.Subject != "generator" && !strings.HasPrefix(f.Subject, "CPU") {
				t.Errorf("--side %s: finding on %s, not this end's interface %s: %s", c.side, f.Subject, c.iface, f.Summary)
			}
		}
	}
}
