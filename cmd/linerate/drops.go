package main

import (
	"linerate/box/netnsread"
	"linerate/source"
	"linerate/source/procfs"
	"linerate/source/skbdrop"
	"linerate/traffic/session"
)

// endCounters are what one end of a bench (the client, or serve) reads in
// its own network namespace: the drop counters for the drop ledger, with
// the kernel's drop reasons where it counts them, and the kernel's boot
// id. None of it is needed to run a test: what cannot be opened is left
// out, and the ledger says why.
type endCounters struct {
	src     source.Source
	reasons *skbdrop.Counter
	reader  *netnsread.Reader
	machine string
}

// openEndCounters opens them; close releases them.
func openEndCounters() *endCounters {
	e := &endCounters{}
	if id, err := procfs.NewFS("/proc").BootID(); err == nil {
		e.machine = id
	}
	src, err := source.NewLive()
	if err != nil {
		return e
	}
	e.src = src
	opt := netnsread.Options{}
	if e.reasons, err = skbdrop.Start(); err != nil {
		opt.ReasonsUnavailable = err.Error()
	}
	opt.Reasons = e.reasons
	if e.reader, err = netnsread.New(src, opt); err != nil {
		e.reader = nil
	}
	return e
}

// drops is the reader for traffic (nil when there is none).
func (e *endCounters) drops() session.DropCounters {
	if e.reader == nil {
		return nil
	}
	return e.reader
}

func (e *endCounters) close() {
	if e.reader != nil {
		e.reader.Close()
	}
	if e.reasons != nil {
		e.reasons.Close()
	}
	if c, ok := e.src.(interface{ Close() error }); ok {
		c.Close()
	}
}
