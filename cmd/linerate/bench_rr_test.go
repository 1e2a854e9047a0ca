package main

import (
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netns"

	"linerate/lab"
	"linerate/results"
)

// rrResult reads a bench rr --json result and checks what holds of every
// transaction test: figures present, percentiles in order, streams adding
// up to the total.
func rrResult(t *testing.T, what string, r result) *results.Result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\n%s%s", what, r.code, r.stdout, r.stderr)
	}
	var res results.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, r.stdout)
	}
	rr := res.RR
	if rr == nil || rr.Transactions == 0 {
		t.Fatalf("%s: no transactions: %s", what, r.stdout)
	}
	l := rr.Latency
	if !(0 < l.Min && l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("%s: percentiles out of order: %+v", what, l)
	}
	var sum uint64
	for _, s := range rr.Streams {
		sum += s.Transactions
	}
	if sum != rr.Transactions {
		t.Errorf("%s: streams add to %d, the total is %d", what, sum, rr.Transactions)
	}
	t.Logf("%s: %d transactions, %.0f tps, p50 %.0f µs, p99 %.0f µs, p99.9 %.0f µs; %d timeouts, %d failed connects, %d errors",
		what, rr.Transactions, rr.TPS, l.P50, l.P99, l.P999, rr.Timeouts, rr.ConnectFailures, rr.Errors)
	return &res
}

// TestBenchRRPair runs bench rr over a pair lab against b's agent: TCP,
// UDP and a connection per transaction each complete as many transactions
// as the server answered; bad input is refused with one line.
func TestBenchRRPair(t *testing.T) {
	l := upAgentLab(t, "rr-", "pair")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"tcp", nil},
		{"udp", []string{"--udp", "--streams", "2"}},
		{"connect", []string{"--connect", "--streams", "2"}},
	} {
		res := rrResult(t, c.name, l.exec("a", append([]string{"linerate", "bench", "rr", "--to", "b", "-t", "1", "--json", "--no-save"}, c.args...)...))
		rr := res.RR
		if rr.Answered != rr.Transactions {
			t.Errorf("%s: the server answered %d, the client completed %d", c.name, rr.Answered, rr.Transactions)
		}
		if c.name == "connect" && rr.Connections != rr.Transactions {
			t.Errorf("connect: %d connections for %d transactions", rr.Connections, rr.Transactions)
		}
	}
	csv := l.exec("a", "linerate", "bench", "rr", "--to", "b", "-t", "1", "--size", "32,1000", "--csv", "--no-save")
	if lines := strings.Split(strings.TrimSpace(csv.stdout), "\n"); csv.code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "target,proto,connect,request,response") ||
		!strings.Contains(lines[1], ",tcp,false,32,1000,") {
		t.Errorf("--csv: %d\n%s%s", csv.code, csv.stdout, csv.stderr)
	}
	for _, bad := range [][]string{{"--udp", "--connect"}, {"--size", "0"}, {"--size", "1,2,3"}, {"--rate", "1M"}, {"--reverse"}} {
		r := l.exec("a", append([]string{"linerate", "bench", "rr", "--to", "b", "--no-save"}, bad...)...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stderr == "" {
			t.Errorf("bench rr %v: exit %d, want 2 and one line\n%s", bad, r.code, r.stderr)
		}
	}
}

// TestBenchRRConntrackFull runs a connection per transaction from lan to
// wan through the NAT router lab while the router's conntrack table is
// full: its agent's samples show the count at nf_conntrack_max and the
// tracker evicting or dropping, bench rr names the full table, and so
// does diagnose over the saved result.
//
// The table is filled with UDP flows first: on this kernel
// nf_conntrack_max cannot be lowered inside a namespace (it is read-only
// there since Linux 6.x; the count is per namespace, the max global), so
// the router's table is filled to the global max with one datagram per
// 5-tuple, each an unreplied entry for 30 s.
func TestBenchRRConntrackFull(t *testing.T) {
	l := upAgentLab(t, "rrct-", "router")
	limit := readUint(t, "/proc/sys/net/netfilter/nf_conntrack_max")
	if limit > 1<<20 {
		t.Skipf("nf_conntrack_max is %d: too many entries to fill in a test", limit)
	}
	wan := netip.MustParseAddr(strings.TrimSpace(run(t, l.bin, "lab", "addr", "--state-dir", l.dir, l.name, "wan").stdout))
	fillConntrack(t, lab.NetnsPrefix+l.name+"-lan", wan, int(limit)+int(limit)/8)

	out := filepath.Join(t.TempDir(), "rr.json")
	r := l.exec("lan", "linerate", "bench", "rr", "--to", "wan", "--connect", "--streams", "2", "-t", "2", "--sample", "router", "--out", out, "--no-save")
	t.Logf("bench rr:\n%s%s", r.stdout, r.stderr)
	if !strings.Contains(r.stdout, "conntrack table full on router:7557: ") || !strings.Contains(r.stdout, "nf_conntrack_tcp_timeout_time_wait") {
		t.Errorf("bench rr does not name the full table: exit %d", r.code)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res results.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.RR == nil || len(res.RR.Middle) != 1 {
		t.Fatalf("no conntrack of the router in the result: %+v", res.RR)
	}
	m := res.RR.Middle[0]
	// A new connection at the max evicts an entry first (early_drop), so
	// the count hovers at the max and one or two below it.
	if m.Max != limit || m.Peak < m.Max-m.Max/100 || m.Drop+m.InsertFailed+m.EarlyDrop == 0 || !m.Full() {
		t.Errorf("router's conntrack %+v: want the peak at max %d and entries dropped or evicted", m, limit)
	}
	d := run(t, l.bin, "diagnose", out, "--side", "dut", "--rule", "conntrack-drop")
	if !strings.Contains(d.stdout, "conntrack table full on router:7557: ") {
		t.Errorf("diagnose %s --side dut: %d\n%s%s", out, d.code, d.stdout, d.stderr)
	}
}

func readUint(t *testing.T, path string) uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v uint64
	for _, c := range strings.TrimSpace(string(b)) {
		v = v*10 + uint64(c-'0')
	}
	return v
}

// fillConntrack sends n datagrams from namespace ns to n different ports
// of to (a few source ports over every destination port): each is a
// connection the router between them tracks.
func fillConntrack(t *testing.T, ns string, to netip.Addr, n int) {
	t.Helper()
	h, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var conns []*net.UDPConn
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // left locked: the thread ends with the goroutine
		orig, err := netns.Get()
		if err == nil {
			err = netns.Set(h)
		}
		if err != nil {
			done <- err
			return
		}
		for range n/65535 + 1 {
			c, err := net.ListenUDP("udp", nil)
			if err != nil {
				done <- err
				return
			}
			conns = append(conns, c)
		}
		done <- netns.Set(orig)
		orig.Close()
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	sent := 0
	for _, c := range conns {
		for port := 1; port <= 65535 && sent < n; port++ {
			if _, err := c.WriteToUDPAddrPort([]byte{0}, netip.AddrPortFrom(to, uint16(port))); err == nil {
				sent++
			}
		}
	}
	t.Logf("%d datagrams to %d ports of %s sent from %s", sent, min(n, 65535), to, ns)
}
