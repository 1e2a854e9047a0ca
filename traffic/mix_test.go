package traffic

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"linerate/ceiling"
	"linerate/internal/usage"
	"linerate/results"
	"linerate/wire"
)

// checkMix checks a direction's per-size counts against the mix: each
// size's share of what was sent and of what was received is its weight's
// within 1 % (of its share), and the two ends agree on each size within
// the loss.
func checkMix(t *testing.T, what string, tot *results.Totals, mix ceiling.Mix) {
	t.Helper()
	if tot == nil {
		t.Fatalf("%s: no figures", what)
	}
	if len(tot.Sizes) != len(mix.Parts) {
		t.Fatalf("%s: sizes %+v, want %d", what, tot.Sizes, len(mix.Parts))
	}
	weights := 0
	for _, p := range mix.Parts {
		weights += p.Weight
	}
	var sent, recv uint64
	for i, s := range tot.Sizes {
		p := mix.Parts[i]
		want := float64(p.Weight) / float64(weights)
		t.Logf("%s: %d-byte frames: sent %d (%.2f%%), received %d (%.2f%%), want %.2f%%", what, s.Frame, s.SentPackets, 100*s.SentShare, s.ReceivedPackets, 100*s.ReceivedShare, 100*want)
		if s.Frame != p.Bytes {
			t.Errorf("%s: size %d is %d bytes, want %d", what, i, s.Frame, p.Bytes)
		}
		if math.Abs(s.SentShare-want) > 0.01*want || math.Abs(s.ReceivedShare-want) > 0.01*want {
			t.Errorf("%s: %d-byte frames are %.3f%% sent, %.3f%% received, want %.3f%% within 1%%", what, s.Frame, 100*s.SentShare, 100*s.ReceivedShare, 100*want)
		}
		if s.ReceivedPackets > s.SentPackets || s.SentPackets-s.ReceivedPackets > tot.LostPackets {
			t.Errorf("%s: %d-byte frames: sent %d, received %d, with %d lost in all", what, s.Frame, s.SentPackets, s.ReceivedPackets, tot.LostPackets)
		}
		sent += s.SentPackets
		recv += s.ReceivedPackets
	}
	if sent != tot.SentPackets || recv != tot.ReceivedPackets {
		t.Errorf("%s: sizes add up to %d sent, %d received; the totals are %d, %d", what, sent, recv, tot.SentPackets, tot.ReceivedPackets)
	}
	if sent < 1000 {
		t.Errorf("%s: sent only %d", what, sent)
	}
}

func TestImixSocketEngine(t *testing.T) {
	l := newLab(t, &Server{})
	for _, dir := range []wire.Direction{wire.Forward, wire.Reverse} {
		t.Run(string(dir), func(t *testing.T) {
			// 100 Mb/s of simple IMIX: 35,325 frames a second of 353.8
			// bytes on average.
			sp := udpSpec(time.Second, wire.Rate{BPS: 100e6})
			sp.Direction, sp.Ports, sp.Threads = dir, 2, 1
			cfg := l.config(sp)
			cfg.Mix = ceiling.SimpleIMIX
			before := ifStats(t, l.b, "lrb")
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			tr := res.Targets[0]
			tot := tr.Forward
			if dir == wire.Reverse {
				tot = tr.Reverse
			}
			checkMix(t, string(dir), tot, ceiling.SimpleIMIX)
			if dir == wire.Forward {
				// The interface saw the frames without their FCS: the
				// mix's bytes.
				after := ifStats(t, l.b, "lrb")
				var bytes uint64
				for _, s := range tot.Sizes {
					bytes += s.ReceivedPackets * uint64(s.Frame-4)
				}
				if got := after.rxBytes - before.rxBytes; !closeTo(got, bytes, 0.01) {
					t.Errorf("lrb received %d bytes, the sizes say %d", got, bytes)
				}
			}
			// Paced by bits: 100 Mb/s of mean frames.
			want := 100e6 / (ceiling.SimpleIMIX.MeanBytes() * 8)
			if math.Abs(tot.SentPPS-want) > 0.03*want {
				t.Errorf("sent %.0f pps, want %.0f for 100 Mb/s of imix", tot.SentPPS, want)
			}
			if res.Spec.Payload != 1518-wire.UDPOverhead(true) || len(res.Spec.Sizes) != 3 || res.Mix().Name != "imix" {
				t.Errorf("result spec %+v, mix %+v", res.Spec, res.Mix())
			}
		})
	}
}

// TestSearchImix: the zero-loss search of simple IMIX through a 100
// Mbit/s shaper finds the shaper's rate in IMIX frames (the ceiling counts
// the mix's mean frame), and its bit rate counts the mean frame.
func TestSearchImix(t *testing.T) {
	l, cfg := withDrops(t, &Server{})
	shape(t, l.a, "lra", 128000)
	_, r := searchNDR(t, cfg, 0.02, ceiling.SimpleIMIX)
	t.Logf("imix: NDR %.0f fps (%.1f Mb/s), ceiling %.0f fps, %d trials", r.NDRPPS, r.NDRBps/1e6, r.CeilingPPS, len(r.Trials))
	if r.Size != "imix" || r.CeilingPPS == 0 {
		t.Fatalf("search %+v", r)
	}
	// tbf counts frames without their FCS: 349.83 bytes of imix on
	// average, 35,731 a second at 100 Mbit/s.
	if want := 100e6 / 8 / (ceiling.SimpleIMIX.MeanBytes() - 4); math.Abs(r.CeilingPPS-want) > 0.01*want {
		t.Errorf("ceiling %.0f fps, want %.0f", r.CeilingPPS, want)
	}
	if r.NDRPPS < 0.9*r.CeilingPPS || r.NDRPPS > 1.05*r.CeilingPPS {
		t.Errorf("NDR %.0f fps, the shaper passes %.0f", r.NDRPPS, r.CeilingPPS)
	}
	if want := r.NDRPPS * ceiling.SimpleIMIX.MeanBytes() * 8; math.Abs(r.NDRBps-want) > 1 {
		t.Errorf("NDR %.0f b/s, want %.0f (mean frames)", r.NDRBps, want)
	}
}

// TestImixEngines: the ring and AF_XDP send a mix as the socket engine
// does: each size in its share on both ends, nothing lost at a modest
// rate, the receiving veth's bytes the sum of the frames; auto keeps
// choosing one of them for a mix.
func TestImixEngines(t *testing.T) {
	l := newLab(t, &Server{})
	for _, eng := range []string{"ring", "xdp", "auto"} {
		t.Run(eng, func(t *testing.T) {
			if eng != "ring" {
				skipWithoutAFXDP(t, l)
			}
			sp := udpSpec(time.Second, wire.Rate{PPS: 20000})
			if eng != "auto" {
				// Two streams interleaved in one sender (auto would not
				// send several flows per port through one veth queue).
				sp.Streams = 2
			}
			cfg := l.config(sp)
			cfg.Engine, cfg.Mix = eng, ceiling.SimpleIMIX
			before := ifStats(t, l.b, "lrb")
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			after := ifStats(t, l.b, "lrb")
			if eng == "auto" {
				if res.Engine == "socket" {
					t.Errorf("auto with imix ran the socket engine: notes %q", res.Notes)
				}
			} else if res.Engine != eng {
				t.Errorf("engine %q, want %s", res.Engine, eng)
			}
			tot := res.Targets[0].Forward
			checkMix(t, eng, tot, ceiling.SimpleIMIX)
			if tot.LostPackets != 0 || tot.ReceivedPackets != tot.SentPackets {
				t.Errorf("sent %d, received %d, lost %d: want no loss at 20 kpps", tot.SentPackets, tot.ReceivedPackets, tot.LostPackets)
			}
			for _, z := range tot.Sizes {
				if z.SentPackets != z.ReceivedPackets {
					t.Errorf("%d-byte frames: sent %d, received %d", z.Frame, z.SentPackets, z.ReceivedPackets)
				}
			}
			// Each stream sends the mix in its own ratio.
			if len(res.Streams) != sp.Streams {
				t.Errorf("%d streams, want %d", len(res.Streams), sp.Streams)
			}
			for _, st := range res.Streams {
				checkMix(t, fmt.Sprintf("%s stream %d", eng, st.Stream), &st.Totals, ceiling.SimpleIMIX)
			}
			var bytes uint64
			for _, z := range tot.Sizes {
				bytes += z.ReceivedPackets * uint64(z.Frame-4)
			}
			// lrb also received the control connection's few packets.
			if got := after.rxBytes - before.rxBytes; !closeTo(got, bytes, 0.01) {
				t.Errorf("lrb received %d bytes, the sizes say %d", got, bytes)
			}
		})
	}
}

// TestImixEnginesMTU: a mix whose largest frame does not fit the
// interface's MTU is refused by the ring and AF_XDP with one line that
// says so.
func TestImixEnginesMTU(t *testing.T) {
	l := newLab(t, &Server{})
	h := l.a.Netlink(t)
	link, err := h.LinkByName("lra")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetMTU(link, 1000); err != nil {
		t.Fatal(err)
	}
	for _, eng := range []string{"ring", "xdp"} {
		cfg := l.config(udpSpec(300*time.Millisecond, wire.Rate{PPS: 1000}))
		cfg.Engine, cfg.Mix = eng, ceiling.SimpleIMIX
		_, err := Run(context.Background(), cfg)
		t.Logf("%s: %v", eng, err)
		if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "largest frame, 1518 bytes, needs an MTU of 1500, lra has 1000") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s with imix over an MTU of 1000: %v, want one line of bad input naming the MTU", eng, err)
		}
	}
}
