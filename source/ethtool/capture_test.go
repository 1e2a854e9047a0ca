package ethtool

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"linerate/source/tree"
)

// testdata/ is laid out as a capture's ethtool/ directory, with one
// "interface" per source of text.
func TestCaptureReadsTestdata(t *testing.T) {
	c := NewCapture("testdata")
	defer c.Close()
	d, err := c.DriverInfo("virtio_net")
	if err != nil || d.Driver != "virtio_net" {
		t.Errorf("driver: %+v, %v", d, err)
	}
	fs, err := c.Features("veth")
	if f, ok := fs.Get("generic-receive-offload"); err != nil || !ok || f.On || f.Fixed {
		t.Errorf("veth gro: %+v, %v", f, err)
	}
	rss, err := c.RSS("seed004")
	if err != nil || rss.RXRings != 2 || len(rss.Indirection) != 128 {
		t.Errorf("seed004 rss: %+v, %v", rss, err)
	}
	h, err := c.FlowHash("seed004", TCP4)
	if err != nil || h.Letters() != "sdfn" {
		t.Errorf("seed004 tcp4: %q, %v", h.Letters(), err)
	}
	ch, err := c.Channels("seed004")
	if err != nil || ch.Combined != 2 {
		t.Errorf("seed004 channels: %+v, %v", ch, err)
	}
	co, err := c.Coalesce("seed004")
	if err != nil || co.Params["rx-usecs"] != 3 {
		t.Errorf("seed004 coalesce: %+v, %v", co, err)
	}
	st, err := c.Stats("veth")
	if _, ok := st.Map()["peer_ifindex"]; err != nil || !ok {
		t.Errorf("veth stats: %v", err)
	}
	li, err := c.LinkInfo("lo")
	if err != nil || !li.Link || li.HasSettings() {
		t.Errorf("lo link: %+v, %v", li, err)
	}
	rings, err := c.Rings("virtio_net")
	if err != nil || rings.RX != 256 {
		t.Errorf("virtio_net rings: %+v, %v", rings, err)
	}

	// Missing files, unsupported items, bad names.
	if _, err := c.DriverInfo("seed004"); !errors.Is(err, ErrNotCaptured) || !strings.Contains(err.Error(), filepath.Join("testdata", "seed004", "i.txt")) {
		t.Errorf("missing i.txt: %v", err)
	}
	if _, err := c.FlowHash("seed004", TCP6); !errors.Is(err, ErrNotCaptured) {
		t.Errorf("missing n-tcp6.txt: %v", err)
	}
	if _, err := c.Stats("eth7"); !errors.Is(err, ErrNotCaptured) {
		t.Errorf("interface not captured: %v", err)
	}
	for _, f := range []func() error{
		func() error { _, err := c.Rings("lo"); return err },
		func() error { _, err := c.Coalesce("veth"); return err },
		func() error { _, err := c.RSS("veth"); return err },
		func() error { _, err := c.Stats("lo"); return err },
		func() error { _, err := c.FlowHash("veth", UDP6); return err },
	} {
		if err := f(); !errors.Is(err, ErrNotSupported) {
			t.Errorf("got %v, want ErrNotSupported", err)
		}
	}
	for _, bad := range []string{"", "..", "../testdata/veth", "a/b"} {
		if _, err := c.Stats(bad); !errors.Is(err, ErrNoInterface) {
			t.Errorf("interface %q: %v", bad, err)
		}
	}
	if _, err := c.FlowHash("veth", FlowType("sctp4")); err == nil {
		t.Error("unknown flow type accepted")
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCaptureGarbageNamesFileAndLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ethtool")
	writeFile(t, filepath.Join(dir, "eth0", "g.txt"), "Ring parameters for eth0:\nPre-set maximums:\nRX:\t\tplenty\nTX:\t\t512\nCurrent hardware settings:\nRX:\t\t256\nTX:\t\t256\n")
	writeFile(t, filepath.Join(dir, "eth0", "l.txt"), "Channel parameters for eth0:\nthis is not ethtool\n")
	writeFile(t, filepath.Join(dir, "eth0", "n-tcp4.txt"), "UDP over IPV4 flows use these fields for computing Hash flow key:\nIP SA\n")
	writeFile(t, filepath.Join(dir, "eth0", "i.txt"), "Cannot get driver information: Operation not permitted\n")
	c := NewCapture(dir)

	// One bad value: the rest of the file is read, the warning names the line.
	r, err := c.Rings("eth0")
	if err != nil || r != (Rings{TXMax: 512, RX: 256, TX: 256}) {
		t.Errorf("rings with one bad value: %+v, %v", r, err)
	}
	ws := c.Warnings("eth0")
	if len(ws) != 1 || ws[0].File != "g.txt" || ws[0].Path != filepath.Join(dir, "eth0", "g.txt") ||
		len(ws[0].Warnings) != 1 || ws[0].Warnings[0].Line != 3 || ws[0].Warnings[0].Field != "Pre-set maximums RX" {
		t.Errorf("warnings: %+v", ws)
	}
	// Read again: the warnings of a file are those of its last read.
	c.Rings("eth0")
	if ws := c.Warnings("eth0"); len(ws) != 1 || len(ws[0].Warnings) != 1 {
		t.Errorf("warnings after a second read: %+v", ws)
	}
	if ws := c.Warnings("eth1"); ws != nil {
		t.Errorf("warnings of another interface: %+v", ws)
	}

	// Nothing usable: a parse error at file:line.
	_, err = c.Channels("eth0")
	var pe *tree.ParseError
	if !errors.As(err, &pe) || pe.Line != 1 || !strings.Contains(err.Error(), filepath.Join("ethtool", "eth0", "l.txt")+":1: ") {
		t.Errorf("no section: %v", err)
	}
	if _, err := c.FlowHash("eth0", TCP4); !errors.As(err, &pe) || !strings.Contains(err.Error(), "n-tcp4.txt:1: ") {
		t.Errorf("udp4 text in n-tcp4.txt: %v", err)
	}
	if _, err := c.DriverInfo("eth0"); !errors.Is(err, ErrFailed) || errors.Is(err, ErrNotSupported) {
		t.Errorf("permission error: %v", err)
	}
}

// A capture's ethtool files are read through a tree: a link out of it or
// a named pipe is refused, not read.
func TestCaptureRefusesLinksOutAndFIFOs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ethtool")
	outside := filepath.Join(t.TempDir(), "secret")
	writeFile(t, outside, "NIC statistics:\n     secret: 1\n")
	writeFile(t, filepath.Join(dir, "eth0", "i.txt"), "driver: igb\n")
	if err := os.Symlink(outside, filepath.Join(dir, "eth0", "S.txt")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "eth0", "g.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := NewCapture(dir)
	if st, err := c.Stats("eth0"); !errors.Is(err, tree.ErrRefused) || st != nil {
		t.Errorf("link out: %v, %v", st, err)
	}
	if _, err := c.Rings("eth0"); !errors.Is(err, tree.ErrRefused) || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("fifo: %v", err)
	}
}

// What CaptureFile renders reads back through a Capture as the values it
// was rendered from: a capture written without the ethtool command.
func TestCaptureFileRoundTrip(t *testing.T) {
	src := NewCapture("testdata")
	dir := t.TempDir()
	for _, iface := range []string{"virtio_net", "veth", "lo"} {
		for _, file := range CaptureFileNames {
			text, err := CaptureFile(src, iface, file)
			if errors.Is(err, ErrNotCaptured) {
				continue
			}
			if err != nil {
				t.Fatalf("%s %s: %v", iface, file, err)
			}
			writeFile(t, filepath.Join(dir, iface, file), string(text))
		}
		assertSameClient(t, src, NewCapture(dir), iface)
	}
	if _, err := CaptureFile(src, "veth", "q.txt"); err == nil {
		t.Error("unknown capture file accepted")
	}
}

// assertSameClient checks that two clients report the same for iface:
// equal values, or both the same kind of error.
func assertSameClient(t *testing.T, a, b Client, iface string) {
	t.Helper()
	same := func(item string, va any, ea error, vb any, eb error) {
		t.Helper()
		for _, kind := range []error{ErrNotSupported, ErrNotCaptured, ErrNoInterface} {
			if errors.Is(ea, kind) != errors.Is(eb, kind) {
				t.Errorf("%s %s: %v vs %v", iface, item, ea, eb)
				return
			}
		}
		if (ea == nil) != (eb == nil) {
			t.Errorf("%s %s: %v vs %v", iface, item, ea, eb)
			return
		}
		if ea == nil && !reflect.DeepEqual(va, vb) {
			t.Errorf("%s %s:\n %+v\n %+v", iface, item, va, vb)
		}
	}
	{
		va, ea := a.DriverInfo(iface)
		vb, eb := b.DriverInfo(iface)
		same("driver", va, ea, vb, eb)
	}
	{
		va, ea := a.LinkInfo(iface)
		vb, eb := b.LinkInfo(iface)
		same("link", va, ea, vb, eb)
	}
	{
		va, ea := a.Features(iface)
		vb, eb := b.Features(iface)
		same("features", va, ea, vb, eb)
	}
	{
		va, ea := a.Rings(iface)
		vb, eb := b.Rings(iface)
		same("rings", va, ea, vb, eb)
	}
	{
		va, ea := a.Channels(iface)
		vb, eb := b.Channels(iface)
		same("channels", va, ea, vb, eb)
	}
	{
		va, ea := a.Coalesce(iface)
		vb, eb := b.Coalesce(iface)
		same("coalesce", va, ea, vb, eb)
	}
	{
		va, ea := a.RSS(iface)
		vb, eb := b.RSS(iface)
		same("rss", va, ea, vb, eb)
	}
	for _, ft := range FlowTypes {
		va, ea := a.FlowHash(iface, ft)
		vb, eb := b.FlowHash(iface, ft)
		same("flow hash "+string(ft), va, ea, vb, eb)
	}
	{
		va, ea := a.Stats(iface)
		vb, eb := b.Stats(iface)
		same("stats", va, ea, vb, eb)
	}
}
