package results

import (
	"encoding/json"
	"strings"
	"testing"

	"linerate/wire"
)

func TestCombineUDP(t *testing.T) {
	sent := []Count{{Stream: 0, Packets: 1000, Bytes: 18000}, {Stream: 1, Packets: 500, Bytes: 9000}}
	recv := []Count{{Stream: 0, Packets: 990, Bytes: 17820, Unique: 980, Dup: 10, Reorder: 3}}
	tot, streams := Combine(2, wire.Forward, "udp", sent, recv, nil, 2, wire.UDPOverhead(true))
	if len(streams) != 2 {
		t.Fatalf("%d streams", len(streams))
	}
	s0, s1 := streams[0], streams[1]
	if s0.Target != 2 || s0.LostPackets != 20 || s0.Duplicates != 10 || s0.Reordered != 3 {
		t.Errorf("stream 0: %+v", s0)
	}
	if s1.LostPackets != 500 || s1.LossRatio != 1 {
		t.Errorf("stream 1 (nothing arrived): %+v", s1)
	}
	if tot.SentPackets != 1500 || tot.ReceivedPackets != 990 || tot.LostPackets != 520 {
		t.Errorf("totals %+v", tot)
	}
	if tot.SentPPS != 750 || tot.ReceivedPPS != 495 {
		t.Errorf("rates %v %v", tot.SentPPS, tot.ReceivedPPS)
	}
	// 64-byte frames: 1500 × 64 × 8 bits in 2 s.
	if tot.SentBPS != 1500*64*8/2 {
		t.Errorf("sent bps %v", tot.SentBPS)
	}
}

func TestCombineTCPWindow(t *testing.T) {
	// The sender wrote 100 bytes in the warmup and 1000 in its window. The
	// receiver read 150 before its window (warmup bytes that came late),
	// 900 in it, and 50 after it: the window's received bytes are the 900
	// it read in the window, not the 1000 the sender wrote in its own.
	sent := []Count{{Bytes: 1000, Warmup: 100, Packets: 10}}
	recv := []Count{{Bytes: 900, Warmup: 150, Late: 50, Packets: 9}}
	tot, streams := Combine(0, wire.Forward, "tcp", sent, recv, []TCPStat{{Stream: 0, Retransmits: 7}}, 1, 0)
	if tot.ReceivedBytes != 900 || tot.SentBytes != 1000 || tot.Retransmits != 7 {
		t.Errorf("%+v", tot)
	}
	if tot.SentPackets != 10 || tot.ReceivedPackets != 9 {
		t.Errorf("packets sent %d, received %d: want the window's 10 and 9", tot.SentPackets, tot.ReceivedPackets)
	}
	if tot.SentBPS != 8000 || tot.ReceivedBPS != 7200 {
		t.Errorf("goodput sent %v, received %v", tot.SentBPS, tot.ReceivedBPS)
	}
	if len(streams) != 1 || streams[0].TCP == nil || streams[0].ReceivedBytes != 900 {
		t.Errorf("streams %+v", streams)
	}
}

func TestResultJSONFields(t *testing.T) {
	var r Result
	r.Summary.CPUSecondsPerMpkt.Client = ptr(1.5)
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{`"summary":{`, `"sent_packets":`, `"received_packets":`, `"sent_pps":`, `"received_pps":`,
		`"received_bps":`, `"loss_ratio":`, `"cpu_seconds_per_mpkt":{"client":1.5,"server":null}`, `"streams":`, `"targets":`, `"samples":`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("JSON lacks %s: %s", f, b)
		}
	}
}

// TestSearchHasNoSummary: a zero-loss search's JSON leaves the summary out
// rather than write one of zeros; other results keep theirs.
func TestSearchHasNoSummary(t *testing.T) {
	for _, c := range []struct {
		res  Result
		want bool
	}{{Result{Search: []SizeSearch{{}}}, false}, {Result{}, true}} {
		b, err := json.Marshal(c.res)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if _, ok := doc["summary"]; ok != c.want {
			t.Errorf("search %v: summary in the JSON %v, want %v", len(c.res.Search) > 0, ok, c.want)
		}
		if _, ok := doc["spec"]; !ok {
			t.Errorf("no spec in %s", b)
		}
	}
}
