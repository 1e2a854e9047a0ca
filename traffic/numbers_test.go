package traffic

import (
	"context"
	"math"
	"testing"
	"time"

	"linerate/results"
	"linerate/wire"
)

// TestUDPCountsMatchRxCounter: with and without warmup, what the server
// received in the measured window is what its interface received between
// the drop counters' snapshots (the window's start and after the
// receivers drained), less the latency probes, within 0.5 %. Without
// warmup, the first and the last second's interval lines agree with the
// interface counters of the same seconds (each end's samples, on its own
// clock; the server's less the probes), within 3 %: the first line counts
// the server's first second. (The samples and the lines are taken by two
// timers of each end: on a busy machine they fire some ms apart.)
func TestUDPCountsMatchRxCounter(t *testing.T) {
	for _, warmup := range []time.Duration{0, 500 * time.Millisecond} {
		t.Run(warmup.String(), func(t *testing.T) {
			_, cfg := withDrops(t, &Server{})
			cfg.Spec.Rate = wire.Rate{PPS: 40000}
			cfg.Spec.Warmup = wire.Seconds(warmup)
			cfg.Spec.Duration = wire.Seconds(2 * time.Second)
			cfg.Spec.ProbeInterval = wire.Seconds(10 * time.Millisecond)
			cfg.FrameSize = 64
			res, _ := runLedger(t, cfg)
			var rx uint64
			for _, d := range res.Drops {
				if d.Side == "server" && d.Delta != nil {
					rx = d.Delta.Links["lrb"].Stats.RxPackets
				}
			}
			s := res.Summary
			probes := uint64(0)
			if s.LatencyLoad != nil {
				probes = uint64(s.LatencyLoad.Sent)
			}
			t.Logf("received %d; lrb rx %d in the window, %d probes sent under load", s.ReceivedPackets, rx, probes)
			if rx == 0 || !closeTo(s.ReceivedPackets, rx-min(probes, rx), 0.005) {
				t.Errorf("received %d, the interface %d less %d probes: more than 0.5%% apart", s.ReceivedPackets, rx, probes)
			}
			if warmup > 0 {
				return
			}
			var client, server []results.Sample
			for _, sm := range res.Samples {
				if sm.Side == "client" {
					client = append(client, sm)
				} else {
					server = append(server, sm)
				}
			}
			if len(res.Intervals) < 2 || len(client) < 2 || len(server) < 2 {
				t.Fatalf("%d intervals, %d client and %d server samples in 2 s", len(res.Intervals), len(client), len(server))
			}
			for i := range 2 {
				iv := res.Intervals[i]
				tx, rx := client[i].NetDev["lra"].TxPps, server[i].NetDev["lrb"].RxPps-float64(probes)/s.Seconds
				t.Logf("second %d: sent %.0f pps, lra tx %.0f; received %.0f pps, lrb rx %.0f less probes", i+1, iv.SentPPS, tx, iv.ReceivedPPS, rx)
				if math.Abs(iv.SentPPS-tx) > 0.03*tx || math.Abs(iv.ReceivedPPS-rx) > 0.03*rx {
					t.Errorf("second %d: the interval line is more than 3%% from the interface counters", i+1)
				}
			}
		})
	}
}

// TestTCPIntervalsCountSegments: TCP interval lines carry segments per
// second on both ends, from the first line.
func TestTCPIntervalsCountSegments(t *testing.T) {
	l := newLab(t, &Server{})
	sp := wire.Spec{Proto: "tcp", Direction: wire.Forward, Duration: wire.Seconds(2 * time.Second), Streams: 1, Ports: 1, Threads: 1, MSS: 536}
	res, err := Run(context.Background(), l.config(sp))
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range res.Intervals {
		t.Logf("%.1fs: sent %.0f pps %.0f b/s, received %.0f pps %.0f b/s", iv.T, iv.SentPPS, iv.SentBPS, iv.ReceivedPPS, iv.ReceivedBPS)
		if iv.SentPPS <= 0 || iv.ReceivedPPS <= 0 {
			t.Errorf("interval at %.1fs: %.0f segments/s sent, %.0f received", iv.T, iv.SentPPS, iv.ReceivedPPS)
		}
		// Segments of at most 536 bytes: at least bytes/536 of them.
		if seg := iv.ReceivedBPS / 8 / 536; iv.ReceivedPPS < 0.95*seg {
			t.Errorf("interval at %.1fs: %.0f segments/s for %.0f B/s of 536-byte segments", iv.T, iv.ReceivedPPS, iv.ReceivedBPS/8)
		}
	}
	// The second line falls at the end of the run: on a busy machine the
	// tick can come after the senders stopped, and then there is one.
	if len(res.Intervals) < 1 {
		t.Errorf("%d interval lines in 2 s", len(res.Intervals))
	}
}
