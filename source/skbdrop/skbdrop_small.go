//go:build small

package skbdrop

import (
	"errors"
	"fmt"
)

// ErrUnavailable is wrapped by Start's error.
var ErrUnavailable = errors.New("drop reasons unavailable")

// Counter is never started in the small build.
type Counter struct{}

// Start fails with ErrUnavailable: the small build (-tags small, the one
// for routers' flash) leaves out cilium/ebpf, and routers' kernels seldom
// carry the BTF the counter needs.
func Start() (*Counter, error) {
	return nil, fmt.Errorf("%w: this build of linerate has no eBPF (the small build for routers leaves it out; use a full build: docs/openwrt.md)", ErrUnavailable)
}

// Read has nothing to read.
func (c *Counter) Read(netns uint64) (map[string]uint64, error) { return nil, ErrUnavailable }

// Close has nothing to close.
func (c *Counter) Close() error { return nil }
