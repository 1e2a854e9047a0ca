package page

import (
	"fmt"
	"sort"
	"strings"

	"linerate/internal/units"
	"linerate/ledger"
	"linerate/results"
)

// dropRow is one drop or error counter of an end and what it counted.
type dropRow struct{ Where, Counter, Value string }

// ledgerView is the drop ledger: where the lost packets died.
type ledgerView struct {
	Summary string
	Rows    []ledgerRow
	Excess  string
	Notes   []string
}

type ledgerRow struct {
	Host, Side, Place, Packets, Share string
	Evidence                          []string
}

// dropRows lists an end's non-zero drop and error counters over the
// window.
func dropRows(d results.EndDrops) ([]dropRow, string) {
	if d.Delta == nil {
		return nil, d.Error
	}
	var out []dropRow
	if d.Refused > 0 {
		out = append(out, dropRow{"sender", "sends refused by the kernel", count(d.Refused)})
	}
	dd := d.Delta
	names := make([]string, 0, len(dd.Links))
	for n := range dd.Links {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := dd.Links[n].Stats
		for _, c := range []struct {
			name string
			v    uint64
		}{{"rx_dropped", s.RxDropped}, {"tx_dropped", s.TxDropped}, {"rx_errors", s.RxErrors}, {"tx_errors", s.TxErrors},
			{"rx_missed_errors", s.RxMissedErrors}, {"rx_fifo_errors", s.RxFifoErrors}, {"rx_over_errors", s.RxOverErrors},
			{"tx_fifo_errors", s.TxFifoErrors}, {"rx_nohandler", s.RxNohandler}, {"rx_otherhost_dropped", s.RxOtherhostDropped}} {
			if c.v > 0 {
				out = append(out, dropRow{n, c.name, count(c.v)})
			}
		}
	}
	for _, q := range dd.Qdiscs {
		if q.Stats.Drops > 0 {
			out = append(out, dropRow{q.Iface + " qdisc " + q.Kind, "drops", count(q.Stats.Drops)})
		}
		if q.Stats.Overlimits > 0 {
			out = append(out, dropRow{q.Iface + " qdisc " + q.Kind, "overlimits (held back, not dropped)", count(q.Stats.Overlimits)})
		}
	}
	var sd, sq uint64
	for _, s := range dd.Softnet {
		sd += s.Dropped
		sq += s.TimeSqueeze
	}
	if sd > 0 {
		out = append(out, dropRow{"softnet", "dropped (backlog full)", count(sd)})
	}
	if sq > 0 {
		out = append(out, dropRow{"softnet", "time_squeeze", count(sq)})
	}
	secs := make([]string, 0, len(dd.SNMP))
	for s := range dd.SNMP {
		secs = append(secs, s)
	}
	sort.Strings(secs)
	for _, sec := range secs {
		keys := make([]string, 0, len(dd.SNMP[sec]))
		for k, v := range dd.SNMP[sec] {
			if v > 0 && dropCounter(k) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, dropRow{"snmp " + sec, k, count(dd.SNMP[sec][k])})
		}
	}
	reasons := make([]string, 0, len(dd.Reasons))
	for k, v := range dd.Reasons {
		if v > 0 {
			reasons = append(reasons, k)
		}
	}
	sort.Strings(reasons)
	for _, k := range reasons {
		out = append(out, dropRow{"kfree_skb reason", k, count(dd.Reasons[k])})
	}
	if dd.Conntrack != nil {
		for _, name := range []string{"drop", "early_drop", "insert_failed", "invalid"} {
			if n := dd.Conntrack.Counters[name]; n > 0 {
				out = append(out, dropRow{"conntrack", name, count(n)})
			}
		}
	}
	return out, d.Error
}

// dropCounter says whether an SNMP counter counts drops or errors.
func dropCounter(name string) bool {
	for _, w := range []string{"Err", "Drop", "NoPorts", "Overflow", "Discard", "Prune", "Fail", "Retrans", "Lost"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// newLedgerView lays out a ledger as report.Ledger prints it.
func newLedgerView(l ledger.Ledger) *ledgerView {
	v := &ledgerView{Notes: l.Notes}
	if l.Lost == 0 {
		v.Summary = fmt.Sprintf("no packets lost (%s sent, %s received)", count(l.Sent), count(l.Received))
	} else {
		v.Summary = fmt.Sprintf("where the %s lost packets died (%s sent, %s received)", count(l.Lost), count(l.Sent), count(l.Received))
	}
	for _, e := range l.Entries {
		row := ledgerRow{Host: e.Host, Side: string(e.Side), Place: string(e.Place), Packets: count(e.Packets), Evidence: e.Evidence}
		if e.Place == ledger.Unaccounted {
			row.Host, row.Side = "", ""
		}
		if l.Lost > 0 {
			row.Share = units.Percent(float64(e.Packets)/float64(l.Lost), 1)
		}
		v.Rows = append(v.Rows, row)
	}
	if l.Excess > 0 {
		v.Excess = fmt.Sprintf("the counters place %s more than were lost", count(l.Excess))
	}
	return v
}
