package box

import (
	"strconv"

	"linerate/source/netfilter"
	"linerate/source/procfs"
)

// ConntrackRate is the connection tracker over one interval: its entries
// at the interval's start and end, the table's size, and the packets it
// dropped meanwhile. Drops are counts in the interval, not rates: a full
// table drops a few packets a second, and each one matters.
type ConntrackRate struct {
	Start   uint64 `json:"start"`
	Entries uint64 `json:"entries"`
	Max     uint64 `json:"max,omitempty"`
	// Drop, InsertFailed and EarlyDrop are the columns of
	// net/stat/nf_conntrack of the same names (netfilter.ColumnDrop, ...).
	Drop         uint64 `json:"drop"`
	InsertFailed uint64 `json:"insert_failed"`
	EarlyDrop    uint64 `json:"early_drop"`
}

// readConntrack reads the connection tracker of proc's network namespace
// with nf_conntrack_max: nil when nf_conntrack is not loaded or the file
// cannot be read (a sample goes on without it).
func readConntrack(proc procfs.FS) *netfilter.ConntrackStat {
	ct, err := netfilter.ReadConntrackStat(proc)
	if err != nil {
		return nil
	}
	if v, err := proc.Sysctl("net.netfilter.nf_conntrack_max"); err == nil {
		ct.Max, _ = strconv.ParseUint(v, 10, 64)
	}
	return &ct
}

// conntrackDelta is the tracker between snapshots a and b: nil when b has
// none.
func conntrackDelta(a, b *netfilter.ConntrackStat) *ConntrackRate {
	if b == nil {
		return nil
	}
	r := &ConntrackRate{Start: b.Entries, Entries: b.Entries, Max: b.Max}
	if a == nil {
		return r
	}
	r.Start = a.Entries
	d := b.Sub(*a)
	r.Drop, r.InsertFailed, r.EarlyDrop = d.Counters[netfilter.ColumnDrop], d.Counters[netfilter.ColumnInsertFailed], d.Counters[netfilter.ColumnEarlyDrop]
	return r
}
