// Package bpfprog holds what the eBPF counters of linerate/source
// (source/skbdrop, source/xdpcount) share: lifting the locked-memory limit
// once before the first load, and freeing an attached program with its link
// and its map, in that order.
package bpfprog

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

var memlockOnce sync.Once

// RemoveMemlock lifts RLIMIT_MEMLOCK for the process, once. Kernels before
// 5.11 charge BPF memory to it; later ones to the cgroup, and then this does
// nothing. Failing is not fatal: the load that needed it fails and says so.
func RemoveMemlock() {
	memlockOnce.Do(func() { _ = rlimit.RemoveMemlock() })
}

// Attached is a loaded program, the map it counts into and the link that
// attaches it; any may be nil.
type Attached struct {
	Link link.Link
	Prog *ebpf.Program
	Map  *ebpf.Map
}

// Close detaches the program and frees it and its map, and sets each to
// nil, so a second Close does nothing. A failure to detach is wrapped with
// detach ("xdp counter: detach from interface 3") unless detach is "".
func (a *Attached) Close(detach string) error {
	var errs []error
	if a.Link != nil {
		err := a.Link.Close()
		if err != nil && detach != "" {
			err = fmt.Errorf("%s: %w", detach, err)
		}
		errs = append(errs, err)
		a.Link = nil
	}
	if a.Prog != nil {
		errs = append(errs, a.Prog.Close())
		a.Prog = nil
	}
	if a.Map != nil {
		errs = append(errs, a.Map.Close())
		a.Map = nil
	}
	return errors.Join(errs...)
}
