// Package feature holds the one error every source returns when the
// machine lacks what a reading needs: a driver without an ethtool
// command, a kernel without the netdev family or BPF links for XDP, a
// build without eBPF. Callers test errors.Is(err, ErrNotSupported) and
// show what is missing (errors.As to *Error) as a value the user reads,
// never a crash and never a silent gap. It imports nothing but the
// standard library, so every source can wrap it.
package feature

import "errors"

// ErrNotSupported is what every *Error is (errors.Is): the machine lacks
// a feature.
var ErrNotSupported = errors.New("not supported")

// Error is a feature the machine lacks, and how: a source declares one
// for each feature it reads (ethtool.ErrNotSupported,
// xdpcount.ErrUnsupported, qstats.ErrUnsupported) and wraps it with
// where.
type Error struct {
	// Feature names what is missing as the user reads it: "xdp
	// counter", "per-queue statistics (netdev qstats)"; "" when the
	// error's wrapping names it (an ethtool command).
	Feature string
	// Lack says how it is missing: "unavailable", "not supported by
	// this driver"; "" is "not supported".
	Lack string
}

// Error is the feature, then how it is missing: "xdp counter
// unavailable".
func (e *Error) Error() string {
	lack := e.Lack
	if lack == "" {
		lack = ErrNotSupported.Error()
	}
	if e.Feature == "" {
		return lack
	}
	return e.Feature + " " + lack
}

// Is makes every Error an ErrNotSupported.
func (e *Error) Is(target error) bool { return target == ErrNotSupported }
