package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"linerate/internal/usage"
)

// runPlan runs `linerate run ARGS` from the repository root.
func runPlan(t *testing.T, args ...string) (string, error) {
	t.Helper()
	t.Chdir(repoRoot)
	cmd := newRunCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// run --check prints each example as it will run; the output is golden
// (go test -run TestRunCheckExamples -update rewrites it).
func TestRunCheckExamples(t *testing.T) {
	for _, name := range []string{"cm4-fan-in", "routerpi-bidir", "apu4-mars-venus"} {
		t.Run(name, func(t *testing.T) {
			out, err := runPlan(t, "examples/"+name+".yaml", "--check")
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", "plan-"+name+".txt")
			if *updateGolden {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestRunCheckExamples -update writes it)", err)
			}
			if out != string(want) {
				t.Errorf("run %s --check differs from %s:\n%s", name, golden, out)
			}
		})
	}
}

// A ceiling read from a capture: the CM4's own Gen2 x1 link at MPS 128.
func TestRunCheckCapture(t *testing.T) {
	capture, err := filepath.Abs(filepath.Join(repoRoot, "testdata", "captures", "cm4-i340"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "p.yaml")
	plan := `hosts:
  cm4:
    at: ssh://pi@cm4.local
    ports:
      eth1: {address: 10.0.1.1, speed: 1G}
      eth2: {address: 10.0.2.1, speed: 1G}
      eth3: {address: 10.0.3.1, speed: 1G}
      eth4: {address: 10.0.4.1, speed: 1G}
  pi: 10.0.0.9
defaults: {proto: tcp}
flows:
  - {from: pi, to: cm4, address: [10.0.1.1, 10.0.2.1, 10.0.3.1, 10.0.4.1]}
ceiling: {host: cm4, root: ` + capture + `}
`
	if err := os.WriteFile(p, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runPlan(t, p, "--check")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"ceiling: cm4's PCIe gen2x1 link at MPS 128 (read from " + capture + "), behind it all its ports",
		"carries 3.08 Gb/s of the 3.77 Gb/s its ports' links let through (82 %, binding: up): the bus limits",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Bad input is one line with the file and line, or the flag: exit 2.
func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("hosts:\n  a: 10.0.0.1\n  b: 10.0.0.2\nflows:\n  - {from: a, to: c, proto: udp}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noCapture := filepath.Join(dir, "nocap.yaml")
	if err := os.WriteFile(noCapture, []byte("hosts:\n  a: 10.0.0.1\n  b: 10.0.0.2\nflows:\n  - {from: a, to: b, proto: udp}\nceiling: {host: b, root: none.tar.gz}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A matrix whose tune plan is missing, and one whose item cannot be
	// made here.
	noTune := filepath.Join(dir, "notune.yaml")
	badTune := filepath.Join(dir, "badtune.yaml")
	matrix := "hosts:\n  a: 10.0.0.1\n  b: 10.0.0.2\nflows:\n  - {from: a, to: b, proto: udp}\nmatrix:\n  tune: %s\n"
	os.WriteFile(noTune, fmt.Appendf(nil, matrix, "none.json"), 0o644)
	os.WriteFile(badTune, fmt.Appendf(nil, matrix, "bad.json"), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"schema": 1, "items": [{"kind": "mtu", "target": "no-such-nic0", "value": "1400"}]}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{noTune, "--check"}, noTune + ":7: matrix: tune " + filepath.Join(dir, "none.json") + ": no such file or directory"},
		{[]string{badTune, "--check"}, badTune + ":7: matrix: tune: " + filepath.Join(dir, "bad.json") + ": "},
		{[]string{"examples/cm4-fan-in.yaml", "--reach"}, "--reach goes with --check"},
		{[]string{bad, "--check"}, bad + ":5: flow 1: to c: no such host (hosts: a, b)"},
		{[]string{filepath.Join(dir, "none.yaml"), "--check"}, filepath.Join(dir, "none.yaml") + ": cannot read the plan: no such file or directory"},
		{[]string{noCapture, "--check"}, noCapture + ":6: ceiling: capture " + filepath.Join(dir, "none.tar.gz") + ": "},
		{[]string{"--check"}, "accepts 1 arg(s), received 0"},
	} {
		_, err := runPlan(t, tc.args...)
		if err == nil || !usage.Is(err) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("run %v: %v (bad input: %v), want %s", tc.args, err, usage.Is(err), tc.want)
		}
		if err != nil && exitCode(err) != exitBadInput {
			t.Errorf("run %v: exit %d, want 2", tc.args, exitCode(err))
		}
	}
}
