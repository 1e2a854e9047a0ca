package nsthread

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"linerate/internal/testenv"
	"linerate/internal/usage"
)

func init() {
	// Keeps the main goroutine on the main thread, so TestMain can call
	// lockThread from there.
	runtime.LockOSThread()
}

// handoff is the thread lockThread ran a function on when called from the
// main thread, in TestMain.
var handoff = struct{ caller, ran int }{}

func TestMain(m *testing.M) {
	ran := make(chan int, 1)
	handoff.caller = unix.Gettid()
	lockThread(func() { ran <- unix.Gettid() })
	handoff.ran = <-ran
	os.Exit(m.Run())
}

// TestNeverMainThread: called on the main thread, lockThread runs the
// function on another one, and gives the main thread back.
func TestNeverMainThread(t *testing.T) {
	pid := unix.Getpid()
	if handoff.caller != pid {
		t.Fatalf("TestMain ran on thread %d, not the main thread %d", handoff.caller, pid)
	}
	if handoff.ran == pid || handoff.ran == 0 {
		t.Errorf("lockThread on the main thread ran the function on thread %d (main is %d)", handoff.ran, pid)
	}
	// The runtime ends a locked thread after its goroutine returns, but
	// not at once: wait for the kernel to report it gone.
	var err error
	for range 200 {
		if err = unix.Tgkill(pid, handoff.ran, 0); errors.Is(err, unix.ESRCH) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(err, unix.ESRCH) {
		t.Errorf("thread %d still exists 2 s after its goroutine returned: %v", handoff.ran, err)
	}
	for range 20 {
		var tid int
		if err := Run(func() error { tid = unix.Gettid(); return nil }); err != nil {
			t.Fatal(err)
		}
		if tid == pid {
			t.Fatalf("Run used the main thread")
		}
	}
}

func TestOpenBadInput(t *testing.T) {
	for _, name := range []string{"", ".", "..", "../etc", "a/b", "x\x00y"} {
		if _, err := Open(name, Options{}); err == nil || !usage.Is(err) || errors.Is(err, ErrNotExist) {
			t.Errorf("Open(%q) = %v, want a bad-name error", name, err)
		}
		if Exists(name) {
			t.Errorf("Exists(%q)", name)
		}
	}
	_, err := Open("lrt-no-such-namespace", Options{})
	if !usage.Is(err) || !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "no network namespace lrt-no-such-namespace (have: ") {
		t.Errorf("Open of a missing namespace = %v", err)
	}
}

// pair is namespace a with veth nst0, its peer nst1 in namespace b.
func pair(t *testing.T) (a, b *testenv.NetNS) {
	t.Helper()
	a = testenv.NewNetNS(t)
	b = testenv.NewNetNS(t)
	testenv.Veth(t, a, "nst0", b, "nst1", 2)
	return a, b
}

func open(t *testing.T, name string, o Options) *Thread {
	t.Helper()
	th, err := Open(name, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { th.Close() })
	return th
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestDo: on the thread, /sys lists the namespace's interfaces, links
// under it resolve to plain /sys paths, sysfs takes writes, /proc/sys/net
// is the namespace's, and the thread is in the namespace.
func TestDo(t *testing.T) {
	a, _ := pair(t)
	th := open(t, a.Name, Options{})
	var (
		names    []string
		real     string
		nsIno    uint64
		hasConf  bool
		nestedOK bool
	)
	err := th.Do(func() error {
		ents, err := os.ReadDir("/sys/class/net")
		if err != nil {
			return err
		}
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if real, err = filepath.EvalSymlinks("/sys/class/net/nst0"); err != nil {
			return err
		}
		if err := os.WriteFile("/sys/class/net/nst0/tx_queue_len", []byte("321"), 0o644); err != nil {
			return err
		}
		_, err = os.Stat("/proc/sys/net/ipv4/conf/nst0")
		hasConf = err == nil
		var st unix.Stat_t
		if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
			return err
		}
		nsIno = st.Ino
		return th.Do(func() error { nestedOK = true; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"lo", "nst0"}) {
		t.Errorf("/sys/class/net on the thread = %v, want [lo nst0]", names)
	}
	if real != "/sys/devices/virtual/net/nst0" {
		t.Errorf("/sys/class/net/nst0 resolves to %q on the thread", real)
	}
	if !hasConf {
		t.Error("/proc/sys/net/ipv4/conf/nst0 missing on the thread")
	}
	if want := inode(t, "/var/run/netns/"+a.Name); nsIno != want {
		t.Errorf("thread in netns inode %d, want %d", nsIno, want)
	}
	if !nestedOK {
		t.Error("Do from inside Do did not run")
	}
	// Read back by other means: rtnetlink from outside.
	l, err := a.Netlink(t).LinkByName("nst0")
	if err != nil {
		t.Fatal(err)
	}
	if l.Attrs().TxQLen != 321 {
		t.Errorf("tx_queue_len written through the thread's sysfs: netlink says %d, want 321", l.Attrs().TxQLen)
	}
	if !errors.Is(th.Do(func() error { return io.EOF }), io.EOF) {
		t.Error("Do does not return fn's error")
	}
}

// TestHostUntouched: while a thread lives and after it ends, the rest of
// the process sees the host's /sys, network namespace and mounts.
func TestHostUntouched(t *testing.T) {
	a, _ := pair(t)
	netBefore := inode(t, "/proc/self/ns/net")
	mntBefore := inode(t, "/proc/self/ns/mnt")
	mountsBefore := sysfsMounts(t)
	th := open(t, a.Name, Options{})
	if err := th.Do(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/sys/class/net/nst0"); err == nil {
		t.Error("the host's /sys shows the namespace's nst0")
	}
	if _, err := os.Stat("/proc/sys/net/ipv4/conf/nst0"); err == nil {
		t.Error("the host's /proc/sys/net shows nst0")
	}
	if err := th.Close(); err != nil {
		t.Fatal(err)
	}
	if got := inode(t, "/proc/self/ns/net"); got != netBefore {
		t.Errorf("process network namespace changed: %d, was %d", got, netBefore)
	}
	if got := inode(t, "/proc/self/ns/mnt"); got != mntBefore {
		t.Errorf("process mount namespace changed: %d, was %d", got, mntBefore)
	}
	if got := sysfsMounts(t); got != mountsBefore {
		t.Errorf("sysfs mounts in the process's mount namespace: %d, were %d", got, mountsBefore)
	}
}

// TestSlaveMounts: the thread's mounts are slaves of the host's, so a
// namespace named on the host after the thread started (a bind mount under
// /var/run/netns) is seen there too, and its unbinding would be as well:
// the thread's mount namespace keeps no namespace alive.
func TestSlaveMounts(t *testing.T) {
	a, _ := pair(t)
	th := open(t, a.Name, Options{})
	later := testenv.NewNetNS(t)
	var st unix.Statfs_t
	err := th.Do(func() error { return unix.Statfs(filepath.Join(netnsDir, later.Name), &st) })
	if err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.NSFS_MAGIC {
		t.Errorf("%s on the thread is no namespace (filesystem %#x): host mounts do not reach the thread", later.Name, st.Type)
	}
}

func sysfsMounts(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, " - sysfs ") {
			n++
		}
	}
	return n
}

// TestThroughTid: other threads read the namespace's sysfs and /proc/net
// under /proc/PID/task/TID, the kernel following the relative links of
// sysfs inside the thread's mount namespace.
func TestThroughTid(t *testing.T) {
	a, _ := pair(t)
	h := a.Netlink(t)
	l, err := h.LinkByName("nst0")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetMTU(l, 1234); err != nil {
		t.Fatal(err)
	}
	th := open(t, a.Name, Options{})
	task := fmt.Sprintf("/proc/%d/task/%d", os.Getpid(), th.Tid())
	mtu, err := os.ReadFile(task + "/root/sys/class/net/nst0/mtu")
	if err != nil || strings.TrimSpace(string(mtu)) != "1234" {
		t.Errorf("mtu through %s/root: %q, %v", task, mtu, err)
	}
	target, err := os.Readlink(task + "/root/sys/class/net/nst0")
	if err != nil || !strings.HasSuffix(target, "/devices/virtual/net/nst0") {
		t.Errorf("link class/net/nst0 through %s/root: %q, %v", task, target, err)
	}
	dev, err := os.ReadFile(task + "/net/dev")
	if err != nil || !bytes.Contains(dev, []byte("nst0:")) {
		t.Errorf("%s/net/dev lacks nst0: %v\n%s", task, err, dev)
	}
}

// TestClose: Close waits for requests in flight, ends the thread, and
// every later Do is refused.
func TestClose(t *testing.T) {
	a, _ := pair(t)
	th, err := Open(a.Name, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tid := th.Tid()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if err := th.Do(func() error { return nil }); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	if err := th.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Do racing Close: %v", err)
		}
	}
	if err := unix.Tgkill(os.Getpid(), tid, 0); !errors.Is(err, unix.ESRCH) {
		t.Errorf("thread %d exists after Close: %v", tid, err)
	}
	if err := th.Do(func() error { t.Error("ran after Close"); return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Do after Close = %v", err)
	}
	if err := th.Start(exec.Command("true")); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close = %v", err)
	}
	if err := th.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestStart: a command started from the thread lives in its network
// namespace with its /sys and hosts file, also after the thread ended.
func TestStart(t *testing.T) {
	a, _ := pair(t)
	if _, err := os.Stat(hostsFile); err != nil {
		t.Skipf("this machine has no %s to cover", hostsFile)
	}
	hostsBefore, _ := os.ReadFile(hostsFile)
	hosts := []byte("10.99.0.2\tpeer\n")
	th, err := Enter(int(a.Handle), Options{Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	defer th.Close()
	cmd := exec.Command("sh", "-c", `read go; stat -c %h /etc/hosts; cat /etc/hosts; echo ---; ls /sys/class/net; echo ---; readlink /proc/self/ns/net`)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := th.Start(cmd); err != nil {
		t.Fatal(err)
	}
	// The command runs on after the thread is gone.
	if err := th.Close(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, "go\n")
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	parts := strings.Split(out.String(), "---\n")
	if len(parts) != 3 {
		t.Fatalf("output:\n%s", out.String())
	}
	// Link count 0: the temporary file's name is gone, the mount holds it.
	if want := "0\n" + string(hosts); parts[0] != want {
		t.Errorf("/etc/hosts in the command: %q, want %q", parts[0], want)
	}
	if got := strings.Fields(parts[1]); !slices.Equal(got, []string{"lo", "nst0"}) {
		t.Errorf("/sys/class/net in the command: %v", got)
	}
	if want := fmt.Sprintf("net:[%d]\n", inode(t, "/var/run/netns/"+a.Name)); parts[2] != want {
		t.Errorf("command's network namespace %q, want %q", parts[2], want)
	}
	if after, _ := os.ReadFile(hostsFile); !bytes.Equal(after, hostsBefore) {
		t.Errorf("the process's own %s changed", hostsFile)
	}
}

// TestEnterNotANamespace: a file that is no network namespace is refused
// and leaves no thread behind.
func TestEnterNotANamespace(t *testing.T) {
	testenv.RequireRoot(t)
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	th, err := Enter(int(f.Fd()), Options{})
	if err == nil {
		th.Close()
		t.Fatal("Enter on /dev/null succeeded")
	}
	if !errors.Is(err, unix.EINVAL) {
		t.Errorf("Enter on /dev/null: %v, want EINVAL", err)
	}
}

// BenchmarkDo is the round trip of one empty function through the thread.
func BenchmarkDo(b *testing.B) {
	a := testenv.NewNetNS(b)
	th, err := Open(a.Name, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer th.Close()
	for b.Loop() {
		th.Do(func() error { return nil })
	}
}

// BenchmarkOpen is starting a thread: unshare, setns, mount sysfs, and
// ending it.
func BenchmarkOpen(b *testing.B) {
	a := testenv.NewNetNS(b)
	for b.Loop() {
		th, err := Open(a.Name, Options{})
		if err != nil {
			b.Fatal(err)
		}
		th.Close()
	}
}
