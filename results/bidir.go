package results

import (
	"fmt"
	"strings"

	"linerate/internal/units"
	"linerate/wire"
)

// bidirAtLink judges a test that sent both ways at once against each
// way's own ceiling: the forward way is held by the client's egress
// shapers and every link, the reverse way by the server's shapers and
// every link (the sending end's shapers limit what it sends). It says
// which ways ran at AtLink of their ceiling or more, naming each limit;
// ok is false when neither did, or a way's ceiling is not known.
func bidirAtLink(res *Result) (why string, ok bool) {
	if res.Spec.Direction != wire.Bidir || len(res.Targets) == 0 {
		return "", false
	}
	var fwd, rev Totals
	for _, t := range res.Targets {
		if t.Forward != nil {
			fwd.Add(*t.Forward)
		}
		if t.Reverse != nil {
			rev.Add(*t.Reverse)
		}
	}
	unit := "pps"
	if res.Spec.Proto == wire.TCP {
		unit = "segments/s"
	}
	var at []string
	for _, w := range []struct {
		name   string
		t      Totals
		sender Side
	}{{"up (client → server)", fwd, SideClient}, {"down (server → client)", rev, SideServer}} {
		frame := res.FrameSize
		if res.Spec.Proto == wire.TCP {
			frame = tcpFrameOf(res, w.t)
		}
		lim, ok := pathCeiling(res, frame, w.sender)
		if !ok || lim.FPS <= 0 || w.t.ReceivedPPS < AtLink*lim.FPS || w.t.ReceivedPPS > OverCeiling*lim.FPS {
			continue
		}
		at = append(at, fmt.Sprintf("%s received %.0f %s, %s of its ceiling of %.0f: %s on %s %s",
			w.name, w.t.ReceivedPPS, unit, units.Percent(w.t.ReceivedPPS/lim.FPS, 1), lim.FPS, lim.What, lim.Host, lim.Iface))
	}
	if len(at) == 0 {
		return "", false
	}
	return strings.Join(at, "; "), true
}
