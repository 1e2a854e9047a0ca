package diagnose

import (
	"fmt"

	"linerate/box"
	"linerate/internal/units"
)

// dropRate turns a count of the drop counters' window into a rate
// string: per second when the window's length is known.
func dropRate(d *box.Drops, n uint64) string {
	if d.Seconds > 0 {
		return rate(float64(n) / d.Seconds)
	}
	return fmt.Sprintf("%d", n)
}

// dropShare is n as a share of what the box's interfaces received and
// sent over the window, "" when they moved nothing.
func dropShare(d *box.Drops, n uint64) string {
	var pkts uint64
	for _, l := range d.Links {
		if !l.Loopback {
			pkts += max(l.Stats.RxPackets, l.Stats.TxPackets)
		}
	}
	if pkts == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s of %d packets through the interfaces)", units.Percent(float64(n)/float64(n+pkts), 2), pkts)
}
