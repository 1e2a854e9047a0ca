package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"linerate/history"
	"linerate/internal/testenv"
	"linerate/lab"
)

// smallLeavesOut are packages the small build (-tags small) must not
// link: net/http and the TLS it brings (--web), cilium/ebpf (--xdp, drop
// reasons), html/template and the page (report), the man page writer,
// the demo, tune auto's rigs and the fleet that drives other hosts, plans
// and tune auto with what they link (yaml, gonum's t-distribution), and
// debug/elf.
var smallLeavesOut = []string{"net/http", "crypto/tls", "html/template", "github.com/cilium/ebpf",
	"github.com/spf13/cobra/doc", "linerate/report/page", "linerate/demo", "linerate/autotune/drive", "linerate/fleet",
	"linerate/plan", "linerate/autotune", "go.yaml.in/yaml/v3", "gonum.org/v1/gonum/stat/distuv", "debug/elf"}

// The small build links none of what it leaves out, and each command or
// flag it leaves out says so in one line and exits 2; the full build
// links them (so the list above names real weights). Run inside a network
// namespace: serve and bench must not reach anything even when they fail
// to refuse.
func TestSmallBuild(t *testing.T) {
	deps := func(tags ...string) []string {
		args := append([]string{"list", "-deps"}, tags...)
		out, err := exec.Command("go", append(args, "linerate/cmd/linerate")...).Output()
		if err != nil {
			t.Fatalf("go list %v: %v", tags, err)
		}
		return strings.Fields(string(out))
	}
	full, small := deps(), deps("-tags", "small")
	for _, p := range smallLeavesOut {
		if !slices.Contains(full, p) {
			t.Errorf("the full build does not link %s: drop it from the list", p)
		}
		if slices.Contains(small, p) {
			t.Errorf("the small build links %s", p)
		}
	}

	ns := testenv.NewNetNS(t)
	bin := filepath.Join(t.TempDir(), "linerate-small")
	build := exec.Command("go", "build", "-tags", "small", "-trimpath", "-o", bin, "linerate/cmd/linerate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags small: %v\n%s", err, out)
	}
	// Should the small build ever run what it leaves out, the labs it made
	// are the test's, in a directory of its own, and go with it.
	labs := lab.Dir(t.TempDir())
	t.Cleanup(func() {
		if done, err := labs.DownAll(); len(done) > 0 || err != nil {
			t.Errorf("the small build made labs %v (%v): it ran what it leaves out", done, err)
		}
	})
	// Two plan runs in the history, as a full build on another host
	// would have saved them: the small build lists them and says in one
	// line that it does not read them.
	hist := history.Open(t.TempDir())
	var planRuns []string
	for range 2 {
		id, err := hist.Save(&history.Run{Entry: history.Entry{Kind: history.KindPlan, Host: "controller",
			Headline: "cm4: udp 940.1 Mb/s"}, Result: []byte(`{"plan":"cm4"}`)})
		if err != nil {
			t.Fatal(err)
		}
		planRuns = append(planRuns, id)
	}
	run := func(args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.Name, bin}, args...)...)
		cmd.Env = append(os.Environ(), lab.EnvDir+"="+string(labs), "LINERATE_HISTORY_DIR="+hist.Dir)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return string(out), 0
		case errors.As(err, &ee):
			return string(out), ee.ExitCode()
		}
		t.Fatalf("%v: %v", args, err)
		return "", 0
	}
	if out, code := run("runs"); code != 0 || strings.Count(out, "cm4: udp 940.1 Mb/s") != 2 {
		t.Errorf("runs: exit %d, want 0 and both plan runs listed:\n%s", code, out)
	}
	if out, code := run("compare", planRuns[0], planRuns[1]); code == 0 || !strings.Contains(out, `kind "plan" is not one this build of linerate reads`) ||
		strings.Count(strings.TrimSpace(out), "\n") > 0 {
		t.Errorf("compare of two plan runs: exit %d, want non-zero and one line saying the build does not read plans:\n%s", code, out)
	}
	if out, code := run("version"); code != 0 || !strings.Contains(out, "small build, without: lab,") || !strings.Contains(out, "--web") {
		t.Errorf("version: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"lab", "up", "pair"}, "linerate lab: not in this build"},
		{[]string{"demo", "--quick"}, "linerate demo: not in this build"},
		{[]string{"report", "run.json"}, "linerate report: not in this build"},
		{[]string{"run", "plan.yaml"}, "linerate run: not in this build"},
		{[]string{"tune", "auto", "--lab", "x"}, "linerate auto: not in this build"},
		{[]string{"bench", "rr", "--to", "127.0.0.1"}, "linerate rr: not in this build"},
		{[]string{"bench", "rrul", "--to", "127.0.0.1"}, "linerate rrul: not in this build"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--search", "ndr"}, "bench --search: not in this build"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--from", "127.0.0.2"}, "bench --from: not in this build"},
		{[]string{"bench", "udp", "--to", "iperf3://127.0.0.1", "-t", "1"}, "--to iperf3://: not in this build"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--web", "127.0.0.1:0"}, "has no web page"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--iperf3", "--allow", "127.0.0.1"}, "serve --iperf3: not in this build"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--web", "127.0.0.1:0"}, "has no web page"},
		{[]string{"watch", "--web", "127.0.0.1:0"}, "has no web page"},
	} {
		out, code := run(tc.args...)
		if code != 2 || !strings.Contains(out, tc.says) || strings.Count(strings.TrimSpace(out), "\n") > 1 {
			t.Errorf("%s: exit %d, want 2 and one line with %q:\n%s", strings.Join(tc.args, " "), code, tc.says, out)
		}
	}
}
