package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"linerate/box"
	"linerate/internal/testenv"
	"linerate/report"
	"linerate/source"
	"linerate/source/ethtool"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden from the current inspect output")

// repoRoot is where testdata/ lives, seen from this package.
const repoRoot = "../.."

// buildLinerate builds the real binary into dir.
func buildLinerate(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "linerate")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as make release builds it
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs the binary from the repository root.
func run(t testing.TB, bin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = repoRoot
	return runCmd(t, cmd)
}

// runCmd runs cmd and gives what it wrote and its exit code; a command
// that could not run at all fails the test.
func runCmd(t testing.TB, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", cmd.Args, err)
	}
	return r
}

// fixtureCaptures lists testdata/captures entries that are captures: a
// directory with proc/, or a .tar.gz.
func fixtureCaptures(t testing.TB) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(repoRoot, "testdata", "captures"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		p := filepath.Join(repoRoot, "testdata", "captures", e.Name())
		if st, err := os.Stat(filepath.Join(p, "proc")); (err == nil && st.IsDir()) || strings.HasSuffix(e.Name(), ".tar.gz") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestInspectCommand runs the real binary: golden output over every
// fixture capture, bad input, and (as root) a network namespace.
func TestInspectCommand(t *testing.T) {
	bin := buildLinerate(t, t.TempDir())
	t.Run("golden", func(t *testing.T) { testGolden(t, bin) })
	t.Run("bad-input", func(t *testing.T) { testBadInput(t, bin) })
	t.Run("netns", func(t *testing.T) { testNetns(t, bin) })
	t.Run("degrade", func(t *testing.T) { testDegrade(t, bin) })
	t.Run("hostile", func(t *testing.T) { testHostile(t, bin) })
	t.Run("exit-paths", func(t *testing.T) { testExitPaths(t, bin) })
}

func testGolden(t *testing.T, bin string) {
	caps := fixtureCaptures(t)
	if len(caps) == 0 {
		t.Skip("no captures in testdata/captures")
	}
	for _, name := range caps {
		t.Run(name, func(t *testing.T) {
			root := "testdata/captures/" + name
			base := strings.TrimSuffix(name, ".tar.gz")
			for _, v := range []struct {
				ext  string
				args []string
			}{{".txt", []string{"inspect", "--root", root}}, {".json", []string{"inspect", "--json", "--root", root}}} {
				r := run(t, bin, v.args...)
				if r.code != 0 {
					t.Fatalf("linerate %v: exit %d: %s", v.args, r.code, r.stderr)
				}
				golden := filepath.Join(repoRoot, "testdata", "golden", base+v.ext)
				if *updateGolden {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, []byte(r.stdout), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run the test with -update to write it)", err)
				}
				if r.stdout != string(want) {
					t.Errorf("linerate %v differs from %s (run with -update after checking):\n%s",
						v.args, golden, firstDiff(string(want), r.stdout))
				}
			}
		})
	}
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + w + "\n  got:  " + g
		}
	}
	return ""
}

// badInput checks the one-line, exit-2 contract.
func badInput(t *testing.T, r result, want string) {
	t.Helper()
	if r.code != 2 {
		t.Errorf("exit %d, want 2 (stderr %q)", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Errorf("stderr = %q, want one line containing %q", r.stderr, want)
	}
	if strings.Contains(r.stderr, "goroutine") || strings.Contains(r.stderr, "panic") {
		t.Errorf("stderr shows a Go crash: %s", r.stderr)
	}
}

func testBadInput(t *testing.T, bin string) {
	tmp := t.TempDir()
	// A fresh capture of this machine to break in different ways.
	fresh := filepath.Join(tmp, "fresh")
	if r := run(t, bin, "capture", "--render", "-o", fresh); r.code != 0 {
		t.Fatalf("capture: exit %d: %s", r.code, r.stderr)
	}
	var iface string
	ents, _ := os.ReadDir(filepath.Join(fresh, "ethtool"))
	for _, e := range ents {
		if e.Name() != "lo" {
			iface = e.Name()
		}
	}
	if iface == "" {
		iface = "lo"
	}
	copyCapture := func(name string) string {
		dst := filepath.Join(tmp, name)
		if out, err := exec.Command("cp", "-a", fresh, dst).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		return dst
	}

	// A capture with garbage in a file still reads: testDegrade.
	noProc := copyCapture("noproc")
	os.RemoveAll(filepath.Join(noProc, "proc"))

	tarball := filepath.Join(tmp, "box.tar.gz")
	if r := run(t, bin, "capture", "--render", "-o", tarball); r.code != 0 {
		t.Fatalf("capture: exit %d: %s", r.code, r.stderr)
	}
	tb, _ := os.ReadFile(tarball)
	cut := filepath.Join(tmp, "cut.tar.gz")
	os.WriteFile(cut, tb[:len(tb)/2], 0o644)
	notTar := filepath.Join(tmp, "notes.tar.gz")
	os.WriteFile(notTar, []byte("these are my notes, not a capture\n"), 0o644)

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown interface", []string{"inspect", "eth9"}, "no interface eth9 (have: "},
		{"unknown interface in capture", []string{"inspect", "--root", fresh, "eth9"}, "no interface eth9 (have: "},
		{"missing capture", []string{"inspect", "--root", filepath.Join(tmp, "nope")}, "no such file or directory"},
		{"capture without proc", []string{"inspect", "--root", noProc}, "no proc/ directory"},
		{"truncated tarball", []string{"inspect", "--root", cut}, "gzip: unexpected EOF"},
		{"not a tarball", []string{"inspect", "--root", notTar}, "no gzip header"},
		{"root and netns", []string{"inspect", "--root", fresh, "--netns", "x"}, "exclude each other"},
		{"lab", []string{"inspect", "--lab", "lrt-no-such-lab", "--node", "a"}, "no lab named \"lrt-no-such-lab\""},
		{"lab without node", []string{"inspect", "--lab", "pair"}, "--lab and --node go together"},
		{"unknown netns", []string{"inspect", "--netns", "lrt-no-such-namespace"}, "no network namespace lrt-no-such-namespace"},
		{"bad flag", []string{"inspect", "--colour"}, "unknown flag"},
		{"negative samples", []string{"capture", "--samples", "-1", "-o", filepath.Join(tmp, "x")}, "--samples -1"},
		{"capture unknown interface", []string{"capture", "-o", filepath.Join(tmp, "y"), "eth9"}, "no interface eth9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, bin, c.args...)
			badInput(t, r, c.want)
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}

	// Missing files are not errors: inspect says what it could not read.
	t.Run("missing ethtool files", func(t *testing.T) {
		partial := copyCapture("partial")
		os.RemoveAll(filepath.Join(partial, "ethtool"))
		os.RemoveAll(filepath.Join(partial, "ip"))
		r := run(t, bin, "inspect", "--root", partial)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "channels    unknown: not in the capture") || !strings.Contains(r.stdout, "max unknown: not in the capture") {
			t.Errorf("output does not say the items are not in the capture:\n%s", r.stdout)
		}
	})
}

// testNetns sets channels and MTU on a veth in a namespace of its own and
// checks that inspect (live and from a capture of the namespace) reports
// exactly them.
func testNetns(t *testing.T, bin string) {
	a := testenv.NewNetNS(t)
	b := testenv.NewNetNS(t)
	testenv.Veth(t, a, "lrveth0", b, "lrveth1", 4)
	h := a.Netlink(t)
	l, err := h.LinkByName("lrveth0")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetMTU(l, 1400); err != nil {
		t.Fatal(err)
	}
	src, err := source.NewLiveNetns(a.Name)
	if err != nil {
		t.Fatal(err)
	}
	set, ok := src.Ethtool().(ethtool.Setter)
	if !ok {
		t.Fatal("the live ethtool client cannot change settings")
	}
	ch, err := src.Ethtool().Channels("lrveth0")
	if err != nil {
		t.Fatal(err)
	}
	ch.RX, ch.TX = 2, 3
	if err := set.SetChannels("lrveth0", ch); err != nil {
		t.Fatal(err)
	}
	src.Close()

	check := func(t *testing.T, args ...string) {
		r := run(t, bin, args...)
		if r.code != 0 {
			t.Fatalf("linerate %v: exit %d: %s", args, r.code, r.stderr)
		}
		var got box.Box
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.NICs) != 1 || got.NICs[0].Name != "lrveth0" {
			t.Fatalf("NICs = %+v", got.NICs)
		}
		n := got.NICs[0]
		if n.MTU != 1400 || n.MaxMTU == 0 || n.Kind != "veth" {
			t.Errorf("mtu %d max %d kind %q, want 1400, a maximum, veth", n.MTU, n.MaxMTU, n.Kind)
		}
		if n.Channels == nil || n.Channels.RX != 2 || n.Channels.TX != 3 || n.Channels.MaxRX != 4 {
			t.Errorf("channels = %+v, want rx 2 tx 3 of 4", n.Channels)
		}
		if len(n.RXQueues) != 2 || len(n.TXQueues) != 3 {
			t.Errorf("%d rx and %d tx queues in sysfs, want 2 and 3", len(n.RXQueues), len(n.TXQueues))
		}
		if n.Driver == nil || n.Driver.Driver != "veth" {
			t.Errorf("driver = %+v", n.Driver)
		}
	}
	t.Run("live", func(t *testing.T) { check(t, "inspect", "--json", "--netns", a.Name, "lrveth0") })
	t.Run("capture", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ns.tar.gz")
		if r := run(t, bin, "capture", "--netns", a.Name, "-o", dir, "--samples", "2", "--interval", "50ms"); r.code != 0 {
			t.Fatalf("capture: exit %d: %s", r.code, r.stderr)
		}
		check(t, "inspect", "--json", "--root", dir, "lrveth0")
	})
	t.Run("text", func(t *testing.T) {
		r := run(t, bin, "inspect", "--netns", a.Name, "lrveth0")
		if !strings.Contains(r.stdout, "mtu         1400 (min 68, max ") || !strings.Contains(r.stdout, "rx 2/4, tx 3/4") {
			t.Errorf("text output:\n%s", r.stdout)
		}
	})
}

// BenchmarkInspectCapture measures inspect (collect and print) of each
// fixture capture (cm4-i340 has 5 NICs, apu4 4 and lo) and of a synthetic
// 5-NIC capture: this machine's, with its NIC copied.
func BenchmarkInspectCapture(b *testing.B) {
	paths := map[string]string{}
	for _, name := range fixtureCaptures(b) {
		paths[name] = filepath.Join(repoRoot, "testdata", "captures", name)
	}
	paths["synthetic-5"] = ""
	for _, name := range slices.Sorted(maps.Keys(paths)) {
		b.Run(name, func(b *testing.B) {
			path := paths[name]
			if path == "" {
				path = syntheticCapture(b)
			}
			src, err := source.OpenCapture(path)
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			bx, err := box.Collect(context.Background(), src)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(bx.NICs)), "nics")
			b.ResetTimer()
			for b.Loop() {
				bx, err := box.Collect(context.Background(), src)
				if err != nil {
					b.Fatal(err)
				}
				if err := report.Inspect(io.Discard, bx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func syntheticCapture(b *testing.B) string {
	live, err := source.NewLive()
	if err != nil {
		b.Fatal(err)
	}
	defer live.Close()
	dir := filepath.Join(b.TempDir(), "cap")
	sink, err := source.DirSink(dir)
	if err != nil {
		b.Fatal(err)
	}
	if err := source.WriteCapture(context.Background(), live, sink, source.CaptureOptions{EthtoolCmd: "-", IPCmd: "-", Sysctls: box.Sysctls}); err != nil {
		b.Fatal(err)
	}
	names, err := live.Sys().NetDevices()
	if err != nil || len(names) == 0 {
		b.Fatal("no interfaces", err)
	}
	first := names[0]
	for _, n := range names {
		if n != "lo" {
			first = n
			break
		}
	}
	target, err := os.Readlink(filepath.Join(dir, "sys", "class", "net", first))
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; len(names)+i-1 < 5; i++ {
		name := "bench" + strconv.Itoa(i)
		if err := os.Symlink(target, filepath.Join(dir, "sys", "class", "net", name)); err != nil {
			b.Fatal(err)
		}
		if out, err := exec.Command("cp", "-a", filepath.Join(dir, "ethtool", first), filepath.Join(dir, "ethtool", name)).CombinedOutput(); err != nil {
			b.Fatal(err, string(out))
		}
	}
	return dir
}
