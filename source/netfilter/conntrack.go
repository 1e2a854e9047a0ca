// Package netfilter reads where netfilter counts the packets it drops in
// one network namespace: the connection tracker's statistics
// (net/stat/nf_conntrack: drop, early_drop, insert_failed, invalid, ...)
// and the counters of nftables rules that drop or reject.
//
// The conntrack parser is pure and reads the file's header, so columns that
// differ between kernels are taken by name. The rules' counters (Ruleset)
// are read over netlink by linerate/source/netfilter/nft; this package
// links no netlink library.
package netfilter

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"linerate/source/procfs"
)

// ConntrackStat is net/stat/nf_conntrack: the connection tracker's
// statistics of one network namespace, summed over CPUs.
type ConntrackStat struct {
	// Entries is the number of tracked connections now (a gauge; the
	// "entries" column, the same on every CPU's line).
	Entries uint64 `json:"entries"`
	// Counters maps a column name ("drop", "early_drop", "insert_failed",
	// "invalid", "found", "new", ...) to its sum over CPUs. Which columns
	// exist depends on the kernel (4.x has "searched" and "delete_list",
	// 5.x+ "clashres" and "chainlength").
	Counters map[string]uint64 `json:"counters"`
	// Max is net.netfilter.nf_conntrack_max, 0 when unknown (it is not in
	// this file: the reader of the sysctl fills it in).
	Max uint64 `json:"max,omitempty"`
	// Buckets is net.netfilter.nf_conntrack_buckets (the hash size), 0
	// when unknown; filled in as Max is.
	Buckets uint64 `json:"buckets,omitempty"`
}

// Columns that mean a packet was dropped by the connection tracker itself
// (net/netfilter/nf_conntrack_core.c): "drop" when the table was full and
// nothing could be evicted, "insert_failed" when the entry could not be
// inserted (a clash that could not be resolved). "early_drop" counts
// evicted entries, not packets; "invalid" packets the tracker could not
// make sense of and let through untracked.
const (
	ColumnDrop         = "drop"
	ColumnInsertFailed = "insert_failed"
	ColumnEarlyDrop    = "early_drop"
	ColumnInvalid      = "invalid"
)

// Dropped is the packets the tracker dropped: drop + insert_failed.
func (s ConntrackStat) Dropped() uint64 {
	return s.Counters[ColumnDrop] + s.Counters[ColumnInsertFailed]
}

// Sub returns the counters of s − a (Entries, Max and Buckets stay s's). A counter
// that went backwards gives 0; one that a lacks is taken whole.
func (s ConntrackStat) Sub(a ConntrackStat) ConntrackStat {
	d := ConntrackStat{Entries: s.Entries, Max: s.Max, Buckets: s.Buckets, Counters: make(map[string]uint64, len(s.Counters))}
	for k, v := range s.Counters {
		if p := a.Counters[k]; v > p {
			d.Counters[k] = v - p
		} else {
			d.Counters[k] = 0
		}
	}
	return d
}

// maxStatBytes bounds what is read of the file: a header and one line of
// 17 eight-digit columns per CPU is under 200 bytes a CPU.
const maxStatBytes = 1 << 20

// ErrNoConntrack is returned when the namespace has no conntrack
// statistics: nf_conntrack is not loaded (or not built).
var ErrNoConntrack = errors.New("no connection tracking statistics (nf_conntrack not loaded)")

// ReadConntrackStat reads net/stat/nf_conntrack of proc's network
// namespace. A missing file gives an error wrapping ErrNoConntrack.
func ReadConntrackStat(proc procfs.FS) (ConntrackStat, error) {
	path := proc.NetPath("stat", "nf_conntrack")
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return ConntrackStat{}, fmt.Errorf("%s: %w", path, ErrNoConntrack)
	}
	if err != nil {
		return ConntrackStat{}, err
	}
	defer f.Close()
	s, err := ParseConntrackStat(io.LimitReader(f, maxStatBytes))
	if err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseConntrackStat reads the text of net/stat/nf_conntrack: a header of
// column names, then one line of hexadecimal values per CPU.
func ParseConntrackStat(r io.Reader) (ConntrackStat, error) {
	s := ConntrackStat{Counters: map[string]uint64{}}
	sc := bufio.NewScanner(r)
	var cols []string
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if cols == nil {
			cols = f
			seen := make(map[string]bool, len(cols))
			for _, c := range cols {
				if !validColumn(c) {
					return s, fmt.Errorf("line 1: column name %q", c)
				}
				if seen[c] {
					return s, fmt.Errorf("line 1: column %q twice", c)
				}
				seen[c] = true
			}
			continue
		}
		if len(f) != len(cols) {
			return s, fmt.Errorf("line %d: %d values under %d columns", n, len(f), len(cols))
		}
		for i, v := range f {
			x, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				return s, fmt.Errorf("line %d: column %s: %q is not hexadecimal", n, cols[i], v)
			}
			if cols[i] == "entries" {
				s.Entries = x
				continue
			}
			s.Counters[cols[i]] += x
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if cols == nil {
		return s, fmt.Errorf("empty: no header")
	}
	return s, nil
}

func validColumn(c string) bool {
	for _, r := range c {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return c != "" && !(c[0] >= '0' && c[0] <= '9')
}
