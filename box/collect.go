package box

import (
	"context"
	"errors"

	"linerate/source"
	"linerate/source/ethtool"
	"linerate/source/procfs"
)

var errTodo = errors.New("todo")

// Collect builds the model of the box a source describes. ifaces limits the
// NICs to those named (all when empty); an unknown name is bad input.
func Collect(ctx context.Context, src source.Source, ifaces ...string) (*Box, error) {
	return nil, errTodo
}

// ReadCounters takes one snapshot of every counter. et may be nil (no
// ethtool counters); ifaces limits the ethtool counters read (all NICs in
// proc net/dev when empty).
func ReadCounters(proc procfs.FS, et ethtool.Client, ifaces []string) (Counters, error) {
	return Counters{}, errTodo
}

// Delta turns two snapshots into per-second rates (b later than a).
// Counters that went backwards (a reset) count as zero.
func Delta(a, b Counters) Rates { return Rates{} }
