//go:build !small

package skbdrop

import "github.com/cilium/ebpf/asm"

// bpfNoExist is BPF_NOEXIST of include/uapi/linux/bpf.h: create only.
const bpfNoExist = 1

// program assembles the counting program over the map with file
// descriptor mapFD. In C it would read:
//
//	struct key { u32 netns; u32 reason; } k = { 0, ctx[reasonArg] };
//	struct sk_buff *skb = ctx[0];
//	void *p = NULL, *net = NULL;
//	probe_read(&p, 8, &skb->dev);
//	if (p) probe_read(&net, 8, &p->nd_net.net);
//	else { probe_read(&p, 8, &skb->sk); if (p) probe_read(&net, 8, &p->__sk_common.skc_net.net); }
//	if (net) probe_read(&k.netns, 4, &net->ns.inum);
//	u64 *v = lookup(counts, &k);
//	if (!v) { u64 one = 1; if (!update(counts, &k, &one, NOEXIST)) return 0;
//	          v = lookup(counts, &k); if (!v) return 0; }   // another CPU made it first
//	(*v)++;                                                // per-CPU: no atomics
//	return 0;
//
// A raw tracepoint's context is the tracepoint's arguments, one u64 each.
// Every stack slot read is written first, as the verifier wants; 64-bit
// stores go through a register (asm.StoreImm has no DWord form).
func program(mapFD int, o offsets) asm.Instructions {
	const (
		rCtx  = asm.R6
		rSkb  = asm.R7
		key   = -8  // struct key: netns at -8, reason at -4
		ptr   = -16 // scratch pointer
		one   = -24 // the value 1 for a new entry
		count = "count"
		sk    = "sk"
		net   = "net"
		bump  = "bump"
		done  = "done"
	)
	// read emits probe_read_kernel(fp+dst, size, R3): R3 must hold the
	// source address.
	read := func(dst int16, size int32) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Reg(asm.R1, asm.RFP),
			asm.Add.Imm(asm.R1, int32(dst)),
			asm.Mov.Imm(asm.R2, size),
			asm.FnProbeReadKernel.Call(),
		}
	}
	insns := asm.Instructions{
		asm.Mov.Reg(rCtx, asm.R1),
		asm.LoadMem(rSkb, rCtx, 0, asm.DWord),
		asm.LoadMem(asm.R1, rCtx, int16(8*o.reasonArg), asm.DWord),
		asm.StoreMem(asm.RFP, key+4, asm.R1, asm.Word),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, key, asm.R1, asm.Word),
		asm.StoreMem(asm.RFP, ptr, asm.R1, asm.DWord),
		// p = skb->dev
		asm.Mov.Reg(asm.R3, rSkb),
		asm.Add.Imm(asm.R3, int32(o.skbDev)),
	}
	// follow reads the pointer at R3 and, when it is not NULL, leaves it
	// plus add in R3; a NULL pointer jumps to ifNull.
	follow := func(ifNull string, add uint32) asm.Instructions {
		return append(read(ptr, 8),
			asm.LoadMem(asm.R3, asm.RFP, ptr, asm.DWord),
			asm.JEq.Imm(asm.R3, 0, ifNull),
			asm.Add.Imm(asm.R3, int32(add)),
		)
	}
	insns = append(insns, follow(sk, o.devNet)...)
	insns = append(insns,
		asm.Ja.Label(net),
		// p = skb->sk
		asm.Mov.Reg(asm.R3, rSkb).WithSymbol(sk),
		asm.Add.Imm(asm.R3, int32(o.skbSk)),
	)
	insns = append(insns, follow(count, o.sockNet)...)
	insns = append(insns,
		// net = *R3; k.netns = net->ns.inum
		asm.Mov.Imm(asm.R1, 0).WithSymbol(net),
		asm.StoreMem(asm.RFP, ptr, asm.R1, asm.DWord),
	)
	insns = append(insns, follow(count, o.netInum)...)
	insns = append(insns, read(key, 4)...)
	lookup := func() asm.Instructions {
		return asm.Instructions{
			asm.LoadMapPtr(asm.R1, mapFD),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, key),
			asm.FnMapLookupElem.Call(),
		}
	}
	l := lookup()
	l[0] = l[0].WithSymbol(count)
	insns = append(insns, l...)
	insns = append(insns,
		asm.JNE.Imm(asm.R0, 0, bump),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreMem(asm.RFP, one, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, key),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, one),
		asm.Mov.Imm(asm.R4, bpfNoExist),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, done),
	)
	insns = append(insns, lookup()...)
	insns = append(insns,
		asm.JEq.Imm(asm.R0, 0, done),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord).WithSymbol(bump),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(done),
		asm.Return(),
	)
	return insns
}
