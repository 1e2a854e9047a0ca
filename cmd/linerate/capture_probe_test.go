package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"linerate/box"
)

// The probes of issue 11 (hostile captures), run against the real binary.
// Each run gets a TMPDIR of its own, so that "no extraction directory is
// left behind" is checked exactly, whatever else runs on the machine.

// probe is one run of the binary over a capture.
type probe struct {
	result
	maxRSSKiB int64
	tmp       string // the TMPDIR it ran with
}

// runProbe runs linerate ARGS with a TMPDIR of its own and fails the test
// if it has not ended after a long while: a hostile capture must never
// make it hang.
func runProbe(t *testing.T, bin string, args ...string) probe {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := probe{tmp: t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+p.tmp)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("linerate %v hung (killed after 2 minutes)", args)
	}
	p.stdout, p.stderr = out.String(), errb.String()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		p.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run linerate %v: %v", args, err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		p.maxRSSKiB = int64(ru.Maxrss)
	}
	p.leftBehind(t)
	if strings.Contains(p.stderr, "goroutine ") || strings.Contains(p.stderr, "panic:") {
		t.Errorf("linerate %v crashed:\n%s", args, p.stderr)
	}
	return p
}

// leftBehind fails the test for an extraction directory left in p.tmp.
func (p probe) leftBehind(t *testing.T) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(p.tmp, "linerate-capture-*"))
	if len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// smallMemory fails the test when the run needed more than a capture
// ever should: the probes below held gigabytes before issue 11.
func (p probe) smallMemory(t *testing.T) {
	t.Helper()
	if p.maxRSSKiB > 200<<10 {
		t.Errorf("peak RSS %d MiB, want under 200 MiB", p.maxRSSKiB>>10)
	}
}

// freshCapture writes a capture of this machine into a new directory.
func freshCapture(t *testing.T, bin string) (dir, iface string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "box")
	if r := run(t, bin, "capture", "--render", "-o", dir); r.code != 0 {
		t.Fatalf("capture: exit %d: %s", r.code, r.stderr)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "ethtool"))
	for _, e := range ents {
		if iface == "" || e.Name() != "lo" {
			iface = e.Name()
		}
	}
	return dir, iface
}

// replace puts a fresh file, link or pipe where rel was.
func replace(t *testing.T, dir, rel string, make func(p string) error) {
	t.Helper()
	p := filepath.Join(dir, rel)
	os.RemoveAll(p)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := make(p); err != nil {
		t.Fatal(err)
	}
}

func symlinkTo(target string) func(string) error {
	return func(p string) error { return os.Symlink(target, p) }
}

// testDegrade: a mangled ethtool file and a truncated /proc line make those
// values unknown (the truncated line of net/dev: that one interface's
// counters); inspect prints everything else, exits 0 and names the file and
// line of each.
func testDegrade(t *testing.T, bin string) {
	dir, iface := freshCapture(t, bin)
	replace(t, dir, "ethtool/"+iface+"/g.txt", func(p string) error {
		return os.WriteFile(p, []byte("Ring parameters for "+iface+":\nPre-set maximums:\nRX:\t\t4096\nTX:\t\tlots\nCurrent hardware settings:\nRX:\t\t512\n\x00\xff\xfe\nTX:\t\t512\n"), 0o644)
	})
	replace(t, dir, "ethtool/"+iface+"/k.txt", func(p string) error {
		return os.WriteFile(p, []byte("this is not ethtool output\n"), 0o644)
	})
	netdev := filepath.Join(dir, "proc", "net", "dev")
	b, err := os.ReadFile(netdev)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(netdev, b[:len(b)-20], 0o644)

	p := runProbe(t, bin, "inspect", "--root", dir)
	if p.code != 0 {
		t.Fatalf("exit %d, want 0: %s", p.code, p.stderr)
	}
	for _, want := range []string{
		// The values read, around the ones that could not be.
		"rings       rx 512/4096, tx 512/0",
		"\nbox\n", "net.core.rmem_max",
		"offloads    unknown: unreadable: ethtool/" + iface + "/k.txt:1: no \"feature: on|off\" line",
		// The warnings, by file and line.
		"warning: ethtool/" + iface + "/g.txt:4: " + iface + " rings, Pre-set maximums TX: want a number or n/a, got \"lots\"",
		"warning: ethtool/" + iface + "/g.txt:7: " + iface + " rings: not a line ethtool prints here",
		"warning: ethtool/" + iface + "/k.txt:1: " + iface + " features: no \"feature: on|off\" line",
		"warning: proc/net/dev:",
	} {
		if !strings.Contains(p.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, p.stdout)
		}
	}
	if lines := strings.Split(strings.TrimSpace(p.stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "warning: 4 thing(s) in capture") {
		t.Errorf("stderr = %q, want one warning line", p.stderr)
	}
	j := runProbe(t, bin, "inspect", "--json", "--root", dir)
	var got box.Box
	if err := json.Unmarshal([]byte(j.stdout), &got); err != nil || j.code != 0 {
		t.Fatalf("--json: exit %d, %v", j.code, err)
	}
	found := false
	for _, w := range got.Warnings {
		found = found || (w.File == "ethtool/"+iface+"/g.txt" && w.Line == 4 && w.Value == "Pre-set maximums TX" && w.Item == iface+" rings")
	}
	if len(got.Warnings) != 4 || !found {
		t.Errorf("JSON warnings = %+v", got.Warnings)
	}
	// The last line of net/dev was cut: its interface is left out, the
	// others are counted.
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	cut, _, _ := strings.Cut(strings.TrimSpace(lines[len(lines)-1]), ":")
	if got.Counters == nil || len(got.Counters.NetDev) != len(lines)-3 {
		t.Fatalf("counters = %+v, want net/dev's %d interfaces but %s", got.Counters, len(lines)-3, cut)
	}
	if _, ok := got.Counters.NetDev[cut]; ok {
		t.Errorf("counters of %s were read from a cut line", cut)
	}
}

// testHostile runs the probes of issue 11 against directory and tarball
// captures.
func testHostile(t *testing.T, bin string) {
	t.Run("symlink to a secret", func(t *testing.T) {
		dir, _ := freshCapture(t, bin)
		secret := filepath.Join(t.TempDir(), "shadow")
		os.WriteFile(secret, []byte("root:$6$do-not-print-me$:19000:0:99999:7:::\n"), 0o600)
		replace(t, dir, "proc/sys/net/core/rmem_max", symlinkTo("/etc/shadow"))
		replace(t, dir, "proc/sys/net/core/wmem_max", symlinkTo(secret))
		// A relative link that climbs out counts the same.
		replace(t, dir, "proc/sys/net/core/rmem_default", symlinkTo(strings.Repeat("../", 20)+strings.TrimPrefix(secret, "/")))
		shadow, _ := os.ReadFile("/etc/shadow")
		for _, args := range [][]string{{"inspect", "--root", dir}, {"inspect", "--json", "--root", dir}} {
			p := runProbe(t, bin, args...)
			if p.code != 0 {
				t.Fatalf("%v: exit %d: %s", args, p.code, p.stderr)
			}
			out := p.stdout + p.stderr
			if strings.Contains(out, "do-not-print-me") || (len(shadow) > 0 && strings.Contains(out, strings.SplitN(string(shadow), "\n", 2)[0])) {
				t.Fatalf("%v printed a file from outside the capture:\n%s", args, out)
			}
			if args[1] != "--json" {
				for _, f := range []string{"rmem_max", "wmem_max", "rmem_default"} {
					if !strings.Contains(out, "warning: proc/sys/net/core/"+f+": sysctl net.core."+f+": refused: a symbolic link on the way leads out of the capture\n") {
						t.Errorf("%s not shown as refused:\n%s", f, out)
					}
				}
				continue
			}
			var b box.Box
			if err := json.Unmarshal([]byte(p.stdout), &b); err != nil {
				t.Fatal(err)
			}
			refused := map[string]bool{}
			for _, w := range b.Warnings {
				if strings.HasPrefix(w.Why, "refused: a symbolic link") {
					refused[w.File] = true
				}
			}
			if len(refused) != 3 {
				t.Errorf("JSON warnings = %+v, want the three links refused", b.Warnings)
			}
		}
	})
	t.Run("link to /dev/zero", func(t *testing.T) {
		dir, iface := freshCapture(t, bin)
		replace(t, dir, "proc/interrupts", symlinkTo("/dev/zero"))
		replace(t, dir, "ethtool/"+iface+"/S.txt", symlinkTo("../../../../../../../../../dev/zero"))
		p := runProbe(t, bin, "inspect", "--root", dir)
		if p.code != 0 || !strings.Contains(p.stdout, "warning: proc/interrupts: interrupts: refused: a symbolic link on the way leads out of the capture") ||
			!strings.Contains(p.stdout, "warning: ethtool/"+iface+"/S.txt: "+iface+" stats: refused: a symbolic link") {
			t.Errorf("exit %d:\n%s%s", p.code, p.stdout, p.stderr)
		}
		p.smallMemory(t)
	})
	t.Run("3 GB sparse file", func(t *testing.T) {
		dir, _ := freshCapture(t, bin)
		replace(t, dir, "proc/sys/net/core/netdev_max_backlog", func(p string) error { return os.Truncate(createEmpty(p), 3<<30) })
		p := runProbe(t, bin, "inspect", "--root", dir)
		if p.code != 0 || !strings.Contains(p.stdout, "warning: proc/sys/net/core/netdev_max_backlog: sysctl net.core.netdev_max_backlog: refused: 3221225472 bytes, more than the 16 MiB one file may hold") {
			t.Errorf("exit %d:\n%s%s", p.code, p.stdout, p.stderr)
		}
		p.smallMemory(t)
	})
	t.Run("named pipes", func(t *testing.T) {
		dir, iface := freshCapture(t, bin)
		mkfifo := func(p string) error { return unix.Mkfifo(p, 0o644) }
		replace(t, dir, "proc/net/dev", mkfifo)
		replace(t, dir, "ethtool/"+iface+"/S.txt", mkfifo)
		replace(t, dir, "proc/sys/net/core/rmem_max", mkfifo)
		os.MkdirAll(filepath.Join(dir, "samples", "000", "proc", "net"), 0o755)
		os.WriteFile(filepath.Join(dir, "samples", "000", "time"), []byte(time.Now().Format(time.RFC3339Nano)+"\n"), 0o644)
		replace(t, dir, "samples/000/proc/stat", mkfifo)
		p := runProbe(t, bin, "inspect", "--root", dir)
		if p.code != 0 || !strings.Contains(p.stdout, "warning: proc/net/dev: counters: refused: a named pipe (FIFO), not a regular file") ||
			!strings.Contains(p.stdout, "warning: ethtool/"+iface+"/S.txt: "+iface+" stats: refused: a named pipe") ||
			!strings.Contains(p.stdout, "warning: proc/sys/net/core/rmem_max: sysctl net.core.rmem_max: refused: a named pipe") {
			t.Errorf("inspect: exit %d:\n%s%s", p.code, p.stdout, p.stderr)
		}
		// diagnose reads the samples too: it ends, saying why it cannot.
		d := runProbe(t, bin, "diagnose", "--root", dir)
		if d.code != 2 || !strings.Contains(d.stderr, "samples/000/proc/stat: refused: a named pipe") {
			t.Errorf("diagnose: exit %d:\n%s%s", d.code, d.stdout, d.stderr)
		}
		// A saved bench result is read by the same rules.
		fifo := filepath.Join(dir, "result.json")
		unix.Mkfifo(fifo, 0o644)
		for _, f := range []string{fifo, "/dev/zero"} {
			r := runProbe(t, bin, "diagnose", f)
			if r.code != 2 || !strings.Contains(r.stderr, f+": refused: a ") {
				t.Errorf("diagnose %s: exit %d:\n%s%s", f, r.code, r.stdout, r.stderr)
			}
		}
	})
	t.Run("long lines", func(t *testing.T) {
		// A line of megabytes in a file of each parser: the item is
		// unknown, the warning names the line, and quotes little of it.
		dir, iface := freshCapture(t, bin)
		long := strings.Repeat("X", 5<<20)
		for rel, text := range map[string]string{
			"proc/softirqs":               "                    CPU0\n" + long + "\n",
			"ethtool/" + iface + "/x.txt": "RX flow hash indirection table for " + iface + " with 1 RX ring(s):\n" + long + "\n",
			"ethtool/" + iface + "/g.txt": "Ring parameters for " + iface + ":\nPre-set maximums:\nRX:\t\t" + long + "\n",
			"ip/link.txt":                 long + "\n",
		} {
			replace(t, dir, rel, func(p string) error { return os.WriteFile(p, []byte(text), 0o644) })
		}
		p := runProbe(t, bin, "inspect", "--root", dir)
		if p.code != 0 || len(p.stdout) > 64<<10 {
			t.Fatalf("exit %d, %d bytes of output", p.code, len(p.stdout))
		}
		for _, want := range []string{
			"warning: proc/softirqs:2: counters: no \"NAME:\" label in \"XXXX",
			"warning: ethtool/" + iface + "/x.txt:2: " + iface + " rss: a line longer than 4194304 bytes",
			"warning: ethtool/" + iface + "/g.txt:3: " + iface + " rings: a line longer than 4194304 bytes",
			"warning: ip/link.txt:1: " + iface + " MTU range: a line longer than 1048576 bytes",
		} {
			if !strings.Contains(p.stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, p.stdout)
			}
		}
	})
	t.Run("tar bomb", func(t *testing.T) {
		// A 1 MB tarball holding a 1000 MB sysctl file.
		bomb := filepath.Join(t.TempDir(), "bomb.tar.gz")
		writeTarGz(t, bomb, map[string]int64{"box/proc/stat": 0, "box/proc/sys/net/core/rmem_max": 1000 << 20})
		if st, _ := os.Stat(bomb); st.Size() > 2<<20 {
			t.Fatalf("the bomb is %d bytes, want about 1 MB", st.Size())
		}
		p := runProbe(t, bin, "inspect", "--root", bomb)
		if p.code != 2 || !strings.Contains(p.stderr, "entry box/proc/sys/net/core/rmem_max: 1048576000 bytes, more than the 16777216 a capture file may hold") {
			t.Errorf("exit %d: %s", p.code, p.stderr)
		}
		p.smallMemory(t)
	})
}

// createEmpty creates an empty file and returns its path.
func createEmpty(p string) string {
	if f, err := os.Create(p); err == nil {
		f.Close()
	}
	return p
}

// writeTarGz writes a tarball of files of zeros (name → size).
func writeTarGz(t *testing.T, path string, files map[string]int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	zeros := make([]byte, 1<<20)
	for name, size := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		for left := size; left > 0; left -= int64(len(zeros)) {
			if _, err := tw.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		t.Fatal(err)
	}
}

// tarDir packs the directory src as a .tar.gz under the top directory
// "box", with junk more empty files in it.
func tarDir(t *testing.T, src, dst string, junk int) {
	t.Helper()
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(src, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		link := ""
		if st.Mode()&os.ModeSymlink != 0 {
			link, _ = os.Readlink(p)
		}
		h, err := tar.FileInfoHeader(st, link)
		if err != nil {
			return err
		}
		h.Name = filepath.Join("box", rel)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if st.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range junk {
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("box/junk/%d", i), Mode: 0o644, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		t.Fatal(err)
	}
}

// testExitPaths: the extraction directory of a tarball is removed when the
// reader of the output goes away (SIGPIPE) and on SIGTERM.
func testExitPaths(t *testing.T, bin string) {
	tarball := filepath.Join(t.TempDir(), "box.tar.gz")
	if r := run(t, bin, "capture", "--render", "-o", tarball); r.code != 0 {
		t.Fatalf("capture: exit %d: %s", r.code, r.stderr)
	}
	t.Run("SIGPIPE", func(t *testing.T) {
		tmp := t.TempDir()
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		pr.Close() // nobody will read: the first write fails
		cmd := exec.Command(bin, "inspect", "--root", tarball)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		cmd.Stdout = pw
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err = cmd.Run()
		pw.Close()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitBrokenPipe {
			t.Errorf("exit %v, want %d (stderr %q)", err, exitBrokenPipe, errb.String())
		}
		probe{tmp: tmp}.leftBehind(t)
	})
	t.Run("SIGTERM", func(t *testing.T) {
		// A capture with many small files, so that unpacking it takes a
		// while.
		dir, _ := freshCapture(t, bin)
		big := filepath.Join(t.TempDir(), "big.tar.gz")
		tarDir(t, dir, big, 20000)
		// The signal must land while the capture is open; if the run was
		// over first, try again.
		for try := 0; try < 5; try++ {
			tmp := t.TempDir()
			cmd := exec.Command(bin, "inspect", "--root", big)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// Signal once the extraction directory appears.
			var err error
		wait:
			for {
				select {
				case err = <-done:
					break wait // ended before the directory was seen
				default:
				}
				if m, _ := filepath.Glob(filepath.Join(tmp, "linerate-capture-*")); len(m) > 0 {
					cmd.Process.Signal(syscall.SIGTERM)
					err = <-done
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
			probe{tmp: tmp}.leftBehind(t)
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == exitInterrupted {
				return
			}
			t.Logf("try %d: %v (the run ended before the signal)", try, err)
		}
		t.Error("never got exit 130 after SIGTERM")
	})
}
