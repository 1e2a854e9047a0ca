package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"linerate/ledger"
	"linerate/search"
)

var updateGolden = flag.Bool("update", false, "rewrite report/testdata from the current output")

func TestLedger(t *testing.T) {
	// The figures of ledger's privileged all-at-once test.
	l := ledger.Ledger{Sent: 1800, Received: 2, Lost: 1798, Entries: []ledger.Entry{
		{Host: "server", Side: ledger.Receiver, Place: ledger.Netfilter, Packets: 98,
			Evidence: []string{"nft rule inet lrt input #2 (drop): 98 packets", "drop reason NETFILTER_DROP 98"}},
		{Host: "router", Side: ledger.Path, Place: ledger.Qdisc, Packets: 1115,
			Evidence: []string{"tbf 1: on r1: 1115 dropped, 2416 overlimits (limit 20000 bytes)", "drop reason QDISC_DROP 1115"}},
		{Host: "server", Side: ledger.Receiver, Place: ledger.SocketBuffer, Packets: 585,
			Evidence: []string{"Udp RcvbufErrors 585, MemErrors 0", "drop reason SOCKET_RCVBUFF 584"}},
	}, Notes: []string{"client: Ip InDiscards 0, OutDiscards 200 (seen, not placed: other counters own those drops)"}}
	golden(t, "ledger.txt", func(b *bytes.Buffer) error { return Ledger(b, l) })
	golden(t, "ledger-none.txt", func(b *bytes.Buffer) error { return Ledger(b, ledger.Ledger{Sent: 1000, Received: 1000}) })
	if err := Ledger(&ceilFailWriter{}, l); err == nil {
		t.Error("a failing writer gave no error")
	}
}

func golden(t *testing.T, name string, write func(*bytes.Buffer) error) {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("%s differs:\n%s\nwant:\n%s", name, b.String(), want)
	}
}

func TestSearch(t *testing.T) {
	// The figures of search's benchmark over a 100 Mbit/s tbf (1518 B), and
	// of a 64-byte search on a 1 Gb/s line.
	trials := func(n int, d time.Duration) []search.Record {
		out := make([]search.Record, n)
		for i := range out {
			out[i].Spec.Duration = d
		}
		return out
	}
	rs := []search.SizeResult{
		{Size: "64", FrameBytes: 64, NDRPPS: 812000, NDRBps: 812000 * 64 * 8, PDRPPS: 818000, PDRBps: 818000 * 64 * 8, PDRLoss: 0.005, CeilingPPS: 1488095, Trials: trials(9, time.Second)},
		{Size: "1518", FrameBytes: 1518, NDRPPS: 8221, NDRBps: 8221 * 1518 * 8, PDRPPS: 8263, PDRBps: 8263 * 1518 * 8, PDRLoss: 0.005, CeilingPPS: 8256, Trials: trials(10, 1220*time.Millisecond)},
		{Size: "imix", FrameBytes: 353.83, NDRPPS: 30000, NDRBps: 30000 * 353.83 * 8, Trials: trials(3, time.Second)},
	}
	golden(t, "search.txt", func(b *bytes.Buffer) error { return Search(b, rs) })
}
