package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"linerate/internal/usage"
)

// runCeilingArgs runs `linerate ceiling ARGS` in process, with every flag of
// the command back at its default first (cobra keeps flag state between
// runs).
func runCeilingArgs(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runArgs(t, append([]string{"ceiling"}, args...)...)
}

func TestCeilingCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--speed", "1G", "--frame", "64"}, []string{"1,488,095", "761.9 Mb/s"}},
		{[]string{"--frame", "64"}, []string{"Ethernet at 1 Gb/s", "1,488,095"}},
		{[]string{"--speed", "1G", "--payload", "88", "--proto", "tcp"}, []string{"146-byte frame", "166", "753,012"}},
		{[]string{"--speed", "10G", "--mtu", "9000"}, []string{"9018", "9038", "138,304"}},
		{[]string{"--speed", "2.5G"}, []string{"Ethernet at 2.5 Gb/s", "3,720,238", "203,185", "34,576"}},
		{[]string{"--speed", "1000000000", "--payload", "1472", "--proto", "udp", "--ipv6"}, []string{"UDP/IPv6 payload 1472", "1538"}},
		{[]string{"--pcie", "gen2x1", "--mps", "128"}, []string{"Gen2 x1", "498.3 MB/s", "measured 3.02 Gb/s, model 3.08 Gb/s", "measured 3.42 Gb/s"}},
		{[]string{"--pcie", "gen2x1", "--mps", "512", "--speed", "1G"}, []string{"MPS 512", "1G PORTS", "3.48 Gb/s goodput"}},
		{[]string{"--pcie", "gen3x4", "--mps", "256", "--mrrs", "1024", "--addr32", "--ecrc"}, []string{"Gen3 x4 (8 GT/s, 128b/130b)", "MRRS 1024", "3 DW", "ECRC"}},
	} {
		out, err := runCeilingArgs(t, c.args...)
		if err != nil {
			t.Errorf("ceiling %v: %v", c.args, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("ceiling %v: output lacks %q:\n%s", c.args, w, out)
			}
		}
	}
}

func TestCeilingJSON(t *testing.T) {
	out, err := runCeilingArgs(t, "--speed", "1G", "--payload", "88", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Rates []struct {
			PPS   int64 `json:"pps"`
			Frame struct {
				Bytes int `json:"bytes"`
			} `json:"frame"`
		} `json:"rates"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(a.Rates) != 1 || a.Rates[0].PPS != 753_012 || a.Rates[0].Frame.Bytes != 146 {
		t.Errorf("JSON rates: %+v", a.Rates)
	}
}

func TestCeilingBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		frag string
	}{
		{[]string{"--speed", "1X"}, "--speed"},
		{[]string{"--speed", ""}, "--speed"},
		{[]string{"--frame", "40"}, "--frame: a 40-byte frame"},
		{[]string{"--frame", "abc"}, "frame"},
		{[]string{"--frame", "64", "--payload", "10"}, "give one of them"},
		{[]string{"--payload", "10", "--mtu", "1500"}, "give one of them"},
		{[]string{"--payload", "10", "--proto", "sctp"}, "--proto"},
		{[]string{"--payload", "-5"}, "--payload: a payload of -5"},
		{[]string{"--payload", "10", "--proto", "udp", "--timestamps"}, "--timestamps"},
		{[]string{"--ipv6"}, "--ipv6"},
		{[]string{"--frame", "64", "--proto", "udp"}, "--proto"},
		{[]string{"--mtu", "1000", "--ipv6"}, "--mtu: MTU 1000"},
		{[]string{"--mps", "256"}, "--pcie"},
		{[]string{"--pcie", "gen6x1"}, "Gen6"},
		{[]string{"--pcie", "pcie2"}, "--pcie"},
		{[]string{"--pcie", "gen2x1", "--mps", "100"}, "--mps 100"},
		{[]string{"--pcie", "gen2x1", "--mrrs", "3"}, "--mrrs 3"},
		{[]string{"--root", "somewhere", "--speed", "1G"}, "--root"},
		{[]string{"--root", "/nonexistent/capture.tar.gz"}, "/nonexistent/capture.tar.gz"},
		{[]string{"extra"}, "extra"},
		{[]string{"--nonsense"}, "nonsense"},
	} {
		_, err := runCeilingArgs(t, c.args...)
		if err == nil {
			t.Errorf("ceiling %v: no error", c.args)
			continue
		}
		if !usage.Is(err) && !isCobraUsage(err) {
			t.Errorf("ceiling %v: %v is not bad input (exit 2)", c.args, err)
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, c.frag) {
			t.Errorf("ceiling %v: error %q should be one line naming %q", c.args, msg, c.frag)
		}
		if exitCode(err) != exitBadInput {
			t.Errorf("ceiling %v: exit code %d", c.args, exitCode(err))
		}
	}
}

func TestCeilingHelp(t *testing.T) {
	out, err := runCeilingArgs(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Examples:", "linerate ceiling --speed 1G --frame 64", "--pcie gen2x1", "measured 3.02 Gb/s, model 3.08 Gb/s (+2.1 %)", "measured 3.42 Gb/s, model 3.48 Gb/s (+1.8 %)", "--root"} {
		if !strings.Contains(out, w) {
			t.Errorf("help lacks %q", w)
		}
	}
	newCeilingCmd().Flags().VisitAll(func(f *pflag.Flag) {
		if strings.TrimSpace(f.Usage) == "" {
			t.Errorf("--%s has no help text", f.Name)
		}
	})
}

// TestCeilingLiveBox reports on this machine (read-only, no root needed):
// whatever it finds, the report prints and the JSON parses.
func TestCeilingLiveBox(t *testing.T) {
	out, err := runCeilingArgs(t)
	if err != nil {
		t.Fatalf("ceiling on this machine: %v", err)
	}
	if !strings.HasPrefix(out, "ceiling of ") || !strings.Contains(out, "assumptions:") {
		t.Errorf("box report:\n%s", out)
	}
	out, err = runCeilingArgs(t, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		NICs []struct {
			Name string `json:"name"`
		} `json:"nics"`
		Assumptions []string `json:"assumptions"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Assumptions) == 0 {
		t.Fatalf("JSON report: %v\n%s", err, out)
	}
	for _, n := range r.NICs {
		if n.Name == "lo" {
			t.Error("loopback listed")
		}
	}
}
