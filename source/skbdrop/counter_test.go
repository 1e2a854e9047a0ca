//go:build !small

package skbdrop

import (
	"net/netip"
	"testing"

	"linerate/internal/testenv"
)

// TestCountsDropsOnPurpose drops packets three ways inside a namespace of
// its own and finds each count under its reason and that namespace.
func TestCountsDropsOnPurpose(t *testing.T) {
	testenv.RequireRoot(t)
	c, err := Start()
	if err != nil {
		t.Fatalf("start (this kernel has BTF and raw tracepoints): %v", err)
	}
	t.Cleanup(func() { c.Close() })
	ns := testenv.NewNetNS(t)
	inum := ns.Inode(t)
	flush := &testenv.Flush{Sink: ns.ListenUDP(t, "127.0.0.1:7000", 0)}

	before, err := c.Read(inum)
	if err != nil {
		t.Fatal(err)
	}
	// A closed port: NO_SOCKET.
	sent := ns.SendUDP(t, netip.MustParseAddrPort("127.0.0.1:9"), 50, 64, flush)
	// An nftables rule: NETFILTER_DROP.
	ns.DropUDP(t, testenv.HookInput, 7001, 1)
	sent2 := ns.SendUDP(t, netip.MustParseAddrPort("127.0.0.1:7001"), 40, 64, flush)
	// A tiny receive buffer nobody reads: SOCKET_RCVBUFF.
	tiny := ns.ListenUDP(t, "127.0.0.1:7002", 1)
	sent3 := ns.SendUDP(t, netip.MustParseAddrPort("127.0.0.1:7002"), 200, 64, flush)
	queued := tiny.Drain(t)

	after, err := c.Read(inum)
	if err != nil {
		t.Fatal(err)
	}
	got := func(r string) uint64 { return after[r] - before[r] }
	for _, w := range []struct {
		reason string
		want   uint64
	}{
		{"NO_SOCKET", uint64(sent)},
		{"NETFILTER_DROP", uint64(sent2)},
		{"SOCKET_RCVBUFF", uint64(sent3 - queued)},
	} {
		if g := got(w.reason); g != w.want {
			t.Errorf("%s: counted %d, want %d (all reasons now: %v)", w.reason, g, w.want, after)
		}
	}
	if queued == 0 || queued == sent3 {
		t.Errorf("tiny buffer held %d of %d datagrams: the test did not drop at the socket", queued, sent3)
	}
	t.Logf("namespace %d: %d NO_SOCKET, %d NETFILTER_DROP, %d SOCKET_RCVBUFF (%d queued)", inum,
		got("NO_SOCKET"), got("NETFILTER_DROP"), got("SOCKET_RCVBUFF"), queued)
}
