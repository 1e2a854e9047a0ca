package drivertest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"linerate/box"
	"linerate/lab"
	"linerate/ledger"
	"linerate/results"
	"linerate/source/rtnl"
	"linerate/wire"
)

// Traffic through real drivers: bench udp and tcp from a namespace node
// into a guest's agent and out of the guest, each result checked against
// the counters of the two ends' interfaces (the guest's NIC, driven by its
// driver, and the tap behind it in the namespace). Under TCG the rates are
// the emulator's: nothing here asserts a rate, only counts that must agree.

// bench runs linerate bench with args in node (--json, --no-save: nothing
// is written to the history of the host) and returns its result.
func (l *vmLab) bench(node string, args ...string) *results.Result {
	l.t.Helper()
	out := l.must(node, append(append([]string{l.bin, "bench"}, args...), "--json", "--no-save")...)
	var r results.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		l.t.Fatalf("bench %s in %s: %v\n%s", strings.Join(args, " "), node, err, out)
	}
	return &r
}

// put writes data to path inside node (lab exec with stdin).
func (l *vmLab) put(node, path string, data []byte) {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.bin, "lab", "--state-dir", l.dir, "exec", l.name, node, "--", "sh", "-c", `cat > "$0"`, path)
	cmd.Env = append(os.Environ(), lab.EnvCacheDir+"="+cacheDir(l.t))
	cmd.Stdin = bytes.NewReader(data)
	if out, err := cmd.CombinedOutput(); err != nil {
		l.t.Fatalf("write %s in %s: %v\n%s", path, node, err, out)
	}
}

// end is one end's counters over the test's window.
func end(t *testing.T, r *results.Result, side results.Side) *box.Drops {
	t.Helper()
	for _, d := range r.Drops {
		if d.Side == side && d.Delta != nil {
			return d.Delta
		}
	}
	t.Fatalf("no counters of the %s's end in the result", side)
	return nil
}

// linkStats is iface's counters in d.
func linkStats(t *testing.T, d *box.Drops, iface string) rtnl.LinkStats {
	t.Helper()
	l, ok := d.Links[iface]
	if !ok {
		t.Fatalf("no interface %s in the counters (%v)", iface, d.Links)
	}
	return l.Stats
}

// windowSlack is how many of n packets counted by the test an end's
// counters may miss: they are read over that end's own window, and a
// guest under TCG, its CPUs shared with the emulator and the host's other
// work, fires the timer that opens it late by tens of ms while the
// packets sent in the window are already arriving.
func windowSlack(n uint64) uint64 { return n/50 + 50 }

// checkUDP checks what every UDP result must say: the loss is sent less
// received; the sending end's interface passed (or dropped) every packet
// sent; the receiving end's took at least what the test received; and a
// loss is placed by a ledger that balances.
func checkUDP(t *testing.T, r *results.Result, sendIface, recvIface string, sendSide, recvSide results.Side) {
	t.Helper()
	s := r.Summary
	t.Logf("udp %s: sent %d, received %d, lost %d; limited by %s: %s", r.Spec.Direction, s.SentPackets, s.ReceivedPackets, s.LostPackets, s.LimitedBy, s.LimitedWhy)
	if s.SentPackets == 0 || s.ReceivedPackets == 0 {
		t.Fatalf("sent %d, received %d: no traffic", s.SentPackets, s.ReceivedPackets)
	}
	if s.LostPackets != s.SentPackets-min(s.ReceivedPackets, s.SentPackets) {
		t.Errorf("lost %d is not sent %d less received %d", s.LostPackets, s.SentPackets, s.ReceivedPackets)
	}
	tx := linkStats(t, end(t, r, sendSide), sendIface)
	rx := linkStats(t, end(t, r, recvSide), recvIface)
	t.Logf("%s: tx %d, tx_dropped %d; %s: rx %d", sendIface, tx.TxPackets, tx.TxDropped, recvIface, rx.RxPackets)
	if tx.TxPackets+tx.TxDropped+windowSlack(s.SentPackets) < s.SentPackets {
		t.Errorf("%s passed %d and dropped %d packets, fewer than the %d sent", sendIface, tx.TxPackets, tx.TxDropped, s.SentPackets)
	}
	if rx.RxPackets+windowSlack(s.ReceivedPackets) < s.ReceivedPackets {
		t.Errorf("%s received %d packets, fewer than the test's %d", recvIface, rx.RxPackets, s.ReceivedPackets)
	}
	if s.LostPackets == 0 {
		return
	}
	l := r.Ledger
	if l == nil {
		t.Fatalf("%d lost and no ledger", s.LostPackets)
	}
	for _, e := range l.Entries {
		t.Logf("ledger: %s %s %s %d %v", e.Host, e.Side, e.Place, e.Packets, e.Evidence)
	}
	if !l.Balanced() || l.Placed()+l.Unaccounted() != l.Lost+l.Excess {
		t.Errorf("ledger of %d lost places %d, %d unaccounted, excess %d: does not balance (notes %q)", l.Lost, l.Placed(), l.Unaccounted(), l.Excess, l.Notes)
	}
}

// checkQueues checks the receiving interface's per-queue counts over the
// window (want queues, counted by counter) and, when sampled is set, the
// per-queue rates in the receiving end's once-a-second samples.
func checkQueues(t *testing.T, r *results.Result, iface, counter string, queues int, sampled bool) {
	t.Helper()
	q := r.Targets[0].RxQueues
	if q == nil || q.Error != "" || q.Interface != iface || q.Counter != counter || len(q.Packets) != queues {
		t.Fatalf("rx queues %+v: want %d queues of %s counted by %s", q, queues, iface, counter)
	}
	if q.Total()+windowSlack(r.Summary.ReceivedPackets) < r.Summary.ReceivedPackets {
		t.Errorf("the driver's queues counted %d packets, fewer than the %d received", q.Total(), r.Summary.ReceivedPackets)
	}
	if !sampled {
		return
	}
	n := 0
	for _, s := range r.Samples {
		if s.Side != results.SideServer {
			continue
		}
		n++
		if got := s.RxQueues[iface]; len(got) != queues {
			t.Errorf("a sample of the server has rx queues %v for %s, want %d", s.RxQueues, iface, queues)
		}
	}
	if n == 0 {
		t.Error("no samples of the server")
	}
}

// checkTCP checks that the bytes a TCP test received passed the receiving
// interface and those it sent the sending one.
func checkTCP(t *testing.T, r *results.Result, sendIface, recvIface string, sendSide, recvSide results.Side) {
	t.Helper()
	s := r.Summary
	tx := linkStats(t, end(t, r, sendSide), sendIface)
	rx := linkStats(t, end(t, r, recvSide), recvIface)
	t.Logf("tcp %s: sent %d bytes, received %d; %s tx %d bytes, %s rx %d bytes", r.Spec.Direction, s.SentBytes, s.ReceivedBytes, sendIface, tx.TxBytes, recvIface, rx.RxBytes)
	if s.ReceivedBytes == 0 {
		t.Fatal("no bytes received")
	}
	if rx.RxBytes+windowSlack(s.ReceivedBytes) < s.ReceivedBytes {
		t.Errorf("%s received %d bytes, fewer than the test's %d", recvIface, rx.RxBytes, s.ReceivedBytes)
	}
	if tx.TxBytes+windowSlack(s.SentBytes) < s.SentBytes {
		t.Errorf("%s sent %d bytes, fewer than the test's %d", sendIface, tx.TxBytes, s.SentBytes)
	}
}

// TestTrafficVirtio: virtio-net with two queues. Into the guest, AF_XDP
// from the namespace (the tap: copy mode) with the XDP counter in the
// guest's driver (native); out of it, AF_XDP from the guest on virtio-net
// (copy mode: Linux 6.1's virtio_net has no AF_XDP zero-copy) and TCP both
// ways. The driver's per-queue counters are in the result and in the
// server's samples.
func TestTrafficVirtio(t *testing.T) {
	l := upLab(t, "dtt", "pair", "--vm", "b", "--nic", "virtio", "--queues", "2", "--vm-cpus", "2", "--serve")

	r := l.bench("a", "udp", "--to", "b", "-t", "2", "--rate", "2kpps", "--ports", "2", "--xdp")
	checkUDP(t, r, "b", "a", results.SideClient, results.SideServer)
	checkQueues(t, r, "a", results.CounterEthtool, 2, true)
	if x := r.Targets[0].XDP; x == nil || x.Error != "" || x.Mode != results.XDPNative || x.Packets+windowSlack(r.Summary.ReceivedPackets) < r.Summary.ReceivedPackets {
		t.Errorf("xdp counter in the guest %+v: want virtio_net to take it native, counting the %d received", x, r.Summary.ReceivedPackets)
	}
	if a := r.Targets[0].AFXDP; a == nil || a.Interface != "b" || a.Mode != results.XDPGeneric || a.ZeroCopy != 0 || a.ZeroCopyError == "" {
		t.Errorf("afxdp from the namespace %+v: want copy mode on the tap b, and why not zero-copy", a)
	}

	r = l.bench("b", "udp", "--to", "a", "-t", "2", "--rate", "2kpps", "--ports", "2", "--engine", "xdp")
	checkUDP(t, r, "a", "b", results.SideClient, results.SideServer)
	if a := r.Targets[0].AFXDP; a == nil || a.Interface != "a" || a.Sockets != 2 || a.Mode != results.XDPGeneric || a.ZeroCopyError == "" {
		t.Errorf("afxdp in the guest %+v: want 2 sockets on virtio-net a in copy mode, and why not zero-copy", a)
	}
	t.Logf("afxdp in the guest: %+v", r.Targets[0].AFXDP)

	r = l.bench("a", "tcp", "--to", "b", "-t", "2")
	checkTCP(t, r, "b", "a", results.SideClient, results.SideServer)
	r = l.bench("a", "tcp", "--to", "b", "-t", "2", "-R")
	checkTCP(t, r, "a", "b", results.SideServer, results.SideClient)
}

// TestTrafficE1000E: e1000e, one queue. UDP into the guest faster than
// the emulated NIC takes it: the tap in front of it drops what the guest
// had no room for, and the ledger says so once (the tap's tx_dropped and
// the FULL_RING drop reason are the same packets), balanced, the limit the
// receiver's. The one queue's count is the NIC's own; the XDP counter,
// which e1000e cannot run in the driver, runs generic and says why. Then
// UDP from the guest's agent (-R) and TCP from the guest.
func TestTrafficE1000E(t *testing.T) {
	l := upLab(t, "dte1", "pair", "--vm", "b", "--nic", "e1000e", "--serve")

	r := l.bench("a", "udp", "--to", "b", "-t", "2", "--rate", "100kpps", "--xdp")
	checkUDP(t, r, "b", "a", results.SideClient, results.SideServer)
	checkQueues(t, r, "a", results.CounterLink, 1, false)
	// e1000e has no XDP in the driver: the counter runs generic, and
	// says why.
	if x := r.Targets[0].XDP; x == nil || x.Error != "" || x.Mode != results.XDPGeneric || x.NativeError == "" {
		t.Errorf("xdp counter on e1000e %+v: want generic, with the driver's refusal of native", x)
	}
	if r.Summary.LostPackets == 0 {
		t.Fatalf("no loss at 100 kpps into an emulated e1000e: nothing to place")
	}
	ring := false
	for _, e := range r.Ledger.Entries {
		if e.Host == "client" && e.Place == ledger.NICTx {
			t.Errorf("the tap's drops placed at the client's transmit path: %+v", e)
		}
		ring = ring || (e.Host == "client" && e.Place == ledger.NICRxRing && e.Packets > r.Summary.LostPackets/2)
	}
	if !ring {
		t.Errorf("ledger %+v: most of the loss is not where the tap's reader had no room", r.Ledger.Entries)
	}
	if r.Summary.LimitedBy != results.LimitReceiver {
		t.Errorf("limited by %q (%s), want the receiver: the guest's NIC had no room", r.Summary.LimitedBy, r.Summary.LimitedWhy)
	}

	r = l.bench("a", "udp", "--to", "b", "-t", "2", "--rate", "2kpps", "-R")
	if r.Spec.Direction != wire.Reverse {
		t.Fatalf("direction %s", r.Spec.Direction)
	}
	checkUDP(t, r, "a", "b", results.SideServer, results.SideClient)

	r = l.bench("b", "tcp", "--to", "a", "-t", "2")
	checkTCP(t, r, "a", "b", results.SideClient, results.SideServer)
}
