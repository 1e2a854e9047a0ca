package traffic

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"linerate/ledger"
	"linerate/results"
	"linerate/wire"
)

// linkCut sets a link down for a while in the middle of a run: from the
// first interval line at or past from seconds, for d. The link is set up
// again whatever happens, before the namespaces go.
type linkCut struct {
	t        *testing.T
	h        *netlink.Handle
	link     netlink.Link
	from     float64
	d        time.Duration
	once     sync.Once
	done     chan struct{}
	mu       sync.Mutex
	down, up time.Time
}

func newLinkCut(t *testing.T, h *netlink.Handle, name string, from float64, d time.Duration) *linkCut {
	t.Helper()
	link, err := h.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.LinkSetUp(link) })
	return &linkCut{t: t, h: h, link: link, from: from, d: d, done: make(chan struct{})}
}

// interval is an OnInterval that starts the cut.
func (c *linkCut) interval(iv results.IntervalStats) {
	if iv.T >= c.from {
		c.start()
	}
}

// start sets the link down now, and up again d later (once).
func (c *linkCut) start() {
	c.once.Do(func() {
		if err := c.h.LinkSetDown(c.link); err != nil {
			c.t.Errorf("set %s down: %v", c.link.Attrs().Name, err)
			close(c.done)
			return
		}
		c.mu.Lock()
		c.down = time.Now()
		c.mu.Unlock()
		go func() {
			defer close(c.done)
			time.Sleep(c.d)
			if err := c.h.LinkSetUp(c.link); err != nil {
				c.t.Errorf("set %s up: %v", c.link.Attrs().Name, err)
			}
			c.mu.Lock()
			c.up = time.Now()
			c.mu.Unlock()
		}()
	})
}

// wait waits for the link to be up again and returns when it went down
// and up; it fails the test when it never went down.
func (c *linkCut) wait() (down, up time.Time) {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(c.d + 10*time.Second):
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.up.IsZero() {
		c.t.Fatal("the link was never cut")
	}
	return c.down, c.up
}

// runCut runs cfg with the cut started by its interval lines, waits for
// the link to be up again, logs the intervals and returns the result,
// when the link went down and up, and the run's error.
func runCut(t *testing.T, cfg Config, cut *linkCut) (res *results.Result, down, up time.Time, err error) {
	t.Helper()
	cfg.OnInterval = cut.interval
	res, err = Run(context.Background(), cfg)
	if res == nil {
		t.Fatalf("no result: %v", err)
	}
	down, up = cut.wait()
	for _, iv := range res.Intervals {
		t.Logf("%.1f s: sent %.0f pps, received %.0f pps (unknown %v)", iv.T, iv.SentPPS, iv.ReceivedPPS, iv.ReceivedUnknown)
	}
	return res, down, up, err
}

// findEvent is the link event of side's iface, or fails the test.
func findEvent(t *testing.T, res *results.Result, side results.Side, iface string) results.LinkEvent {
	t.Helper()
	for _, e := range res.LinkEvents {
		if e.Side == side && e.Iface == iface {
			return e
		}
	}
	t.Fatalf("no link event of the %s's %s in %+v", side, iface, res.LinkEvents)
	return results.LinkEvent{}
}

// checkEvent checks an event against the cut as the test made it, its
// times within slack: the kernel tells a veth's peer of its lost carrier
// up to a second late (linkwatch batches those), the end set down at once.
func checkEvent(t *testing.T, e results.LinkEvent, target int, why string, start, down, up time.Time, slack float64) {
	t.Helper()
	t.Logf("event: %s", e)
	if e.Target != target || e.Why != why {
		t.Errorf("event %+v: want target %d, why %q", e, target, why)
	}
	if want := down.Sub(start).Seconds(); e.Down < want-0.2 || e.Down > want+slack {
		t.Errorf("event down at %.2f s; the test set it down at %.2f s", e.Down, want)
	}
	if e.Up == nil {
		t.Fatalf("event %+v: no up; the test set it up at %.2f s", e, up.Sub(start).Seconds())
	}
	if want := up.Sub(start).Seconds(); *e.Up < want-0.2 || *e.Up > want+slack {
		t.Errorf("event up at %.2f s; the test set it up at %.2f s", *e.Up, want)
	}
	if d := up.Sub(down).Seconds(); e.Seconds < d-slack || e.Seconds > d+slack {
		t.Errorf("event lasted %.2f s; the cut %.2f s", e.Seconds, d)
	}
	if got := *e.Up - e.Down; got < e.Seconds-0.01 || got > e.Seconds+0.01 {
		t.Errorf("event %+v: up − down %.2f s, seconds %.2f", e, got, e.Seconds)
	}
}

// TestLinkDownIsAnEvent sets the server's veth down for 3 s in the middle
// of an 8 s UDP bench with the socket engine: both ends record the cut as
// an event (the server's interface set down, the client's without
// carrier), the sender goes on once the link is back, the ledger places
// what was sent during the cut at "link down", and the verdict says the
// link was down instead of blaming the CPU.
func TestLinkDownIsAnEvent(t *testing.T) {
	l, cfg := withDrops(t, &Server{})
	cut := newLinkCut(t, l.b.Netlink(t), "lrb", 2, 3*time.Second)
	cfg.Spec = udpSpec(8*time.Second, wire.Rate{PPS: 20000})
	cfg.FrameSize, cfg.Engine = 128, "socket"
	res, down, up, err := runCut(t, cfg, cut)
	logLedger(t, res)
	s := res.Summary
	t.Logf("summary: sent %d received %d lost %d, limited by %q (%s)", s.SentPackets, s.ReceivedPackets, s.LostPackets, s.LimitedBy, s.LimitedWhy)
	if err != nil {
		t.Errorf("run: %v; want the socket engine to go on after the cut", err)
	}
	if len(res.LinkEvents) != 2 {
		t.Errorf("%d link events, want 2 (one per end): %+v", len(res.LinkEvents), res.LinkEvents)
	}
	checkEvent(t, findEvent(t, res, results.SideServer, "lrb"), 0, "set down", res.Time, down, up, 0.2)
	checkEvent(t, findEvent(t, res, results.SideClient, "lra"), -1, "no carrier", res.Time, down, up, 1.1)
	if n := len(res.Intervals); n < 7 || res.Intervals[n-2].ReceivedPPS < 15000 {
		t.Errorf("after the cut: %+v; want the sender to go on at 20 kpps", res.Intervals)
	}
	if res.Ledger == nil {
		t.Fatal("no ledger")
	}
	ld := entryAt(res.Ledger, "", ledger.LinkDown)
	// About 3 s at 20 kpps were sent (or refused) while the link was down.
	if s.LostPackets > 0 && (ld.Packets == 0 || float64(ld.Packets) < 0.9*float64(s.LostPackets)) {
		t.Errorf("ledger: %d at link-down of %d lost; want the loss of the cut there", ld.Packets, s.LostPackets)
	}
	if s.LimitedBy == results.LimitSender || strings.Contains(s.LimitedWhy, "CPU") || !strings.Contains(s.LimitedWhy, "down") {
		t.Errorf("verdict %q (%s); want the link that was down, not the sender's CPU", s.LimitedBy, s.LimitedWhy)
	}
}

// TestSenderLinkDown sets the client's own veth down for 3 s mid-run: the
// socket engine's sends fail (ENETDOWN, ENETUNREACH) and must not end the
// sender; TCP waits the cut out. Both results carry the client's event and
// say the link was down.
func TestSenderLinkDown(t *testing.T) {
	for _, c := range []struct {
		name string
		spec wire.Spec
	}{
		{"udp socket", udpSpec(8*time.Second, wire.Rate{PPS: 20000})},
		{"tcp", wire.Spec{Proto: wire.TCP, Direction: wire.Forward, Duration: wire.Seconds(8 * time.Second), Streams: 1, Ports: 1, Threads: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, cfg := withDrops(t, &Server{})
			cut := newLinkCut(t, l.a.Netlink(t), "lra", 2, 3*time.Second)
			cfg.Spec, cfg.Engine = c.spec, "socket"
			if c.spec.Proto == wire.UDP {
				cfg.FrameSize = 128
			}
			res, down, up, err := runCut(t, cfg, cut)
			s := res.Summary
			t.Logf("summary: sent %d received %d lost %d, limited by %q (%s); errors %v", s.SentPackets, s.ReceivedPackets, s.LostPackets, s.LimitedBy, s.LimitedWhy, res.Errors)
			if err != nil {
				t.Errorf("run: %v; want the sender to go on after the cut", err)
			}
			checkEvent(t, findEvent(t, res, results.SideClient, "lra"), -1, "set down", res.Time, down, up, 0.2)
			if n := len(res.Intervals); n < 7 || res.Intervals[n-2].ReceivedPPS == 0 {
				t.Errorf("nothing received after the cut")
			}
			if s.LimitedBy != results.LimitLinkDown || strings.Contains(s.LimitedWhy, "CPU") {
				t.Errorf("verdict %q (%s); want link down", s.LimitedBy, s.LimitedWhy)
			}
		})
	}
}
