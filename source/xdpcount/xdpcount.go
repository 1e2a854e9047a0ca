//go:build !small

// Package xdpcount is the XDP receive counter: a small eBPF program,
// assembled here with cilium/ebpf's asm package (no C compiler), attached to
// a receiving interface. It counts the IPv4 UDP packets (optionally only
// those to one destination port) and their bytes per receive queue in a
// per-CPU array, before
// the kernel builds an skb for them, so that a result can show the packets
// that reached the interface beside those that reached the socket. In drop
// mode it drops what it counts: the fastest receiver there is.
package xdpcount

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"linerate/internal/usage"
	"linerate/source/internal/bpfprog"
)

// XDP actions, from include/uapi/linux/bpf.h (enum xdp_action).
const (
	actionDrop = 1
	actionPass = 2
)

// cpuCounts is the value of the per-CPU counter map, one per CPU.
type cpuCounts struct {
	Packets, Bytes uint64
}

// Counter is an attached XDP counting program.
type Counter struct {
	ifindex int
	mode    Mode
	// nativeErr is why the driver refused native mode, when the counter
	// runs in generic mode.
	nativeErr error
	bpf       bpfprog.Attached // the map of counts, the program, its link
}

// Attach loads the counting program and attaches it to the
// interface ifindex, in native mode where the driver supports it and in
// generic mode otherwise. port 0 counts every IPv4 UDP packet; another port
// counts only those to that destination port. With drop set, counted
// packets are dropped (XDP_DROP) instead of passed on (XDP_PASS); anything
// not counted, ARP included, always passes.
//
// The program must be attached in the network namespace of the interface
// (call it on a thread in that namespace).
func Attach(ifindex int, port uint16, drop bool) (*Counter, error) {
	if ifindex < 1 {
		return nil, usage.Errorf("xdp counter: interface index %d", ifindex)
	}
	counts, prog, err := load(port, drop)
	if err != nil {
		return nil, err
	}
	c := &Counter{ifindex: ifindex, bpf: bpfprog.Attached{Prog: prog, Map: counts}}
	var errs []error
	for _, m := range []struct {
		flags link.XDPAttachFlags
		mode  Mode
	}{{link.XDPDriverMode, Native}, {link.XDPGenericMode, Generic}} {
		l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: m.flags})
		if err == nil {
			c.bpf.Link, c.mode = l, m.mode
			return c, nil
		}
		if m.mode == Native {
			c.nativeErr = err
		}
		errs = append(errs, fmt.Errorf("%s: %w", m.mode, err))
	}
	c.Close()
	return nil, fmt.Errorf("%w: attach to interface %d: %w", ErrUnsupported, ifindex, errors.Join(errs...))
}

// load creates the counter map and loads the program over it.
func load(port uint16, drop bool) (*ebpf.Map, *ebpf.Program, error) {
	bpfprog.RemoveMemlock()
	counts, err := ebpf.NewMap(&ebpf.MapSpec{
		Name:       "lr_xdp_counts",
		Type:       ebpf.PerCPUArray,
		KeySize:    4,
		ValueSize:  16,
		MaxEntries: MaxQueues,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: create counter map: %w", ErrUnsupported, err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "lr_xdp_count",
		Type:         ebpf.XDP,
		License:      "GPL",
		Instructions: program(counts.FD(), port, drop),
	})
	if err != nil {
		counts.Close()
		return nil, nil, fmt.Errorf("%w: load program: %w", ErrUnsupported, err)
	}
	return counts, prog, nil
}

// Mode says whether the program runs in the driver or after the skb.
func (c *Counter) Mode() Mode { return c.mode }

// NativeError is why the driver refused the program in native mode, for a
// counter in generic mode (nil otherwise).
func (c *Counter) NativeError() error { return c.nativeErr }

// Queues returns what was counted on each of the first n receive queues
// (at most MaxQueues; the last one also holds the queues past it), summed
// over CPUs: queue i is the packets whose xdp_md.rx_queue_index was i.
func (c *Counter) Queues(n int) ([]QueueCount, error) {
	if c.bpf.Map == nil {
		return nil, fmt.Errorf("xdp counter on interface %d: count after close", c.ifindex)
	}
	out, err := queueCounts(c.bpf.Map, min(max(n, 0), MaxQueues))
	if err != nil {
		return nil, fmt.Errorf("xdp counter on interface %d: %w", c.ifindex, err)
	}
	return out, nil
}

// queueCounts adds up the per-CPU values of the counter map's first n
// entries, one per receive queue.
func queueCounts(m *ebpf.Map, n int) ([]QueueCount, error) {
	out := make([]QueueCount, n)
	var per []cpuCounts
	for q := range out {
		if err := m.Lookup(uint32(q), &per); err != nil {
			return nil, fmt.Errorf("read counts of queue %d: %w", q, err)
		}
		for _, v := range per {
			out[q].Packets += v.Packets
			out[q].Bytes += v.Bytes
		}
	}
	return out, nil
}

// Close detaches the program and frees it and its map.
func (c *Counter) Close() error {
	return c.bpf.Close(fmt.Sprintf("xdp counter: detach from interface %d", c.ifindex))
}

// program assembles the counting program over the map with file
// descriptor mapFD. In C it would read:
//
//	if (data + 34 > data_end) return PASS;          // Ethernet + minimal IPv4
//	if (eth.type != 0x0800 || ip.version != 4 || ip.ihl < 5 || ip.proto != 17)
//		return PASS;
//	if (port) {                                      // only then is UDP read
//		if (ip.frag_off & 0x1fff) return PASS;       // no UDP header here
//		udp = data + 14 + ihl*4;
//		if (udp + 8 > data_end || udp.dest != htons(port)) return PASS;
//	}
//	q = min(ctx->rx_queue_index, MaxQueues - 1);
//	v = lookup(counts, q); if (!v) return PASS;
//	v->packets++; v->bytes += data_end - data;       // per-CPU: no atomics
//	return drop ? DROP : PASS;
//
// Bytes are compared one at a time so the program is the same on big- and
// little-endian machines. Offsets from include/uapi/linux/if_ether.h, ip.h
// and udp.h; the xdp_md layout (data at 0, data_end at 4, rx_queue_index
// at 16) from bpf.h.
func program(mapFD int, port uint16, drop bool) asm.Instructions {
	const (
		rData   = asm.R2
		rEnd    = asm.R3
		rTmp    = asm.R4
		rByte   = asm.R5
		rLen    = asm.R7 // callee-saved: survives the helper call
		rQueue  = asm.R6 // callee-saved
		ethType = 12
		ipOff   = 14
		pass    = "pass"
	)
	action := int64(actionPass)
	if drop {
		action = actionDrop
	}
	insns := asm.Instructions{
		asm.LoadMem(rQueue, asm.R1, 16, asm.Word),
		asm.LoadMem(rData, asm.R1, 0, asm.Word),
		asm.LoadMem(rEnd, asm.R1, 4, asm.Word),
		asm.Mov.Reg(rTmp, rData),
		asm.Add.Imm(rTmp, ipOff+20),
		asm.JGT.Reg(rTmp, rEnd, pass),
		// EtherType IPv4, 0x0800.
		asm.LoadMem(rByte, rData, ethType, asm.Byte),
		asm.JNE.Imm(rByte, 0x08, pass),
		asm.LoadMem(rByte, rData, ethType+1, asm.Byte),
		asm.JNE.Imm(rByte, 0x00, pass),
		// Protocol UDP.
		asm.LoadMem(rByte, rData, ipOff+9, asm.Byte),
		asm.JNE.Imm(rByte, 17, pass),
		// Version 4, header length at least 20 bytes.
		asm.LoadMem(rByte, rData, ipOff, asm.Byte),
		asm.Mov.Reg(rTmp, rByte),
		asm.And.Imm(rTmp, 0xf0),
		asm.JNE.Imm(rTmp, 0x40, pass),
		asm.And.Imm(rByte, 0x0f),
		asm.LSh.Imm(rByte, 2),
		asm.JLT.Imm(rByte, 20, pass),
	}
	if port != 0 {
		insns = append(insns,
			// Not a later fragment: fragment offset (13 bits) is 0.
			asm.LoadMem(rTmp, rData, ipOff+6, asm.Byte),
			asm.And.Imm(rTmp, 0x1f),
			asm.JNE.Imm(rTmp, 0, pass),
			asm.LoadMem(rTmp, rData, ipOff+7, asm.Byte),
			asm.JNE.Imm(rTmp, 0, pass),
			// rTmp = the UDP header; it must lie inside the packet.
			asm.Mov.Reg(rTmp, rData),
			asm.Add.Reg(rTmp, rByte),
			asm.Add.Imm(rTmp, ipOff),
			asm.Mov.Reg(asm.R0, rTmp),
			asm.Add.Imm(asm.R0, 8),
			asm.JGT.Reg(asm.R0, rEnd, pass),
			// Destination port, network byte order.
			asm.LoadMem(rByte, rTmp, 2, asm.Byte),
			asm.JNE.Imm(rByte, int32(port>>8), pass),
			asm.LoadMem(rByte, rTmp, 3, asm.Byte),
			asm.JNE.Imm(rByte, int32(port&0xff), pass),
		)
	}
	insns = append(insns,
		// data_end - data: the verifier allows subtracting packet pointers
		// only for a loader with CAP_PERFMON (root has it); without it
		// the load fails, as ErrUnsupported.
		asm.Mov.Reg(rLen, rEnd),
		asm.Sub.Reg(rLen, rData),
		// counts[queue], the last entry for any queue past it.
		asm.JLT.Imm(rQueue, MaxQueues, "queue"),
		asm.Mov.Imm(rQueue, MaxQueues-1),
		asm.StoreMem(asm.RFP, -4, rQueue, asm.Word).WithSymbol("queue"),
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, pass),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord),
		asm.Add.Reg(asm.R1, rLen),
		asm.StoreMem(asm.R0, 8, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, int32(action)),
		asm.Return(),
		asm.Mov.Imm(asm.R0, actionPass).WithSymbol(pass),
		asm.Return(),
	)
	return insns
}
