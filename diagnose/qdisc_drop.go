package diagnose

import (
	"fmt"

	"linerate/internal/units"
	"linerate/source/rtnl"
)

// qdiscDrop: an interface's queueing discipline drops packets: its queue
// is full (limit, txqueuelen), or it is a shaper held at its rate → a
// longer queue, or know that the shaper is the limit.
type qdiscDrop struct{}

func (qdiscDrop) ID() string { return "qdisc-drop" }
func (qdiscDrop) Explain() string {
	return "a qdisc drops packets: a full queue (limit, txqueuelen) or a shaper at its rate"
}

func (qdiscDrop) Check(ev *Evidence) []Finding {
	d := ev.Drops
	if d == nil {
		return nil
	}
	var out []Finding
	for _, q := range d.Qdiscs {
		if !q.Root() || q.Stats.Drops == 0 {
			continue
		}
		what := fmt.Sprintf("%s %s on %s", q.Kind, rtnl.Handle(q.Handle), q.Iface)
		f := Finding{Severity: Warning, Subject: q.Iface,
			Evidence: []string{fmt.Sprintf("%s: %s dropped, %s overlimits, %s requeues; %d packets queued now",
				what, dropRate(d, q.Stats.Drops), dropRate(d, q.Stats.Overlimits), dropRate(d, q.Stats.Requeues), q.Stats.Qlen)}}
		limit := "its limit"
		if q.Limit > 0 {
			limit = fmt.Sprintf("its limit of %d %s", q.Limit, q.LimitUnit)
		}
		if q.Rate != nil {
			f.Summary = fmt.Sprintf("the shaper %s (%s) drops %s packets%s: the traffic is over its rate", what,
				units.Bps(q.Rate.BitsPerSecond()), dropRate(d, q.Stats.Drops), dropShare(d, q.Stats.Drops))
			f.Evidence = append(f.Evidence, fmt.Sprintf("rate %s, %s", units.Bps(q.Rate.BitsPerSecond()), limit))
			f.Fixes = []Fix{{Kind: FixBoot, Target: "qdisc",
				Value: fmt.Sprintf("the shaper on %s is the limit: raise its rate if the link allows more, or send no faster than %s", q.Iface, units.Bps(q.Rate.BitsPerSecond())),
				Note:  "a shaper dropping is doing its job; a longer queue only adds delay"}}
		} else {
			f.Summary = fmt.Sprintf("the %s qdisc of %s drops %s packets at %s%s", q.Kind, q.Iface, dropRate(d, q.Stats.Drops), limit, dropShare(d, q.Stats.Drops))
			l := d.Links[q.Iface]
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s txqueuelen %d", q.Iface, l.TxQueueLen))
			fix := Fix{Kind: FixBoot, Target: "qdisc", Note: "bursts overflow the queue before the driver takes them"}
			switch {
			case q.Limit > 0:
				fix.Value = fmt.Sprintf("tc qdisc change dev %s root %s limit %d", q.Iface, q.Kind, 2*q.Limit)
			default:
				// pfifo_fast, mq's children and the like take their length
				// from the interface's txqueuelen: a change tune makes.
				fix = Fix{Kind: FixTxQueueLen, Target: q.Iface, Value: fmt.Sprint(max(2*l.TxQueueLen, 2000)), Note: fix.Note}
			}
			f.Fixes = []Fix{fix}
			if q.Kind == "pfifo_fast" || q.Kind == "pfifo" || q.Kind == "bfifo" {
				// A FIFO that drops under load also holds a full queue of
				// delay for every flow: on a router's egress the fair
				// queueing AQMs keep both down.
				f.Fixes = append(f.Fixes, Fix{Kind: FixQdisc, Target: q.Iface, Value: "fq_codel",
					Note: "a FIFO's drops come with a full queue of delay; fq_codel drops early and per flow"},
					Fix{Kind: FixBoot, Target: "qdisc",
						Value: fmt.Sprintf("on a WAN slower than the LAN: tc qdisc replace dev %s root cake bandwidth RATE (tune: qdisc:%s=cake,bandwidth=RATE)", q.Iface, q.Iface),
						Note:  "cake shapes to the WAN's rate, so the queue forms where it can manage it"})
			}
		}
		out = append(out, f)
	}
	return out
}
