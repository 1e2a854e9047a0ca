package ethtool

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"linerate/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/veth and the features-raw.txt files from this machine")

// ethtoolCmd runs the ethtool command (inside ns when not nil) and returns
// what it printed, stdout then stderr, as a capture holds it.
func ethtoolCmd(t *testing.T, ns *testenv.NetNS, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("ethtool")
	if err != nil {
		t.Skip("the ethtool command is not installed")
	}
	var cmd *exec.Cmd
	if ns != nil {
		ip, err := exec.LookPath("ip")
		if err != nil {
			t.Skip("the ip command is not installed")
		}
		cmd = exec.Command(ip, append([]string{"netns", "exec", ns.Name, bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run() // a non-zero exit with an error line is what we compare
	return out.String() + errOut.String()
}

// liveIn makes a Live client inside ns and closes it when the test ends.
func liveIn(t *testing.T, ns *testenv.NetNS) *Live {
	t.Helper()
	var l *Live
	err := ns.Do(func() error {
		var err error
		l, err = NewLive()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// vethNS makes a namespace holding an up veth pair va/vb with 4 queues.
func vethNS(t *testing.T) *testenv.NetNS {
	ns := testenv.NewNetNS(t)
	testenv.Veth(t, ns, "va", ns, "vb", 4)
	return ns
}

// The client made inside a namespace keeps querying that namespace from
// any goroutine; a client made outside does not see its interfaces.
func TestLiveBoundToNamespace(t *testing.T) {
	testenv.RequireRoot(t)
	ns := testenv.NewNetNS(t)
	testenv.Veth(t, ns, "lrt-nsa", ns, "lrt-nsb", 1)
	l := liveIn(t, ns)
	d, err := l.DriverInfo("lrt-nsa") // from the test goroutine, not in ns
	if err != nil {
		t.Fatal(err)
	}
	if d.Driver != "veth" {
		t.Errorf("driver %q, want veth", d.Driver)
	}
	host, err := NewLive()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if _, err := host.DriverInfo("lrt-nsa"); !errors.Is(err, ErrNoInterface) {
		t.Errorf("host client sees the namespace's veth: %v", err)
	}
}

func TestLiveErrors(t *testing.T) {
	testenv.RequireRoot(t)
	ns := vethNS(t)
	l := liveIn(t, ns)
	for _, name := range []string{"nosuch0", "", "a-name-far-too-long", "a/b"} {
		if _, err := l.DriverInfo(name); !errors.Is(err, ErrNoInterface) {
			t.Errorf("%q: got %v, want ErrNoInterface", name, err)
		}
	}
	// What veth lacks is reported as unsupported, never as a crash.
	unsupported := map[string]error{}
	_, unsupported["rings"] = l.Rings("va")
	_, unsupported["coalesce"] = l.Coalesce("va")
	_, unsupported["rss"] = l.RSS("va")
	_, unsupported["flow hash"] = l.FlowHash("va", UDP4)
	unsupported["set rings"] = l.SetRings("va", Rings{RX: 128, TX: 128})
	unsupported["set coalesce"] = l.SetCoalesce("va", Coalesce{Params: map[string]uint32{"rx-usecs": 3}})
	unsupported["set indirection"] = l.SetIndirection("va", EqualTable(128, 2))
	unsupported["set flow hash"] = l.SetFlowHash("va", UDP4, HashIPSrc|HashIPDst)
	for item, err := range unsupported {
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "va") {
			t.Errorf("%s: got %v, want ErrNotSupported naming va", item, err)
		}
	}
	lo, err := l.Stats("lo")
	if !errors.Is(err, ErrNotSupported) {
		t.Errorf("lo stats: %v %v, want ErrNotSupported", lo, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Channels("va"); err == nil {
		t.Error("a closed client still answers")
	}
}

// Live values equal what the ethtool command prints, parsed.
func TestLiveMatchesEthtoolVeth(t *testing.T) {
	testenv.RequireRoot(t)
	ns := vethNS(t)
	crossCheck(t, liveIn(t, ns), ns, "va")
}

func TestLiveMatchesEthtoolHost(t *testing.T) {
	testenv.RequireRoot(t)
	iface := os.Getenv("LINERATE_TEST_IFACE")
	if iface == "" {
		iface = "eth0"
	}
	if _, err := net.InterfaceByName(iface); err != nil {
		t.Skipf("no %s here (set LINERATE_TEST_IFACE)", iface)
	}
	l, err := NewLive()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	crossCheck(t, l, nil, iface)
}

// crossCheck compares every item of l with the ethtool command's output.
// Counters move, so statistics compare by name (and value only on a quiet
// veth); coalescing compares the parameters ethtool prints (the ioctl also
// reports those the driver ignores, as 0).
func crossCheck(t *testing.T, l *Live, ns *testenv.NetNS, iface string) {
	t.Helper()
	check := func(item string, live any, liveErr error, parsed any, parseErr error) {
		t.Helper()
		switch {
		case errors.Is(parseErr, ErrNotSupported):
			if !errors.Is(liveErr, ErrNotSupported) {
				t.Errorf("%s: ethtool says unsupported, live says %+v, %v", item, live, liveErr)
			}
		case parseErr != nil:
			t.Errorf("%s: parsing ethtool's output: %v", item, parseErr)
		case liveErr != nil:
			t.Errorf("%s: live: %v", item, liveErr)
		case !reflect.DeepEqual(live, parsed):
			t.Errorf("%s:\nlive    %+v\nethtool %+v", item, live, parsed)
		}
	}
	run := func(args ...string) *strings.Reader {
		return strings.NewReader(ethtoolCmd(t, ns, args...))
	}
	{
		p, ws, perr := ParseDriverInfo(run("-i", iface))
		noWarnings(t, "ParseDriverInfo", ws)
		v, err := l.DriverInfo(iface)
		check("driver", v, err, p, perr)
	}
	{
		p, ws, perr := ParseLinkInfo(run(iface))
		noWarnings(t, "ParseLinkInfo", ws)
		v, err := l.LinkInfo(iface)
		check("link", v, err, p, perr)
	}
	{
		p, ws, perr := ParseFeatures(run("-k", iface))
		noWarnings(t, "ParseFeatures", ws)
		v, err := l.Features(iface)
		check("features", v, err, p, perr)
	}
	{
		p, ws, perr := ParseRings(run("-g", iface))
		noWarnings(t, "ParseRings", ws)
		v, err := l.Rings(iface)
		check("rings", v, err, p, perr)
	}
	{
		p, ws, perr := ParseChannels(run("-l", iface))
		noWarnings(t, "ParseChannels", ws)
		v, err := l.Channels(iface)
		check("channels", v, err, p, perr)
	}
	{
		p, ws, perr := ParseCoalesce(run("-c", iface))
		noWarnings(t, "ParseCoalesce", ws)
		v, err := l.Coalesce(iface)
		if err == nil && perr == nil {
			for name, val := range v.Params {
				if _, printed := p.Params[name]; !printed && val != 0 {
					t.Errorf("coalesce %s: live %d, ethtool prints n/a", name, val)
				}
			}
			for name := range v.Params {
				if _, printed := p.Params[name]; !printed {
					delete(v.Params, name)
				}
			}
		}
		check("coalesce", v, err, p, perr)
	}
	{
		p, ws, perr := ParseRSS(run("-x", iface))
		noWarnings(t, "ParseRSS", ws)
		v, err := l.RSS(iface)
		check("rss", v, err, p, perr)
	}
	for _, ft := range FlowTypes {
		_, p, perr := ParseFlowHash(run("-n", iface, "rx-flow-hash", string(ft)))
		v, err := l.FlowHash(iface, ft)
		check("flow hash "+string(ft), v, err, p, perr)
	}
	{
		p, ws, perr := ParseStats(run("-S", iface))
		noWarnings(t, "ParseStats", ws)
		v, err := l.Stats(iface)
		if ns == nil && err == nil && perr == nil {
			check("stats names", v.Names(), nil, p.Names(), nil)
			check("stats order", len(v), nil, len(p), nil)
		} else {
			check("stats", v, err, p, perr)
		}
	}
}

func TestLiveVeth(t *testing.T) {
	testenv.RequireRoot(t)
	ns := vethNS(t)
	l := liveIn(t, ns)

	d, err := l.DriverInfo("va")
	if err != nil || d.Driver != "veth" {
		t.Fatalf("driver: %+v, %v", d, err)
	}
	st, err := l.Stats("va")
	if err != nil {
		t.Fatal(err)
	}
	peer, err := ns.Netlink(t).LinkByName("vb")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := st.Map()["peer_ifindex"]; !ok || got != uint64(peer.Attrs().Index) {
		t.Errorf("peer_ifindex %d (present %v), vb is ifindex %d", got, ok, peer.Attrs().Index)
	}
	li, err := l.LinkInfo("va")
	if err != nil || !li.Link || li.SpeedMbps != 10000 || li.Duplex != "Full" {
		t.Errorf("link: %+v, %v", li, err)
	}
}

func TestLiveSetChannels(t *testing.T) {
	testenv.RequireRoot(t)
	ns := vethNS(t)
	l := liveIn(t, ns)
	c, err := l.Channels("va")
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxRX != 4 || c.RX != 4 {
		t.Fatalf("veth made with 4 queues reports %+v", c)
	}
	c.RX, c.TX = 2, 3
	if err := l.SetChannels("va", c); err != nil {
		t.Fatal(err)
	}
	got, err := l.Channels("va")
	if err != nil {
		t.Fatal(err)
	}
	want := Channels{MaxRX: 4, MaxTX: 4, RX: 2, TX: 3}
	if got != want {
		t.Errorf("after set: %+v, want %+v", got, want)
	}
	printed, _, err := ParseChannels(strings.NewReader(ethtoolCmd(t, ns, "-l", "va")))
	if err != nil || printed != got {
		t.Errorf("ethtool -l says %+v (%v), live says %+v", printed, err, got)
	}
	// The driver's statistics follow the queue count.
	st, err := l.Stats("va")
	if err != nil {
		t.Fatal(err)
	}
	m := st.Map()
	if _, ok := m["rx_queue_1_drops"]; !ok {
		t.Errorf("no rx_queue_1 statistics with 2 rx queues: %v", st.Names())
	}
	if _, ok := m["rx_queue_2_drops"]; ok {
		t.Errorf("rx_queue_2 statistics with 2 rx queues")
	}
	// More than the maximum is refused by the kernel, and nothing changes.
	c.RX = 9
	if err := l.SetChannels("va", c); err == nil {
		t.Error("9 rx channels of 4 accepted")
	}
	if again, _ := l.Channels("va"); again != want {
		t.Errorf("a refused set changed channels to %+v", again)
	}
}

func TestLiveSetFeatures(t *testing.T) {
	testenv.RequireRoot(t)
	ns := vethNS(t)
	l := liveIn(t, ns)
	for _, name := range []string{"generic-receive-offload", "rx-gro-list"} {
		for _, on := range []bool{true, false} {
			if err := l.SetFeatures("va", map[string]bool{name: on}); err != nil {
				t.Fatalf("%s %v: %v", name, on, err)
			}
			fs, err := l.Features("va")
			if err != nil {
				t.Fatal(err)
			}
			if f, ok := fs.Get(name); !ok || f.On != on {
				t.Errorf("%s: asked %v, reads %+v", name, on, f)
			}
			printed, _, err := ParseFeatures(strings.NewReader(ethtoolCmd(t, ns, "-k", "va")))
			if err != nil || !reflect.DeepEqual(printed, fs) {
				t.Errorf("%s %v: ethtool -k differs from live (%v)", name, on, err)
			}
		}
	}
	// The legacy group name turns off every changeable member.
	if err := l.SetFeatures("va", map[string]bool{"tx-checksumming": false}); err != nil {
		t.Fatal(err)
	}
	fs, _ := l.Features("va")
	for _, f := range fs {
		if f.Parent == "tx-checksumming" && !f.Fixed && f.On {
			t.Errorf("%s still on after tx-checksumming off", f.Name)
		}
	}
	if err := l.SetFeatures("va", map[string]bool{"large-receive-offload": true}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("LRO on a veth: %v, want ErrNotSupported", err)
	}
	if err := l.SetFeatures("va", map[string]bool{"no-such-feature": true}); err == nil {
		t.Error("an unknown feature name was accepted")
	}
}

// TestUpdateTestdata rewrites testdata/veth and the features-raw.txt files
// (go test -run UpdateTestdata -update): real ethtool output of a fresh
// veth, and the kernel's raw feature states next to each `ethtool -k`.
func TestUpdateTestdata(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite testdata from this machine")
	}
	testenv.RequireRoot(t)
	ns := vethNS(t)
	l := liveIn(t, ns)
	write := func(dir, name, text string) {
		if err := os.WriteFile(filepath.Join("testdata", dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []string{"i", "k", "l", "g", "c", "x", "S"} {
		write("veth", o+".txt", ethtoolCmd(t, ns, "-"+o, "va"))
	}
	write("veth", "link.txt", ethtoolCmd(t, ns, "va"))
	for _, ft := range FlowTypes {
		write("veth", "n-"+string(ft)+".txt", ethtoolCmd(t, ns, "-n", "va", "rx-flow-hash", string(ft)))
	}
	write("veth", "features-raw.txt", rawFeatures(t, l, "va"))
	host, err := NewLive()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if _, err := netlink.LinkByName("eth0"); err == nil {
		write("virtio_net", "k.txt", ethtoolCmd(t, nil, "-k", "eth0"))
		write("virtio_net", "features-raw.txt", rawFeatures(t, host, "eth0"))
	}
}

// rawFeatures dumps the kernel's features of iface, one per bit: index,
// name ("-" if none), available, requested, active, never_changed.
func rawFeatures(t *testing.T, l *Live, iface string) string {
	names, states, _, err := l.features(iface)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, n := range names {
		if n == "" {
			n = "-"
		}
		s := states[i]
		fmt.Fprintf(&b, "%d %s %d %d %d %d\n", i, n, b2i(s.available), b2i(s.requested), b2i(s.active), b2i(s.neverChanged))
	}
	return b.String()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A capture written from the live client without the ethtool command reads
// back as what the live client reports.
func TestCaptureFileFromLive(t *testing.T) {
	testenv.RequireRoot(t)
	ns := vethNS(t)
	l := liveIn(t, ns)
	dir := t.TempDir()
	for _, iface := range []string{"va", "lo"} {
		for _, file := range CaptureFileNames {
			text, err := CaptureFile(l, iface, file)
			if err != nil {
				t.Fatalf("%s %s: %v", iface, file, err)
			}
			writeFile(t, filepath.Join(dir, iface, file), string(text))
		}
		assertSameClient(t, l, NewCapture(dir), iface)
	}
	if _, err := CaptureFile(l, "nosuch0", "i.txt"); !errors.Is(err, ErrNoInterface) {
		t.Errorf("missing interface: %v", err)
	}
}

func BenchmarkLiveStats(b *testing.B) {
	testenv.RequireRoot(b)
	l, err := NewLive()
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	iface := os.Getenv("LINERATE_TEST_IFACE")
	if iface == "" {
		iface = "eth0"
	}
	if _, err := l.Stats(iface); err != nil {
		b.Skipf("%s: %v", iface, err)
	}
	for b.Loop() {
		if _, err := l.Stats(iface); err != nil {
			b.Fatal(err)
		}
	}
}
