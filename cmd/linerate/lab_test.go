package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"linerate/internal/testenv"
	"linerate/lab"
)

// labStateDir is a state directory holding one planned (not built) router
// lab named "plan", enough for commands that only read state.
func labStateDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	l, err := lab.Plan(lab.Spec{Name: "plan", Topology: lab.Router})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLabBadInput(t *testing.T) {
	dir := labStateDir(t)
	sd := "--state-dir=" + dir
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lab", "up", "ring", sd}, `unknown topology "ring"`},
		{[]string{"lab", "up"}, "accepts 1 arg"},
		{[]string{"lab", "up", "star", "--ports", "0", sd}, "--ports 0"},
		{[]string{"lab", "up", "star", "--ports", "300", sd}, "--ports 300"},
		{[]string{"lab", "up", "router", "--ports", "3", sd}, "--ports is for the star"},
		{[]string{"lab", "up", "pair", "--mtu", "10", sd}, "--mtu 10"},
		{[]string{"lab", "up", "pair", "--mtu", "0", sd}, "--mtu 0"},
		{[]string{"lab", "up", "pair", "--mtu", "big", sd}, "--mtu"},
		{[]string{"lab", "up", "pair", "--queues", "0", sd}, "--queues 0"},
		{[]string{"lab", "up", "pair", "--rate", "fast", sd}, `--rate: bad speed "fast"`},
		{[]string{"lab", "up", "pair", "--rate", "10k", sd}, "--rate 10K: want 1M"},
		{[]string{"lab", "up", "pair", "--name", "My_Lab", sd}, `lab name "My_Lab"`},
		{[]string{"lab", "up", "pair", "--name", strings.Repeat("x", 21), sd}, "too long"},
		{[]string{"lab", "up", "pair", "--subnet", "10.300.0.0/16", sd}, `--subnet "10.300.0.0/16"`},
		{[]string{"lab", "up", "star", "--ports", "64", "--subnet", "10.0.0.0/24", sd}, "room for 63 links"},
		{[]string{"lab", "up", "router", "--name", "plan", sd}, "lab plan exists but is incomplete"},
		{[]string{"lab", "exec", sd, "plan", "dmz", "--", "true"}, `no node "dmz": its nodes are lan, router, wan`},
		{[]string{"lab", "exec", sd, "nolab", "lan", "--", "true"}, `no lab named "nolab"`},
		{[]string{"lab", "exec", sd, "plan", "lan", "--"}, "no command after --"},
		{[]string{"lab", "exec", sd, "plan", "lan", "--", "no-such-command-here"}, "not found in $PATH"},
		{[]string{"lab", "exec", "plan", "lan"}, "requires at least 3 arg"},
		{[]string{"lab", "down", sd}, "name a lab"},
		{[]string{"lab", "down", "plan", "--all", sd}, "not both"},
		{[]string{"lab", "down", "nolab", sd}, `no lab named "nolab"`},
		{[]string{"lab", "down", "../etc", sd}, `lab name "../etc"`},
		{[]string{"lab", "addr", "plan", "dmz", sd}, `no node "dmz"`},
		{[]string{"lab", "addr", "plan", "wan", "--from", "dmz", sd}, `no node "dmz"`},
		{[]string{"lab", "list", "extra", sd}, "unknown command"},
	} {
		_, err := runArgs(t, tc.args...)
		if err == nil {
			t.Errorf("%v: no error, want %q", tc.args, tc.want)
			continue
		}
		if code := exitCode(err); code != exitBadInput || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: exit %d, error %q; want exit 2 and one line with %q", tc.args, code, err, tc.want)
		}
	}
}

func TestLabReadCommands(t *testing.T) {
	sd := "--state-dir=" + labStateDir(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lab", "addr", "plan", "router", sd}, "10.231.1.1\n10.231.2.1\n"},
		{[]string{"lab", "addr", "plan", "router", "--from", "wan", sd}, "10.231.2.1\n"},
		{[]string{"lab", "addr", "plan", "wan", "--from", "lan", sd}, "10.231.2.2\n"},
	} {
		out, err := runArgs(t, tc.args...)
		if err != nil || out != tc.want {
			t.Errorf("%v: %q, %v; want %q", tc.args, out, err, tc.want)
		}
	}
	out, err := runArgs(t, "lab", "list", sd)
	if err != nil || !strings.Contains(out, "plan  router    incomplete  lan,router,wan  10.231.0.0/16") {
		t.Errorf("lab list: %v\n%s", err, out)
	}
	out, err = runArgs(t, "lab", "list", "--json", "--state-dir="+t.TempDir())
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("lab list --json of no labs: %q, %v", out, err)
	}
	lc := findCmd(t, "lab")
	var visible []string
	for _, c := range lc.Commands() {
		if !c.Hidden {
			visible = append(visible, c.Name())
		}
	}
	if strings.Join(visible, " ") != "addr down exec image list reboot up" {
		t.Errorf("lab's subcommands: %v, want addr down exec image list reboot up (and hidden ones)", visible)
	}
	for _, c := range append([]*cobra.Command{lc}, lc.Commands()...) {
		if c.Example == "" {
			t.Errorf("%s has no example", c.CommandPath())
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Usage == "" {
				t.Errorf("%s --%s has no help", c.CommandPath(), f.Name)
			}
		})
	}
}

// TestLabCommands builds a pair through the command line, lists it, runs a
// command in it and takes it down.
func TestLabCommands(t *testing.T) {
	testenv.RequireRoot(t)
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := "c" + hex.EncodeToString(b[:])
	dir := t.TempDir()
	sd := "--state-dir=" + dir
	t.Cleanup(func() {
		if _, err := lab.Dir(dir).Load(name); err == nil {
			if err := lab.Dir(dir).Down(name); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	out, err := runArgs(t, "lab", "up", "pair", "--name", name, "--mtu", "9000", "--rate", "2.5G", "--subnet", "192.168.231.0/24", sd)
	if err != nil {
		t.Fatalf("lab up: %v\n%s", err, out)
	}
	for _, s := range []string{"lab " + name + " (pair): up; subnet 192.168.231.0/24, mtu 9000", "capped at 2.5Gbit/s", "lr-" + name + "-a", "192.168.231.5/30"} {
		if !strings.Contains(out, s) {
			t.Errorf("lab up output lacks %q:\n%s", s, out)
		}
	}
	out, err = runArgs(t, "lab", "list", "--json", sd)
	var labs []lab.Lab
	if err != nil || json.Unmarshal([]byte(out), &labs) != nil || len(labs) != 1 || labs[0].Spec.Rate != 2.5e9 || !labs[0].Complete {
		t.Errorf("lab list --json: %v\n%s", err, out)
	}
	out, err = runArgs(t, "lab", "exec", sd, name, "a", "--", "cat", "/sys/class/net/b/mtu")
	if err != nil || out != "9000\n" {
		t.Errorf("lab exec: %q, %v", out, err)
	}
	out, err = runArgs(t, "lab", "down", name, sd)
	if err != nil || out != "lab "+name+" is down\n" {
		t.Errorf("lab down: %q, %v", out, err)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", "lr-"+name+"-a")); !os.IsNotExist(err) {
		t.Errorf("namespace left after lab down: %v", err)
	}
}
