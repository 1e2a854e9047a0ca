package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	"linerate/internal/usage"
)

// readCPIO parses a newc archive the way the kernel's unpacker does
// (init/initramfs.c): headers of 13 hexadecimal fields, names and data
// padded to four bytes, up to TRAILER!!!.
func readCPIO(t *testing.T, b []byte) map[string]cpioFileSpec {
	t.Helper()
	out := map[string]cpioFileSpec{}
	off := 0
	align := func() { off = (off + 3) &^ 3 }
	for {
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			t.Fatalf("no newc header at %d", off)
		}
		field := func(i int) int {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatalf("header at %d field %d: %v", off, i, err)
			}
			return int(v)
		}
		mode, size, nameSize := field(1), field(6), field(11)
		name := string(b[off+110 : off+110+nameSize-1])
		if b[off+110+nameSize-1] != 0 {
			t.Fatalf("%s: name not NUL-terminated", name)
		}
		off += 110 + nameSize
		align()
		data := b[off : off+size]
		off += size
		align()
		if name == "TRAILER!!!" {
			return out
		}
		f := cpioFileSpec{path: name, mode: os.FileMode(mode & 0o777)}
		if mode&0o170000 == cpioLink {
			f.link = string(data)
		} else {
			f.data = data
		}
		if _, dup := out[name]; dup {
			t.Errorf("%s twice in the archive", name)
		}
		out[name] = f
	}
}

func TestCPIO(t *testing.T) {
	var buf bytes.Buffer
	c := newCPIO(&buf)
	c.file("/etc/linerate/rcS", 0o755, []byte("#!/bin/sh\n"))
	c.file("/bin/x", 0o644, []byte("12345"))
	c.symlink("/usr/local/bin/linerate", "/bin/linerate")
	c.mkdirAll("etc")
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive of %d bytes: not padded to 4", buf.Len())
	}
	got := readCPIO(t, buf.Bytes())
	for _, d := range []string{"etc", "etc/linerate", "bin", "usr", "usr/local", "usr/local/bin"} {
		if _, ok := got[d]; !ok {
			t.Errorf("directory %s missing (parents come before their files)", d)
		}
	}
	if f := got["etc/linerate/rcS"]; string(f.data) != "#!/bin/sh\n" || f.mode != 0o755 {
		t.Errorf("rcS: %q %o", f.data, f.mode)
	}
	if f := got["bin/x"]; string(f.data) != "12345" || f.mode != 0o644 {
		t.Errorf("x: %q %o", f.data, f.mode)
	}
	if f := got["usr/local/bin/linerate"]; f.link != "/bin/linerate" {
		t.Errorf("link: %+v", f)
	}
}

// modulesDep is a piece of a real modules.dep (Debian's 6.1.0-56-amd64).
const modulesDep = `kernel/drivers/net/ethernet/intel/e1000e/e1000e.ko:
kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/net/net_failover.ko: kernel/net/core/failover.ko
kernel/net/core/failover.ko:
kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
`

func modulesFixture(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "modules.dep"), []byte(modulesDep), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "modules.builtin"), []byte("kernel/crypto/crc32c_generic.ko\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoadOrder(t *testing.T) {
	m, err := readModules(modulesFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	order, err := m.loadOrder([]string{"crc32c_generic", "virtio_pci", "virtio-net", "e1000e"})
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, f := range order {
		if _, dup := pos[modName(f)]; dup {
			t.Errorf("%s loaded twice", f)
		}
		pos[modName(f)] = i
	}
	for mod, before := range map[string][]string{
		"virtio_net":   {"virtio", "virtio_ring", "failover", "net_failover"},
		"virtio":       {"virtio_ring"},
		"virtio_pci":   {"virtio", "virtio_pci_modern_dev", "virtio_pci_legacy_dev"},
		"net_failover": {"failover"},
	} {
		for _, b := range before {
			if pos[b] >= pos[mod] {
				t.Errorf("%s at %d, before %s at %d: %v", mod, pos[mod], b, pos[b], order)
			}
		}
	}
	if _, ok := pos["crc32c_generic"]; ok {
		t.Error("a built-in module is loaded")
	}
	if _, err := m.loadOrder([]string{"igb"}); err == nil || !strings.Contains(err.Error(), "igb") {
		t.Errorf("a missing module: %v", err)
	}
}

func TestFindKernel(t *testing.T) {
	boot, mods := t.TempDir(), t.TempDir()
	if _, err := findKernel(boot, mods); err == nil || !usage.Is(err) || !strings.Contains(err.Error(), kernelPackage()) {
		t.Fatalf("no kernel: %v (want a usage error naming %s)", err, kernelPackage())
	}
	for _, v := range []string{"6.1.0-9-amd64", "6.1.0-56-amd64", "6.12.0-1-amd64"} {
		os.WriteFile(filepath.Join(boot, "vmlinuz-"+v), nil, 0o644)
	}
	for _, v := range []string{"6.1.0-9-amd64", "6.1.0-56-amd64"} { // 6.12 has no modules
		os.MkdirAll(filepath.Join(mods, v), 0o755)
		os.WriteFile(filepath.Join(mods, v, "modules.dep"), nil, 0o644)
	}
	k, err := findKernel(boot, mods)
	if err != nil {
		t.Fatal(err)
	}
	if k.Version != "6.1.0-56-amd64" || k.Image != filepath.Join(boot, "vmlinuz-6.1.0-56-amd64") {
		t.Errorf("picked %+v, want 6.1.0-56-amd64 (the newest with modules)", k)
	}
}

func TestMachineArgs(t *testing.T) {
	m := Machine{Node: "b", CPUs: 4, MemoryMB: 512, Accel: TCG, Kernel: Kernel{Image: "/boot/vmlinuz"}, Initrd: "/c/i.cpio",
		Serial: "/s/serial.sock", QMP: "/s/qmp.sock", Console: "/s/console.log",
		NICs: []NIC{
			{Model: Virtio, MAC: "52:54:00:01:00:01", Queues: 4, FDs: []int{3, 4, 5, 6}},
			{Model: E1000E, MAC: "52:54:00:01:00:02", Queues: 1, FDs: []int{7}},
		}}
	got := strings.Join(m.Args(), " ")
	for _, want := range []string{
		"-accel tcg,thread=multi", "-smp 4", "-m 512",
		"-netdev tap,id=n0,vhost=off,fds=3:4:5:6",
		"-device virtio-net-pci,netdev=n0,mac=52:54:00:01:00:01,romfile=,mq=on,vectors=10,rss=on",
		"-netdev tap,id=n1,vhost=off,fd=7",
		"-device e1000e,netdev=n1,mac=52:54:00:01:00:02,romfile=",
		"virtserialport,bus=vser.0,chardev=lr,name=linerate",
		"linerate.node=b",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("args lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "linerate.root") || strings.Contains(got, "-drive") {
		t.Errorf("a guest without a disk has a root: %s", got)
	}
	args := m.Args()
	for i, a := range args {
		if a == "-nic" || a == "-net" || a == "-netdev" && i+1 < len(args) && !strings.HasPrefix(args[i+1], "tap,") {
			t.Errorf("a NIC backed by anything but a lab's tap (QEMU's user-mode network reaches out): %s %s", a, args[i+1])
		}
	}
	m.Disk = "/s/disk.qcow2"
	if got := strings.Join(m.Args(), " "); !strings.Contains(got, "linerate.root=/dev/vda") || !strings.Contains(got, "file=/s/disk.qcow2,if=virtio,format=qcow2") {
		t.Errorf("a guest with a disk: %s", got)
	}
}

func TestModels(t *testing.T) {
	for in, want := range map[string]Model{"e1000e": E1000E, "virtio-net": Virtio, "VIRTIO": Virtio, "vmxnet3": VMXNET3} {
		if m, err := ParseModel(in); err != nil || m != want {
			t.Errorf("%s: %v %v", in, m, err)
		}
	}
	if _, err := ParseModel("igb"); err == nil || !usage.Is(err) {
		t.Errorf("igb: %v", err)
	}
	if err := E1000E.CheckQueues(2); err == nil || !strings.Contains(err.Error(), "virtio") {
		t.Errorf("e1000e with 2 queues: %v", err)
	}
	if err := Virtio.CheckQueues(8); err != nil {
		t.Errorf("virtio with 8 queues: %v", err)
	}
}

// pipePair is two connected ends, each readable and writable.
func pipePair(t *testing.T) (net.Conn, net.Conn) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestHandshake runs both ends of the handshake over a pipe that holds
// leftovers of an earlier session in both directions, with a guest slow
// enough that the host sends LRSYNC more than once, then a yamux session
// on top: what each side reads after the handshake must be the session's
// alone.
func TestHandshake(t *testing.T) {
	host, guest := pipePair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	guestErr := make(chan error, 1)
	go func() {
		// Leftovers of an old session, with and without newlines.
		guest.Write([]byte("\x00\x01garbage of an old yamux session\nmore"))
		br := bufio.NewReader(guest)
		time.Sleep(700 * time.Millisecond) // the host sends LRSYNC again
		if err := guestHandshake(br, guest); err != nil {
			guestErr <- err
			return
		}
		sess, err := yamux.Server(bufConn{Reader: br, WriteCloser: guest}, yamuxConfig())
		if err != nil {
			guestErr <- err
			return
		}
		st, err := sess.AcceptStream()
		if err != nil {
			guestErr <- err
			return
		}
		var req Request
		if err := readLine(bufio.NewReader(st), &req); err != nil {
			guestErr <- err
			return
		}
		guestErr <- writeLine(st, Reply{Error: "echo " + req.Op})
	}()
	br := bufio.NewReader(host)
	hello, err := hostHandshake(ctx, br, host, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if hello.Version == "" {
		t.Errorf("hello without a version: %+v", hello)
	}
	sess, err := yamux.Client(bufConn{Reader: br, WriteCloser: host}, yamuxConfig())
	if err != nil {
		t.Fatal(err)
	}
	st, err := sess.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if err := writeLine(st, Request{Op: OpReboot}); err != nil {
		t.Fatal(err)
	}
	var rep Reply
	if err := readLine(bufio.NewReader(st), &rep); err != nil {
		t.Fatalf("reply over the session: %v", err)
	}
	if rep.Error != "echo reboot" {
		t.Errorf("reply %+v", rep)
	}
	if err := <-guestErr; err != nil {
		t.Fatal(err)
	}
}

func TestHandshakeTimeout(t *testing.T) {
	host, guest := pipePair(t)
	go io.Copy(io.Discard, guest) // a guest that never answers
	_, err := hostHandshake(context.Background(), bufio.NewReader(host), host, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("err %v", err)
	}
}

// TestExecFrames runs a command through guest.exec over a pipe: stdin in,
// stdout and stderr apart, the exit status, and a signal.
func TestExecFrames(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("linux only")
	}
	run := func(t *testing.T, argv []string, stdin string, sig byte) (string, string, Exit) {
		host, gEnd := pipePair(t)
		g := &guest{log: io.Discard}
		go g.exec(gEnd, bufio.NewReader(gEnd), &ExecRequest{Argv: argv})
		go func() {
			if stdin != "" {
				writeFrame(host, frameStdin, []byte(stdin))
			}
			if sig != 0 {
				time.Sleep(200 * time.Millisecond)
				writeFrame(host, frameSignal, []byte{sig})
				return
			}
			writeFrame(host, frameStdinEOF, nil)
		}()
		var out, errb strings.Builder
		for {
			kind, p, err := readFrame(host)
			if err != nil {
				t.Fatal(err)
			}
			switch kind {
			case frameStdout:
				out.Write(p)
			case frameStderr:
				errb.Write(p)
			case frameExit:
				var e Exit
				json.Unmarshal(p, &e)
				return out.String(), errb.String(), e
			}
		}
	}
	out, errs, e := run(t, []string{"/bin/sh", "-c", "cat; echo err >&2; exit 3"}, "hello\n", 0)
	if out != "hello\n" || errs != "err\n" || e.Code != 3 {
		t.Errorf("got %q %q %+v", out, errs, e)
	}
	_, _, e = run(t, []string{"/bin/sh", "-c", "sleep 30"}, "", 15) // SIGTERM
	if e.Signal != 15 || e.Code != 128+15 {
		t.Errorf("signalled: %+v", e)
	}
	_, _, e = run(t, []string{"/no/such/command"}, "", 0)
	if e.Code != 127 || e.Error == "" {
		t.Errorf("missing command: %+v", e)
	}
}

// TestWaitAfterStallReset: a boot reset for stalling has half of the
// boot timeout from its reset, even where that runs past the end of a
// wait begun before it.
func TestWaitAfterStallReset(t *testing.T) {
	// The wait's own end (400ms) comes long before the boot timeout's
	// half from the reset (300ms + 1s), and the guest is ready between
	// the two, with room on either side for a slow scheduler.
	const boot, waitFor = 2 * time.Second, 400 * time.Millisecond
	s := &supervisor{cfg: Supervisor{BootTimeout: boot}, log: io.Discard, changed: make(chan struct{}), reset: make(chan struct{}, 1)}
	s.st.State = StateBooting
	got := make(chan Status, 1)
	begun := time.Now()
	go func() { got <- s.wait(0, waitFor) }()
	time.Sleep(300 * time.Millisecond)
	s.stallReset(boot / 2) // no monitor here: the reset itself is only logged
	time.Sleep(400 * time.Millisecond)
	s.mu.Lock()
	s.st.Boots = 1
	s.mu.Unlock()
	s.set(StateReady, "", nil)
	st := <-got
	if st.State != StateReady {
		t.Fatalf("wait gave %s (%s) %s after it began, want ready: the second boot had less than half the timeout",
			st.State, st.Error, time.Since(begun).Round(time.Millisecond))
	}
	if st.Stall == "" {
		t.Error("the status does not say the boot was reset")
	}

	// Without a reset the wait ends at its own end.
	s2 := &supervisor{cfg: Supervisor{BootTimeout: boot}, log: io.Discard, changed: make(chan struct{}), reset: make(chan struct{}, 1)}
	s2.st.State = StateBooting
	if st := s2.wait(0, waitFor/2); st.State != StateBooting || !strings.Contains(st.Error, "not ready after") {
		t.Errorf("wait without a reset: %+v", st)
	}
}
