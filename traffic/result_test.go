package traffic

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCombineUDP(t *testing.T) {
	sent := []Count{{Stream: 0, Packets: 1000, Bytes: 18000}, {Stream: 1, Packets: 500, Bytes: 9000}}
	recv := []Count{{Stream: 0, Packets: 990, Bytes: 17820, Unique: 980, Dup: 10, Reorder: 3}}
	tot, streams := combine(2, Forward, "udp", sent, recv, nil, 2, UDPOverhead(true))
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

func TestCombineTCPWarmup(t *testing.T) {
	// The sender wrote 100 bytes in the warmup and 1000 after; the
	// receiver's clock split the same 1100 bytes 60/1040.
	sent := []Count{{Bytes: 1000, Warmup: 100}}
	recv := []Count{{Bytes: 1040, Warmup: 60}}
	tot, _ := combine(0, Forward, "tcp", sent, recv, []TCPStat{{Stream: 0, Retransmits: 7}}, 1, 0)
	if tot.ReceivedBytes != 1000 || tot.SentBytes != 1000 || tot.Retransmits != 7 {
		t.Errorf("%+v", tot)
	}
	if tot.ReceivedBPS != 8000 {
		t.Errorf("goodput %v", tot.ReceivedBPS)
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
