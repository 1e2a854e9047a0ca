package results

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	"linerate/internal/order"
	"linerate/ledger"
	"linerate/wire"
)

// LinkEvent is one interface of the test's path, on one end, that was
// down during the run: set down, or without carrier (its peer or cable
// gone). Times are seconds since the run's start (Result.Time) on that
// end's clock.
type LinkEvent struct {
	// Side is the end whose interface it is; Target the server's target
	// index (-1 for the client).
	Side   Side   `json:"side"`
	Target int    `json:"target"`
	Iface  string `json:"iface"`
	// Why is how the kernel said it was down: "set down" (administratively)
	// or its operational state ("no carrier" for lower-layer-down, "down").
	Why  string  `json:"why"`
	Down float64 `json:"down"`
	// Up is when it came back; nil (null) when it was still down at the
	// end of the run.
	Up *float64 `json:"up"`
	// Seconds is how long it was down: Up − Down, or to the run's end.
	Seconds float64 `json:"seconds"`
}

// MaxLinkEvents is how many link events one end records in a run; a link
// that flaps more often has the rest left out, with a note.
const MaxLinkEvents = 64

// String is the event in a sentence, its server numbered.
func (e LinkEvent) String() string { return e.Describe(true) }

// End names the end whose interface it is: "client", "server", or
// "server N" (from 1) when the test had several targets.
func (e LinkEvent) End(several bool) string { return endName(e.Side, e.Target, several) }

// Describe is the event in a sentence, as the ledger gives it in
// evidence; several says the test had several targets.
func (e LinkEvent) Describe(several bool) string {
	s := fmt.Sprintf("%s's %s was down (%s) from %.1f s", e.End(several), e.Iface, e.Why, e.Down)
	if e.Up == nil {
		return s + fmt.Sprintf(" to the end of the run (%.1f s)", e.Seconds)
	}
	return s + fmt.Sprintf(" to %.1f s (%.1f s)", *e.Up, e.Seconds)
}

// linkDownSpans is the union of every link event's span, in seconds since
// the start, each [down, up), sorted and merged: two ends seeing one cut
// (a veth set down on one end loses carrier on the other) count once.
func linkDownSpans(evs []LinkEvent) [][2]float64 {
	var spans [][2]float64
	for _, e := range evs {
		spans = append(spans, [2]float64{e.Down, e.Down + e.Seconds})
	}
	order.Sort(spans, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
	var out [][2]float64
	for _, s := range spans {
		if n := len(out); n > 0 && s[0] <= out[n-1][1] {
			out[n-1][1] = math.Max(out[n-1][1], s[1])
			continue
		}
		out = append(out, s)
	}
	return out
}

// LinkDownSeconds is how long, in the measured window, some interface of
// the path was down (overlapping events counted once).
func (r *Result) LinkDownSeconds() float64 {
	from, to := r.window()
	var s float64
	for _, sp := range linkDownSpans(r.LinkEvents) {
		s += math.Max(0, math.Min(sp[1], to)-math.Max(sp[0], from))
	}
	return s
}

// window is the measured window in seconds since the start.
func (r *Result) window() (from, to float64) {
	from = r.Spec.Warmup.D().Seconds()
	return from, from + r.Summary.Seconds
}

// SentWhileDown is how many test packets were sent in the measured window
// while a link of the path was down: the intervals' sent rates over the
// seconds the events cover (a second of unknown sent rate counts at the
// run's mean). Within a second the rate is taken as even.
func (r *Result) SentWhileDown() uint64 {
	spans := linkDownSpans(r.LinkEvents)
	if len(spans) == 0 {
		return 0
	}
	from, to := r.window()
	prev := 0.0
	var n float64
	for _, iv := range r.Intervals {
		a, b := math.Max(prev, from), math.Min(iv.T, to)
		prev = iv.T
		if b <= a {
			continue
		}
		pps := iv.SentPPS
		if iv.SentUnknown {
			pps = r.Summary.SentPPS
		}
		for _, sp := range spans {
			n += pps * math.Max(0, math.Min(b, sp[1])-math.Max(a, sp[0]))
		}
	}
	return uint64(math.Round(n))
}

// linkDownWhy is the verdict's sentence for a run during which a link of
// the path was down: how long, what was lost then (the ledger's link-down
// entry, or what was sent then up to the loss) and, with a rate asked,
// how far short of it the senders fell.
func linkDownWhy(r *Result, asked float64) string {
	sum := &r.Summary
	why := fmt.Sprintf("a link of the path was down for %.1f s of the %.1f s measured", r.LinkDownSeconds(), sum.Seconds)
	switch {
	case r.Spec.Proto == wire.TCP:
		why += fmt.Sprintf(": TCP waited and resent (%d retransmits)", sum.Retransmits)
	case sum.LostPackets > 0:
		lost := min(r.SentWhileDown(), sum.LostPackets)
		if r.Ledger != nil {
			lost = 0
			for _, e := range r.Ledger.Entries {
				if e.Place == ledger.LinkDown {
					lost = e.Packets
				}
			}
		}
		why += fmt.Sprintf("; %d of the %d packets lost were sent then", lost, sum.LostPackets)
	}
	if asked > 0 && sum.SentPPS < MetRate*asked {
		why += fmt.Sprintf("; sent %.0f pps of %.0f asked: the senders could not send while it was down", sum.SentPPS, asked)
	}
	if sum.HeldBackLinkDown > 0 {
		why += fmt.Sprintf(", and held back %d datagrams rather than send them late", sum.HeldBackLinkDown)
	}
	return why + " (" + strings.Join(r.describeLinkEvents(), "; ") + ")"
}

// describeLinkEvents is each link event in a sentence, its server
// numbered only when the test had several targets.
func (r *Result) describeLinkEvents() []string {
	var evs []string
	for _, e := range r.LinkEvents {
		evs = append(evs, e.Describe(len(r.Targets) > 1))
	}
	return evs
}
