package traffic

import (
	"context"
	"sync"
	"testing"
	"time"

	"linerate/results"
	"linerate/wire"
)

// TestIntervalsUnknownWhileLinkDown cuts the server's veth for 3 s in the
// middle of a UDP bench: the seconds with no report from the server are
// unknown on the receiving side, in the lines and in the result, never a
// copy of the last rate received.
func TestIntervalsUnknownWhileLinkDown(t *testing.T) {
	l := newLab(t, &Server{})
	h := l.b.Netlink(t)
	link, err := h.LinkByName("lrb")
	if err != nil {
		t.Fatal(err)
	}
	// Whatever happens, the link is up again before the namespaces go.
	t.Cleanup(func() { _ = h.LinkSetUp(link) })

	const cut = 3 * time.Second
	cfg := l.config(udpSpec(8*time.Second, wire.Rate{PPS: 20000}))
	cfg.FrameSize = 128
	var mu sync.Mutex
	var cutFrom, cutTo time.Time
	seen := map[float64]time.Time{} // interval end → when the line came
	cutDone := make(chan struct{})
	cfg.OnInterval = func(iv results.IntervalStats) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		seen[iv.T] = now
		if iv.T >= 2 && cutFrom.IsZero() {
			if err := h.LinkSetDown(link); err != nil {
				t.Errorf("set lrb down: %v", err)
				close(cutDone)
				return
			}
			cutFrom = time.Now()
			go func() {
				defer close(cutDone)
				time.Sleep(cut)
				if err := h.LinkSetUp(link); err != nil {
					t.Errorf("set lrb up: %v", err)
				}
				mu.Lock()
				cutTo = time.Now()
				mu.Unlock()
			}()
		}
	}
	res, err := Run(context.Background(), cfg)
	<-cutDone
	if res == nil {
		t.Fatalf("no result: %v", err)
	}
	if err != nil {
		t.Logf("run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if cutTo.IsZero() {
		t.Fatal("the link was never cut")
	}
	inside := 0
	for _, iv := range res.Intervals {
		at, ok := seen[iv.T]
		if !ok {
			t.Errorf("interval %.1f s in the result was never shown", iv.T)
			continue
		}
		t.Logf("%.1f s (cut %+.1f s): sent %.0f pps, received %.0f pps, received unknown %v",
			iv.T, at.Sub(cutFrom).Seconds(), iv.SentPPS, iv.ReceivedPPS, iv.ReceivedUnknown)
		switch {
		case at.Before(cutFrom):
			// Before the cut the server reported every second.
			if iv.T > 1 && iv.ReceivedUnknown {
				t.Errorf("interval %.1f s before the cut: received unknown", iv.T)
			}
		case at.Sub(cutFrom) > 1400*time.Millisecond && at.Before(cutTo):
			// The whole second (and the 300 ms it waits for the report)
			// fell inside the cut: the server's report cannot have come.
			inside++
			if !iv.ReceivedUnknown || iv.ReceivedPPS != 0 || iv.ReceivedBPS != 0 {
				t.Errorf("interval %.1f s inside the cut: received %.0f pps, unknown %v; want unknown and no figure",
					iv.T, iv.ReceivedPPS, iv.ReceivedUnknown)
			}
			if iv.SentUnknown || iv.SentPPS == 0 {
				t.Errorf("interval %.1f s inside the cut: sent %.0f pps, unknown %v; the client counts what it sends",
					iv.T, iv.SentPPS, iv.SentUnknown)
			}
		}
	}
	if inside == 0 {
		t.Fatalf("no interval fell inside the %s cut", cut)
	}
}

// TestRingResumesAfterLinkDown sets the sending interface down for 3 s in
// the middle of a ring-engine bench at 20 kpps: the ring engine pauses on
// ENETDOWN and sends again once the link is up, with no error (it used to
// stop for good), at the asked rate: the frames of the cut are held back,
// counted as such, not sent late in a burst (it used to catch up on the
// cut's frames in the second after it: docs/bench.md).
func TestRingResumesAfterLinkDown(t *testing.T) { testFramesResumeAfterLinkDown(t, "ring") }

// TestXDPResumesAfterLinkDown is the same cut under the AF_XDP engine,
// which shares the ring's pause: it used to resume and send the frames
// of the cut in a burst (nothing held back, verdict "asked rate").
func TestXDPResumesAfterLinkDown(t *testing.T) { testFramesResumeAfterLinkDown(t, "xdp") }

func testFramesResumeAfterLinkDown(t *testing.T, engine string) {
	l := newLab(t, &Server{})
	if engine == "xdp" {
		skipWithoutAFXDP(t, l)
	}
	cut := newLinkCut(t, l.a.Netlink(t), "lra", 2, 3*time.Second)
	cfg := l.config(udpSpec(8*time.Second, wire.Rate{PPS: 20000}))
	cfg.FrameSize, cfg.Engine = 128, engine
	res, down, up, err := runCut(t, cfg, cut)
	if err != nil {
		t.Errorf("run: %v; want the %s engine to pause while the link is down, not fail", err, engine)
	}
	n := len(res.Intervals)
	if n < 7 {
		t.Fatalf("%d intervals of an 8 s run", n)
	}
	if last := res.Intervals[n-2]; last.ReceivedPPS < 15000 {
		t.Errorf("interval %.1f s, after the link came back: received %.0f pps; want the sending resumed", last.T, last.ReceivedPPS)
	}
	for _, iv := range res.Intervals {
		if iv.SentPPS > 1.1*20000 {
			t.Errorf("interval %.1f s: sent %.0f pps of 20000 asked: the cut caught up in a burst", iv.T, iv.SentPPS)
		}
	}
	s := res.Summary
	t.Logf("summary: sent %d received %d lost %d held back %d, limited by %q (%s)", s.SentPackets, s.ReceivedPackets, s.LostPackets, s.HeldBackLinkDown, s.LimitedBy, s.LimitedWhy)
	// The rate allowed 20000 a second of the cut; a batch requested
	// before it may go once the link is up.
	cutPkts := 20000 * up.Sub(down).Seconds()
	if h := float64(s.HeldBackLinkDown); h < 0.9*cutPkts || h > 1.1*cutPkts {
		t.Errorf("held back %d; want about the cut's %.0f", s.HeldBackLinkDown, cutPkts)
	}
	if total := float64(s.SentPackets + s.HeldBackLinkDown); total < 0.98*160000 || total > 1.01*160000 {
		t.Errorf("sent %d + held back %d: want the 160000 the rate allowed", s.SentPackets, s.HeldBackLinkDown)
	}
	checkEvent(t, findEvent(t, res, results.SideClient, "lra"), -1, "set down", res.Time, down, up, 0.2)
	if s.LimitedBy != results.LimitLinkDown {
		t.Errorf("verdict %q (%s), want link down", s.LimitedBy, s.LimitedWhy)
	}
}
