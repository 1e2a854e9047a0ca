package drivertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/lab"
	"linerate/lab/vm"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveLinerate()
	os.Exit(code)
}

// requireVM skips without root and fails without what make deps installs
// (a root test that skips where the feature should work hides a failure).
func requireVM(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	if _, err := vm.FindQEMU(); err != nil {
		t.Fatal(err)
	}
	if _, err := vm.FindKernel(); err != nil {
		t.Fatal(err)
	}
}

// vmLab is a lab up for one test, through the real binary.
type vmLab struct {
	t     *testing.T
	bin   string
	dir   string
	name  string
	start time.Time
}

// labName is prefix with a random suffix: a lab's namespaces are
// machine-wide, and a run killed before its cleanup (CI's deadline, a
// SIGKILL) must not leave a name the next run needs.
func labName(prefix string) string {
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// newLab is a lab named after prefix (labName), not yet up, in a state
// directory of its own, downed and checked when the test ends.
func newLab(t *testing.T, prefix string) *vmLab {
	t.Helper()
	requireVM(t)
	l := &vmLab{t: t, bin: testenv.Linerate(t), dir: t.TempDir(), name: labName(prefix), start: time.Now()}
	t.Cleanup(func() { l.down() })
	return l
}

// upLab runs lab up with args (the topology, then flags) under a name
// made from prefix, and downs it when the test ends, checking that
// nothing of it is left: no QEMU, no namespace.
func upLab(t *testing.T, prefix string, args ...string) *vmLab {
	t.Helper()
	l := newLab(t, prefix)
	r := l.run(append(append([]string{"lab", "--state-dir", l.dir, "up"}, args...), "--name", l.name)...)
	if r.code != 0 {
		t.Fatalf("lab up %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	t.Logf("lab up %s in %s:\n%s", strings.Join(args, " "), time.Since(l.start).Round(10*time.Millisecond), r.stdout)
	return l
}

// down removes the lab and checks that it took everything with it.
func (l *vmLab) down() {
	t := l.t
	r := l.run("lab", "--state-dir", l.dir, "down", l.name)
	if r.code != 0 && !strings.Contains(r.stderr, "no lab named") {
		t.Errorf("lab down %s: exit %d: %s", l.name, r.code, r.stderr)
	}
	out, _ := exec.Command("pgrep", "-af", "(qemu|vm-supervise).*"+l.dir).Output()
	if len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("processes of lab %s left: %s", l.name, out)
	}
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), lab.NetnsName(l.name, "")) {
			t.Errorf("namespace %s left after lab down", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(l.dir, l.name+".vm")); err == nil {
		t.Errorf("guest files of %s left after lab down", l.name)
	}
}

type result struct {
	stdout, stderr string
	code           int
}

func (l *vmLab) run(args ...string) result {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.bin, args...)
	cmd.Env = append(os.Environ(), lab.EnvCacheDir+"="+cacheDir(l.t), lab.EnvDir+"="+l.dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		l.t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return result{out.String(), errb.String(), code}
}

// exec runs argv inside node through lab exec. "linerate" is the binary
// under test: a namespace node runs it by its path on the host, a guest
// looks that path up by its base name and runs its own copy of it.
func (l *vmLab) exec(node string, argv ...string) result {
	l.t.Helper()
	if argv[0] == "linerate" {
		argv = append([]string{l.bin}, argv[1:]...)
	}
	return l.run(append([]string{"lab", "--state-dir", l.dir, "exec", l.name, node, "--"}, argv...)...)
}

// must runs argv inside node and fails the test unless it exits 0.
func (l *vmLab) must(node string, argv ...string) string {
	l.t.Helper()
	r := l.exec(node, argv...)
	if r.code != 0 {
		l.t.Fatalf("%s in %s: exit %d\n%s%s", strings.Join(argv, " "), node, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// cacheDir is where the guests' images are kept: the machine's cache, so
// that the Debian image is built once, not once per run.
func cacheDir(t *testing.T) string { return lab.CacheDir() }

// inspectNIC is the part of inspect --json the tests read.
type inspectNIC struct {
	Name   string `json:"name"`
	Driver struct {
		Driver string `json:"driver"`
	} `json:"driver"`
	MaxMTU   int   `json:"max_mtu"`
	IRQs     []int `json:"irqs"`
	Channels *struct {
		MaxCombined int `json:"max_combined"`
		Combined    int `json:"combined"`
	} `json:"channels"`
	Rings *struct {
		RX int `json:"rx"`
		TX int `json:"tx"`
	} `json:"rings"`
	Coalesce *struct {
		Params map[string]int `json:"params"`
	} `json:"coalesce"`
	RSS *struct {
		Indirection []int `json:"indirection"`
	} `json:"rss"`
}

type inspectIRQ struct {
	Number int    `json:"number"`
	NIC    string `json:"nic"`
	Ref    string `json:"ref"`
	Name   string `json:"name"`
}

type inspectBox struct {
	NICs []inspectNIC `json:"nics"`
	IRQs []inspectIRQ `json:"irqs"`
}

// inspect runs linerate inspect --json in node.
func (l *vmLab) inspect(node string) inspectBox {
	l.t.Helper()
	var b inspectBox
	out := l.must(node, "linerate", "inspect", "--json")
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		l.t.Fatalf("inspect --json in %s: %v\n%s", node, err, out)
	}
	return b
}

// irqRefs are the names inspect gives the interrupts of iface.
func (b inspectBox) irqRefs(iface string) map[string]int {
	refs := map[string]int{}
	for _, q := range b.IRQs {
		if q.NIC == iface {
			refs[q.Ref] = q.Number
		}
	}
	return refs
}

func (b inspectBox) nic(t *testing.T, name string) inspectNIC {
	for _, n := range b.NICs {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("inspect shows no NIC %s", name)
	return inspectNIC{}
}

// captured runs capture in node and reads the capture back with inspect
// --root, there: the same driver and the same IRQ names as live.
func (l *vmLab) captured(node, iface, driver string) {
	l.t.Helper()
	l.must(node, "linerate", "capture", "-o", "/tmp/capture.tar.gz", "--samples", "1")
	var b inspectBox
	out := l.must(node, "linerate", "inspect", "--root", "/tmp/capture.tar.gz", "--json")
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		l.t.Fatalf("inspect --root of the capture: %v", err)
	}
	if d := b.nic(l.t, iface).Driver.Driver; d != driver {
		l.t.Errorf("the capture's %s has driver %q, want %s", iface, d, driver)
	}
	live := l.inspect(node).irqRefs(iface)
	if got := b.irqRefs(iface); len(got) == 0 || len(got) != len(live) {
		l.t.Errorf("the capture names IRQs %v, live %v", got, live)
	}
}
