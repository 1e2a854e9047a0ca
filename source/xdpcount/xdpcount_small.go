//go:build small

package xdpcount

import "fmt"

// Counter is never attached in the small build.
type Counter struct{ mode Mode }

// Attach fails with ErrUnsupported: the small build (-tags small, the one
// for routers' flash) leaves out cilium/ebpf.
func Attach(ifindex int, port uint16, drop bool) (*Counter, error) {
	return nil, fmt.Errorf("%w: this build of linerate has no eBPF (the small build for routers leaves it out; use a full build: docs/openwrt.md)", ErrUnsupported)
}

// Mode is the zero Mode.
func (c *Counter) Mode() Mode { return c.mode }

// Queues has nothing to count.
func (c *Counter) Queues(n int) ([]QueueCount, error) { return nil, ErrUnsupported }

// Close has nothing to close.
func (c *Counter) Close() error { return nil }

// NativeError is nil: the small build attaches nothing.
func (c *Counter) NativeError() error { return nil }
