package traffic

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"linerate/box"
	"linerate/box/netnsread"
	"linerate/ceiling"
	"linerate/internal/testenv"
	"linerate/ledger"
	"linerate/results"
	"linerate/source"
	"linerate/source/skbdrop"
	"linerate/traffic/session"
	"linerate/wire"
)

// dropReader opens a drop-counter reader for ns, closed with the test.
func dropReader(t *testing.T, ns *testenv.NetNS, reasons *skbdrop.Counter) *netnsread.Reader {
	t.Helper()
	src, err := source.NewLiveNetns(ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	opt := netnsread.Options{Reasons: reasons}
	if reasons == nil {
		opt.ReasonsUnavailable = "not started by this test"
	}
	r, err := netnsread.New(src, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// withDrops makes both ends of the lab read their drop counters, with the
// kernel's drop reasons (started for this test, stopped with it).
func withDrops(t *testing.T, srv *Server) (*lab, Config) {
	t.Helper()
	testenv.RequireRoot(t)
	reasons, err := skbdrop.Start()
	switch {
	case errors.Is(err, skbdrop.ErrUnavailable):
		t.Logf("drop reasons unavailable: %v", err)
		reasons = nil
	case err != nil:
		t.Fatal(err)
	default:
		t.Cleanup(func() { reasons.Close() })
	}
	l := newLab(t, srv)
	srv.Drops = dropReader(t, l.b, reasons)
	cfg := l.config(udpSpec(time.Second, wire.Rate{}))
	cfg.Drops = dropReader(t, l.a, reasons)
	return l, cfg
}

// dropOneIn installs, inside ns, "meta l4proto udp numgen TYPE mod n == 0
// counter drop" in the input hook: one datagram in n dropped, in turn
// (unix.NFT_NG_INCREMENTAL) or at random (unix.NFT_NG_RANDOM).
func dropOneIn(t *testing.T, ns *testenv.NetNS, n, typ uint32) {
	t.Helper()
	nftRule(t, ns, "lrledger", nftables.ChainHookInput, nftables.ChainPriorityFilter,
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_UDP}},
		&expr.Numgen{Register: 1, Modulus: n, Type: typ},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.NativeEndian.AppendUint32(nil, 0)},
		&expr.Counter{},
		&expr.Verdict{Kind: expr.VerdictDrop},
	)
}

// nftRule adds one rule to a base chain of hook in table inet NAME of ns
// (both made when missing); the rules go with the namespace.
func nftRule(t *testing.T, ns *testenv.NetNS, table string, hook *nftables.ChainHook, prio *nftables.ChainPriority, exprs ...expr.Any) {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Handle)))
	if err != nil {
		t.Fatal(err)
	}
	tbl := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: table})
	ch := c.AddChain(&nftables.Chain{Name: "chain", Table: tbl, Type: nftables.ChainTypeFilter, Hooknum: hook, Priority: prio})
	c.AddRule(&nftables.Rule{Table: tbl, Chain: ch, Exprs: exprs})
	if err := c.Flush(); err != nil {
		t.Fatalf("nftables in %s: %v", ns.Name, err)
	}
}

// entry is the ledger's entry of host at place (zero when none).
func entryAt(l *ledger.Ledger, host string, place ledger.Place) ledger.Entry {
	for _, e := range l.Entries {
		if e.Host == host && e.Place == place {
			return e
		}
	}
	return ledger.Entry{}
}

func logLedger(t *testing.T, res *results.Result) {
	t.Helper()
	s := res.Summary
	t.Logf("sent %d, received %d, lost %d (%.2f%%); limited by %s: %s", s.SentPackets, s.ReceivedPackets, s.LostPackets, 100*s.LossRatio, s.LimitedBy, s.LimitedWhy)
	if res.Ledger == nil {
		return
	}
	for _, e := range res.Ledger.Entries {
		t.Logf("  %-7s %-8s %-14s %7d  %v", e.Host, e.Side, e.Place, e.Packets, e.Evidence)
	}
	for _, n := range res.Ledger.Notes {
		t.Logf("  note: %s", n)
	}
}

// runLedger runs cfg and checks that the result's ledger exists, covers
// the test's loss and places all but 0.5 % of what was sent.
func runLedger(t *testing.T, cfg Config) (*results.Result, *ledger.Ledger) {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	logLedger(t, res)
	l := res.Ledger
	if l == nil {
		t.Fatalf("no ledger in the result (drops %+v, notes %v)", res.Drops, res.Notes)
	}
	if l.Sent != res.Summary.SentPackets || l.Lost != res.Summary.LostPackets {
		t.Errorf("ledger of %d sent, %d lost; the test sent %d, lost %d", l.Sent, l.Lost, res.Summary.SentPackets, res.Summary.LostPackets)
	}
	if !l.Balanced() {
		t.Errorf("ledger does not balance: excess %d of %d sent", l.Excess, l.Sent)
	}
	if u := l.Unaccounted(); float64(u) > ledger.Tolerance*float64(l.Sent) {
		t.Errorf("%d of %d lost unaccounted: more than 0.5%% of %d sent", u, l.Lost, l.Sent)
	}
	return res, l
}

func TestLedgerFirewallDrops(t *testing.T) {
	l, cfg := withDrops(t, &Server{})
	dropOneIn(t, l.b, 10, unix.NFT_NG_RANDOM)
	cfg.Spec.Rate = wire.Rate{PPS: 50000}
	cfg.FrameSize = 64
	res, led := runLedger(t, cfg)
	nf := entryAt(led, "server", ledger.Netfilter)
	if nf.Side != ledger.Receiver || !closeTo(nf.Packets, led.Lost, ledger.Tolerance*float64(led.Sent)/float64(max(led.Lost, 1))) {
		t.Errorf("server netfilter %d (%s), want the %d lost", nf.Packets, nf.Side, led.Lost)
	}
	if r := float64(nf.Packets) / float64(led.Sent); r < 0.09 || r > 0.11 {
		t.Errorf("netfilter dropped %.4f of what was sent, the rule drops one in 10 at random", r)
	}
	if res.Summary.LimitedBy != "receiver" {
		t.Errorf("limited by %q (%s), want receiver: its firewall dropped them", res.Summary.LimitedBy, res.Summary.LimitedWhy)
	}
}

func TestLedgerSocketBuffer(t *testing.T) {
	l, cfg := withDrops(t, &Server{})
	cfg.Spec.RecvBuf = 1 // the kernel rounds it up to its minimum
	cfg.FrameSize = 64
	before := snmp(t, l.b, "Udp", "RcvbufErrors")
	_, led := runLedger(t, cfg)
	rcvbuf := snmp(t, l.b, "Udp", "RcvbufErrors") - before
	if led.Lost == 0 {
		t.Fatal("no loss with the smallest receive buffer")
	}
	sb := entryAt(led, "server", ledger.SocketBuffer)
	t.Logf("socket-buffer %d of %d lost; the server's RcvbufErrors went up %d over the whole run", sb.Packets, led.Lost, rcvbuf)
	if sb.Packets != rcvbuf || sb.Packets < led.Lost*9/10 {
		t.Errorf("server socket-buffer %d: want the %d RcvbufErrors, most of the %d lost", sb.Packets, rcvbuf, led.Lost)
	}
}

// TestLinkLimitsShapedVeth sends as fast as it can through a veth shaped
// to 100 Mbit/s, each way: the link (the sending end's shaper) is the
// limit, not the sender, and what the shaper dropped is in the ledger at
// the sender's qdisc.
func TestLinkLimitsShapedVeth(t *testing.T) {
	for _, c := range []struct {
		dir               wire.Direction
		ns, iface, sender string
	}{{wire.Forward, "a", "lra", "client"}, {wire.Reverse, "b", "lrb", "server"}} {
		t.Run(string(c.dir), func(t *testing.T) {
			l, cfg := withDrops(t, &Server{})
			ns := l.a
			if c.ns == "b" {
				ns = l.b
			}
			capLink(t, ns, c.iface, 100e6)
			cfg.Spec.Direction = c.dir
			cfg.FrameSize = 1518
			res, led := runLedger(t, cfg)
			s := res.Summary
			lim := s.PathCeiling
			if lim == nil {
				t.Fatalf("no path ceiling; drops %+v", res.Drops)
			}
			t.Logf("ceiling %.0f fps (%s on %s %s); received %.0f pps (%.1f%%)", lim.FPS, lim.What, lim.Host, lim.Iface, s.ReceivedPPS, 100*s.ReceivedPPS/lim.FPS)
			if lim.Iface != c.iface || lim.By != "shaper" {
				t.Errorf("ceiling %+v, want the tbf on %s", lim, c.iface)
			}
			if s.LimitedBy != "link" {
				t.Errorf("limited by %q (%s), want link", s.LimitedBy, s.LimitedWhy)
			}
			if q := entryAt(led, c.sender, ledger.SenderQdisc); q.Packets == 0 {
				t.Errorf("no drops at the %s's qdisc in the ledger", c.sender)
			}
		})
	}
}

// closeOneIn installs, inside ns, a stateless rule before conntrack that
// rewrites the destination port of every nth UDP datagram coming in to
// 9 (discard), where nothing listens: "meta l4proto udp numgen inc mod n
// == 0 udp dport set 9".
func closeOneIn(t *testing.T, ns *testenv.NetNS, n uint32) {
	t.Helper()
	nftRule(t, ns, "lrclosed", nftables.ChainHookPrerouting, nftables.ChainPriorityRaw,
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_UDP}},
		&expr.Numgen{Register: 1, Modulus: n, Type: unix.NFT_NG_INCREMENTAL},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.NativeEndian.AppendUint32(nil, 0)},
		&expr.Immediate{Register: 1, Data: binary.BigEndian.AppendUint16(nil, 9)},
		&expr.Payload{OperationType: expr.PayloadWrite, SourceRegister: 1, Base: expr.PayloadBaseTransportHeader,
			Offset: 2, Len: 2, CsumType: expr.CsumTypeInet, CsumOffset: 6},
	)
}

func TestLedgerClosedPort(t *testing.T) {
	l, cfg := withDrops(t, &Server{})
	closeOneIn(t, l.b, 5)
	cfg.Spec.Rate = wire.Rate{PPS: 20000}
	cfg.FrameSize = 64
	_, led := runLedger(t, cfg)
	ns := entryAt(led, "server", ledger.NoSocket)
	if !closeTo(ns.Packets, led.Lost, ledger.Tolerance*float64(led.Sent)/float64(max(led.Lost, 1))) {
		t.Errorf("server no-socket %d, want the %d lost", ns.Packets, led.Lost)
	}
	if r := float64(ns.Packets) / float64(led.Sent); math.Abs(r-0.2) > 0.005 {
		t.Errorf("%.4f of what was sent died at a closed port; one in 5 was sent there", r)
	}
}

// TestTCPLinkLimitsShapedVeth: one TCP stream through a veth shaped to
// 100 Mbit/s fills the shaper: the link is the limit.
func TestTCPLinkLimitsShapedVeth(t *testing.T) {
	l, cfg := withDrops(t, &Server{})
	// A 50 ms queue: TCP fills the link without the drops (and the
	// retransmits) of a short one.
	shape(t, l.a, "lra", 625000)
	cfg.Spec = wire.Spec{Proto: "tcp", Direction: wire.Forward, Duration: wire.Seconds(2 * time.Second), Warmup: wire.Seconds(500 * time.Millisecond), Streams: 1, Ports: 1, Threads: 1}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	t.Logf("%.0f segments/s, %.1f Mb/s goodput; limited by %s: %s", s.ReceivedPPS, s.ReceivedBPS/1e6, s.LimitedBy, s.LimitedWhy)
	if s.PathCeiling == nil || s.PathCeiling.By != "shaper" {
		t.Fatalf("ceiling %+v, want the tbf on lra", s.PathCeiling)
	}
	if s.LimitedBy != "link" {
		t.Errorf("limited by %q (%s), want link", s.LimitedBy, s.LimitedWhy)
	}
	if res.Ledger != nil {
		t.Errorf("a ledger for TCP: %+v", res.Ledger)
	}
}

// fixedDrops is drop counters that never move, and no path.
type fixedDrops box.Drops

func (d fixedDrops) Drops() (box.Drops, error) { return box.Drops(d), nil }

func (fixedDrops) Path(string, ...string) ([]box.PathIface, error) { return nil, nil }

// TestDropLedgerHosts: each end is a host of the ledger named and sided
// by the test's direction; two servers in one namespace are one host; the
// client's refused sends are the test's.
func TestDropLedgerHosts(t *testing.T) {
	sp := wire.Spec{Proto: "udp", Direction: wire.Forward}
	delta := func(netns uint64, nop uint64) *box.Drops {
		return &box.Drops{Netns: netns, Machine: "m", SNMP: map[string]map[string]uint64{"Udp": {"NoPorts": nop}}}
	}
	r := &clientRun{cfg: &Config{}, spec: sp, sess: session.New(session.RealClock{})}
	for i, ns := range []uint64{7, 7} {
		r.targets = append(r.targets, &target{idx: i, result: &results.ServerResult{Drops: &results.EndDrops{Side: "server", Ifaces: []string{"s0"}, Delta: delta(ns, 30)}}})
	}
	// The client's window over counters that moved nothing, on a session
	// without flows: a start snapshots them, a stop reads the difference.
	r.sess.Drops = session.NewDropWindow(fixedDrops(*delta(3, 0)), nil, results.SideClient, -1, nil, func(f func() error) error { return f() })
	r.sess.Start(0, 0)
	r.sess.Stop(true, nil)
	res := &results.Result{Spec: sp}
	res.Summary.SentPackets, res.Summary.LostPackets = 1000, 30
	r.dropLedger(res)
	if len(res.Drops) != 3 || res.Drops[1].Target != 0 || res.Drops[2].Target != 1 {
		t.Fatalf("drops %+v", res.Drops)
	}
	l := res.Ledger
	if l == nil || l.Lost != 30 || len(l.Entries) != 1 {
		t.Fatalf("ledger %+v", l)
	}
	if e := l.Entries[0]; e.Host != "server 1" || e.Side != ledger.Receiver || e.Place != ledger.NoSocket || e.Packets != 30 {
		t.Errorf("entry %+v: want server 1's no-socket 30, counted once for the two servers of one namespace", e)
	}
}

// With several targets the path's ceiling adds up each target's path, and
// the client's interfaces bound the sum: two 100 Mbit/s servers behind a
// client with no limit of its own carry twice one; behind one 100 Mbit/s
// client port, one.
func TestPathCeilingTargets(t *testing.T) {
	port := func(host, kind string, mbps int) box.PathIface {
		return box.PathIface{Host: host, Iface: "eth0", Kind: kind, SpeedMbps: mbps}
	}
	res := func(client box.PathIface) *results.Result {
		r := &results.Result{Spec: wire.Spec{Proto: "udp", Direction: wire.Forward}, Targets: make([]results.TargetResult, 2)}
		r.Drops = []results.EndDrops{
			{Side: "client", Target: -1, Path: []box.PathIface{client}},
			{Side: "server", Target: 0, Path: []box.PathIface{port("server 1", "", 100)}, Delta: &box.Drops{Netns: 11}},
			{Side: "server", Target: 1, Path: []box.PathIface{port("server 2", "", 100)}, Delta: &box.Drops{Netns: 12}},
		}
		return r
	}
	one, _ := ceiling.PathCeiling([]box.PathIface{port("x", "", 100)}, ceiling.SingleFrame(1518))
	lim, ok := results.PathCeiling(res(port("client", "veth", 0)), 1518)
	if !ok || math.Abs(lim.FPS-2*one.FPS) > 1 {
		t.Errorf("two 100M targets behind an unlimited client: %+v, want %.0f fps", lim, 2*one.FPS)
	}
	lim, ok = results.PathCeiling(res(port("client", "", 100)), 1518)
	if !ok || math.Abs(lim.FPS-one.FPS) > 1 || !strings.Contains(lim.What, "shared by the 2 targets") {
		t.Errorf("behind one 100M client port: %+v, want %.0f fps", lim, one.FPS)
	}
}
