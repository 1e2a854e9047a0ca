//go:build !small

package skbdrop

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"linerate/source/internal/bpfprog"
)

// maxKeys bounds the (namespace, reason) pairs counted: a few namespaces
// times the reasons that occur. Pairs beyond it are not counted; Read says
// so.
const maxKeys = 4096

// key is the map's key: struct { u32 netns; u32 reason; }.
type key struct {
	Netns  uint32
	Reason uint32
}

// Counter is an attached drop-reason counter. It counts every network
// namespace of the machine at once; Read picks one.
type Counter struct {
	reasons Reasons
	bpf     bpfprog.Attached // the map of counts, the program, its link
	mu      sync.Mutex
}

// Start loads the counting program and attaches it to skb:kfree_skb.
// Errors that come from the kernel lacking something wrap ErrUnavailable
// (test with errors.Is) and say why. Close detaches it.
func Start() (*Counter, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, unavailable(err, "no kernel BTF (CONFIG_DEBUG_INFO_BTF)")
	}
	reasons, err := ReasonsFromBTF(spec)
	if err != nil {
		return nil, err
	}
	off, err := offsetsFromBTF(spec)
	if err != nil {
		return nil, err
	}
	bpfprog.RemoveMemlock()
	counts, err := ebpf.NewMap(&ebpf.MapSpec{
		Name:       "lr_drop_counts",
		Type:       ebpf.PerCPUHash,
		KeySize:    8,
		ValueSize:  8,
		MaxEntries: maxKeys,
	})
	if err != nil {
		return nil, unavailable(err, "create the counter map")
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "lr_kfree_skb",
		Type:         ebpf.RawTracepoint,
		License:      "GPL",
		Instructions: program(counts.FD(), off),
	})
	if err != nil {
		counts.Close()
		return nil, unavailable(err, "load the program")
	}
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "kfree_skb", Program: prog})
	if err != nil {
		prog.Close()
		counts.Close()
		return nil, unavailable(err, "attach to the kfree_skb raw tracepoint")
	}
	return &Counter{reasons: reasons, bpf: bpfprog.Attached{Link: l, Prog: prog, Map: counts}}, nil
}

// Reasons are the running kernel's reason names.
func (c *Counter) Reasons() Reasons { return c.reasons }

// ErrFull is returned by Read when the map filled up: some pairs of
// namespace and reason went uncounted.
var ErrFull = errors.New("drop reason map full: some drops were not counted")

// Read returns the drops counted since Start in the network namespace
// whose inode is netns, by reason name. Namespace 0 holds the drops that
// had neither a device nor a socket.
func (c *Counter) Read(netns uint64) (map[string]uint64, error) {
	all, err := c.ReadAll()
	if all == nil {
		return nil, err
	}
	m := all[netns]
	if m == nil {
		m = map[string]uint64{}
	}
	return m, err
}

// ReadAll returns the drops counted since Start in every namespace, by
// namespace inode and reason name.
func (c *Counter) ReadAll() (map[uint64]map[string]uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bpf.Map == nil {
		return nil, fmt.Errorf("drop reason counter: read after close")
	}
	out := map[uint64]map[string]uint64{}
	var k key
	var per []uint64
	n := 0
	it := c.bpf.Map.Iterate()
	for it.Next(&k, &per) {
		n++
		var sum uint64
		for _, v := range per {
			sum += v
		}
		m := out[uint64(k.Netns)]
		if m == nil {
			m = map[string]uint64{}
			out[uint64(k.Netns)] = m
		}
		m[c.reasons.Name(k.Reason)] += sum
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("drop reason counter: read the map: %w", err)
	}
	if n >= maxKeys {
		return out, ErrFull
	}
	return out, nil
}

// Close detaches the program and frees it and its map.
func (c *Counter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bpf.Close("")
}
