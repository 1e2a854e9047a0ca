package traffic

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"linerate/ceiling"
	"linerate/results"
	"linerate/source/rtnl"
	"linerate/wire"
)

// shaperFPS is what a tbf of 100 Mbit/s (no overhead) passes of 1518-byte
// frames: 8,256 frames/s.
var shaperFPS = ceiling.ShaperFPS(rtnl.Rate{BytesPerSecond: 100e6 / 8}, ceiling.SingleFrame(1518))

func hasNote(notes []string, parts ...string) bool {
	return slices.ContainsFunc(notes, func(n string) bool {
		for _, p := range parts {
			if !strings.Contains(n, p) {
				return false
			}
		}
		return true
	})
}

// TestAutoKeepsSenderShaper: with a tbf of 100 Mbit/s on the sending
// veth, --engine auto runs the socket engine (the ring and AF_XDP would
// send below the tbf), says why, and what arrives stays within the
// shaper's rate: the link is the limit. With and without a drop reader
// (the qdiscs are read either way).
func TestAutoKeepsSenderShaper(t *testing.T) {
	for _, withReader := range []bool{true, false} {
		name := "drop reader"
		if !withReader {
			name = "no drop reader"
		}
		t.Run(name, func(t *testing.T) {
			l, cfg := withDrops(t, &Server{})
			if !withReader {
				cfg.Drops = nil
			}
			capLink(t, l.a, "lra", 100e6)
			cfg.Engine = "auto"
			cfg.FrameSize = 1518
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			t.Logf("engine %s; received %.0f pps (%.1f%% of %.0f); limited by %s: %s; notes %q", res.Engine, s.ReceivedPPS, 100*s.ReceivedPPS/shaperFPS, shaperFPS, s.LimitedBy, s.LimitedWhy, res.Notes)
			if res.Engine != "socket" || !hasNote(res.Notes, "--engine auto ran the socket engine", "tbf 1: on lra") {
				t.Errorf("engine %q, notes %q: want the socket engine, naming the tbf 1: on lra", res.Engine, res.Notes)
			}
			if s.ReceivedPPS > results.OverCeiling*shaperFPS {
				t.Errorf("received %.0f pps, over 105%% of the shaper's %.0f", s.ReceivedPPS, shaperFPS)
			}
			if withReader && s.LimitedBy != results.LimitLink {
				t.Errorf("limited by %q (%s), want link", s.LimitedBy, s.LimitedWhy)
			}
		})
	}
}

// TestExplicitEngineBypassesShaper: --engine ring or xdp on an interface
// with a tbf runs, and the result says the tbf was bypassed: it is not
// the path's ceiling, and the verdict is not "link" whatever arrived.
func TestExplicitEngineBypassesShaper(t *testing.T) {
	for _, engine := range []string{"ring", "xdp"} {
		t.Run(engine, func(t *testing.T) {
			l, cfg := withDrops(t, &Server{})
			if engine == "xdp" {
				skipWithoutAFXDP(t, l)
			}
			capLink(t, l.a, "lra", 100e6)
			cfg.Engine = engine
			cfg.FrameSize = 1518
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			t.Logf("engine %s; received %.0f pps (%.1f%% of the tbf's %.0f); ceiling %+v; limited by %s: %s; notes %q",
				res.Engine, s.ReceivedPPS, 100*s.ReceivedPPS/shaperFPS, shaperFPS, s.PathCeiling, s.LimitedBy, s.LimitedWhy, res.Notes)
			if !hasNote(res.Notes, "bypass", "tbf 1: on lra") {
				t.Errorf("notes %q: nothing says tbf 1: on lra is bypassed", res.Notes)
			}
			if lim := s.PathCeiling; lim != nil && lim.By == ceiling.LimitShaper {
				t.Errorf("ceiling %+v: the bypassed tbf is still the ceiling", lim)
			}
			if s.LimitedBy == results.LimitLink {
				t.Errorf("limited by link (%s) with the shaper bypassed", s.LimitedWhy)
			}
		})
	}
}

// TestAutoIgnoresReceiverShaper: a tbf on the receiver's veth shapes
// what the receiver sends back, which is not this test's path: the
// sender's own qdisc is the kernel's default, so --engine auto still
// sends below it and says nothing of a bypass.
func TestAutoIgnoresReceiverShaper(t *testing.T) {
	l, cfg := withDrops(t, &Server{})
	capLink(t, l.b, "lrb", 100e6)
	cfg.Spec = udpSpec(300*time.Millisecond, wire.Rate{PPS: 20000})
	cfg.Engine = "auto"
	cfg.FrameSize = 64
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("engine %s; notes %q", res.Engine, res.Notes)
	if res.Engine == "socket" || hasNote(res.Notes, "tbf") {
		t.Errorf("engine %q, notes %q: want the ring or AF_XDP, no word of the receiver's tbf", res.Engine, res.Notes)
	}
}

// TestConfiguredQdisc: the kernel's defaults (handle 0:) are not
// configured, whatever their kind; a qdisc someone added (a handle of its
// own, or a rate) is, except mq and noqueue, which do nothing to bypass.
func TestConfiguredQdisc(t *testing.T) {
	q := func(kind string, handle, parent uint32) rtnl.Qdisc {
		return rtnl.Qdisc{Node: rtnl.Node{Kind: kind, Handle: handle, Parent: parent}}
	}
	cake := q("cake", 0x80010000, rtnl.HandleRoot)
	cake.Rate = &rtnl.Rate{BytesPerSecond: 20e6 / 8}
	for _, c := range []struct {
		q    rtnl.Qdisc
		want bool
	}{
		{q("noqueue", 0, rtnl.HandleRoot), false},
		{q("pfifo_fast", 0, rtnl.HandleRoot), false},
		{q("fq_codel", 0, rtnl.HandleRoot), false}, // net.core.default_qdisc
		{q("mq", 0, rtnl.HandleRoot), false},
		{q("fq_codel", 0, 0x1), false}, // mq's default child, parent :1
		{q("mq", 0x80010000, rtnl.HandleRoot), false},
		{q("noqueue", 0x80010000, rtnl.HandleRoot), false},
		{q("pfifo_fast", 0, 0x80010001), false}, // under an mq added by hand
		{q("fq_codel", 0x80010000, rtnl.HandleRoot), true},
		{q("fq_codel", 0x80020000, 0x80010001), true}, // a child replaced by hand
		{q("tbf", 0x10000, rtnl.HandleRoot), true},
		{cake, true},
	} {
		if got := configuredQdisc(c.q); got != c.want {
			t.Errorf("%s %s parent %s: configured %v, want %v", c.q.Kind, rtnl.Handle(c.q.Handle), rtnl.Handle(c.q.Parent), got, c.want)
		}
	}
}
