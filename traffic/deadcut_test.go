package traffic

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/results"
	"linerate/traffic/frame"
	"linerate/wire"
)

// TestKilledServerCutsBothEnds kills the server (kill -9) 800 ms after
// its report of the 4th second of a 10 s run, so that the client sends on
// for most of a second after the server's last count before it notices:
// what it sent then is in no figure. Per engine and way: the figures of
// both ends end at that report (sent and received agree), no packet is
// counted as lost (the loss is not known), the drop ledger places none
// "between the ends", and the verdict names the death, not a limit.
func TestKilledServerCutsBothEnds(t *testing.T) {
	if os.Getenv(deadServerEnv) != "" {
		t.Skip("in the child")
	}
	testenv.RequireRoot(t)
	for _, c := range []struct {
		name   string
		proto  wire.Proto
		dir    wire.Direction
		engine string
	}{
		{"udp socket", wire.UDP, wire.Forward, "socket"},
		{"udp ring", wire.UDP, wire.Forward, "ring"},
		{"udp xdp", wire.UDP, wire.Forward, "xdp"},
		{"udp reverse", wire.UDP, wire.Reverse, "socket"},
		{"tcp", wire.TCP, wire.Forward, "socket"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := testenv.NewNetNS(t), testenv.NewNetNS(t)
			testenv.Veth(t, a, "lra", b, "lrb", 1)
			a.AddAddr(t, "lra", "10.99.0.1/24")
			b.AddAddr(t, "lrb", "10.99.0.2/24")
			if c.engine == "xdp" {
				var why string
				_ = a.Do(func() error { why = frame.XDPUnavailable(); return nil })
				if why != "" {
					t.Skipf("AF_XDP unavailable: %s", why)
				}
			}
			addr, kill := startDyingServer(t, b)
			sp := udpSpec(10*time.Second, wire.Rate{PPS: 20000})
			sp.Proto, sp.Direction = c.proto, c.dir
			if c.proto == wire.TCP {
				sp.Rate = wire.Rate{BPS: 200e6}
			}
			sp.Warmup = wire.Seconds(time.Second)
			cfg := Config{Targets: []string{addr}, Spec: sp, Engine: c.engine, Setup: a.Do, Drops: dropReader(t, a, nil)}
			if c.proto == wire.UDP {
				cfg.FrameSize = 128
			}
			res := runKilledAfter(t, cfg, 800*time.Millisecond, kill)
			se := res.StoppedEarly
			d := res.Targets[0].Forward
			if c.dir == wire.Reverse {
				d = res.Targets[0].Reverse
			}
			if d == nil {
				t.Fatal("no figures of the direction")
			}
			t.Logf("stopped early %+v; %.2f s, sent %d pkts %d bytes (%.3g b/s), received %d pkts %d bytes, lost %d (unknown %v); verdict %s: %s; notes %q",
				*se, d.Seconds, d.SentPackets, d.SentBytes, d.SentBPS, d.ReceivedPackets, d.ReceivedBytes, d.LostPackets, d.LossUnknown,
				res.Summary.LimitedBy, res.Summary.LimitedWhy, res.Targets[0].Notes)
			if se.Detected-se.At < 0.5 {
				t.Fatalf("the death was noticed %.2f s after the last report; the test wants most of a second", se.Detected-se.At)
			}
			// Both ends' figures cover the same span: what the sender
			// counted past the receiver's last report is in neither.
			if c.proto == wire.UDP && !closeTo(d.SentPackets, d.ReceivedPackets, 0.02) {
				t.Errorf("sent %d, received %d datagrams: the sender's count runs past the receiver's last report", d.SentPackets, d.ReceivedPackets)
			}
			if c.proto == wire.TCP && !closeTo(d.SentBytes, d.ReceivedBytes, 0.05) {
				t.Errorf("sent %d, received %d bytes: the sender's count runs past the receiver's last report", d.SentBytes, d.ReceivedBytes)
			}
			if d.LostPackets != 0 || res.Summary.LostPackets != 0 || !d.LossUnknown || !res.Summary.LossUnknown {
				t.Errorf("lost %d (summary %d), unknown %v (summary %v); want no loss counted, marked unknown",
					d.LostPackets, res.Summary.LostPackets, d.LossUnknown, res.Summary.LossUnknown)
			}
			if l := res.Ledger; l != nil && (l.Lost != 0 || l.Unaccounted() != 0) {
				t.Errorf("the ledger places %d of %d lost between the ends", l.Unaccounted(), l.Lost)
			}
			if res.Summary.LimitedBy != results.LimitUnknown || !strings.Contains(res.Summary.LimitedWhy, "died or failed") {
				t.Errorf("verdict %q: %q; want none drawn, naming the death", res.Summary.LimitedBy, res.Summary.LimitedWhy)
			}
		})
	}
}

// runKilledAfter runs cfg and kills its server (kill) after the server's
// report of the 4th second of the run and after more: the result, which
// must have stopped early.
func runKilledAfter(t *testing.T, cfg Config, after time.Duration, kill func()) *results.Result {
	t.Helper()
	var once sync.Once
	cfg.OnInterval = func(iv results.IntervalStats) {
		if iv.T >= 4 {
			once.Do(func() { time.AfterFunc(after, kill) })
		}
	}
	res, err := Run(context.Background(), cfg)
	if res == nil {
		t.Fatalf("no result: %v", err)
	}
	if res.StoppedEarly == nil {
		t.Fatalf("not stopped early: %v", err)
	}
	t.Logf("stopped early %+v", *res.StoppedEarly)
	return res
}
