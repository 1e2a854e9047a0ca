package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"linerate/ledger"
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
