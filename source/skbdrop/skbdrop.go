//go:build !small

// Package skbdrop counts the packets the kernel frees as dropped, by drop
// reason and network namespace: a small eBPF program on the skb:kfree_skb
// tracepoint adds one to a per-CPU map entry keyed by (namespace inode,
// reason) for every drop.
//
// The program is assembled here with cilium/ebpf's asm package (no C
// compiler) and attached as a raw tracepoint (BPF_RAW_TRACEPOINT_OPEN): no
// tracefs or debugfs mount is needed. The reason numbers and their names
// are read from the running kernel's BTF (enum skb_drop_reason), because
// they differ between kernels; so are the offsets the program reads
// (sk_buff.dev, net_device.nd_net, sock.__sk_common.skc_net, net.ns.inum):
// relocation done in Go from the kernel's own type information, the job
// CO-RE does for a compiled program.
//
// A packet's namespace is its device's (skb->dev), or its socket's when it
// has no device; drops with neither are counted under namespace 0. Where
// the kernel lacks something (BTF, the reason enum, BPF permission), Start
// returns an *Unavailable saying why.
package skbdrop

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// ErrUnavailable is wrapped by every *Unavailable.
var ErrUnavailable = errors.New("drop reasons unavailable")

// Unavailable says why drop reasons cannot be counted on this kernel.
type Unavailable struct {
	Why string
	Err error
}

func (u *Unavailable) Error() string {
	if u.Err != nil {
		return "drop reasons unavailable: " + u.Why + ": " + u.Err.Error()
	}
	return "drop reasons unavailable: " + u.Why
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (u *Unavailable) Is(target error) bool { return target == ErrUnavailable }

// Unwrap returns the underlying error, if any.
func (u *Unavailable) Unwrap() error { return u.Err }

func unavailable(err error, format string, args ...any) error {
	return &Unavailable{Why: fmt.Sprintf(format, args...), Err: err}
}

// reasonPrefix is dropped from the enum's names: the ledger and the user
// read "NETFILTER_DROP", "NO_SOCKET".
const reasonPrefix = "SKB_DROP_REASON_"

// Reasons maps the kernel's drop-reason numbers to their names, without
// the SKB_DROP_REASON_ prefix ("NO_SOCKET", "NETFILTER_DROP",
// "SOCKET_RCVBUFF"). Reasons of subsystems (mac80211, openvswitch) are
// numbered above 0xffff and named by their own enums.
type Reasons map[uint32]string

// Name returns a reason's name, or its number when the kernel's BTF has no
// name for it.
func (r Reasons) Name(n uint32) string {
	if s, ok := r[n]; ok {
		return s
	}
	return strconv.FormatUint(uint64(n), 10)
}

// ReasonsFromBTF reads enum skb_drop_reason and the subsystems' reason
// enums from spec.
func ReasonsFromBTF(spec *btf.Spec) (Reasons, error) {
	var e *btf.Enum
	if err := spec.TypeByName("skb_drop_reason", &e); err != nil {
		return nil, unavailable(err, "the kernel's BTF has no enum skb_drop_reason (drop reasons came with Linux 5.17)")
	}
	r := Reasons{}
	for _, v := range e.Values {
		switch v.Name {
		case "SKB_DROP_REASON_MAX", "SKB_DROP_REASON_SUBSYS_MASK":
			continue
		}
		r[uint32(v.Value)] = strings.TrimPrefix(v.Name, reasonPrefix)
	}
	// Subsystem reasons (include/net/dropreason.h): enums whose values sit
	// above the subsystem shift, such as enum ovs_drop_reason and
	// mac80211_drop_reason.
	for _, name := range []string{"ovs_drop_reason", "mac80211_drop_reason"} {
		var se *btf.Enum
		if spec.TypeByName(name, &se) != nil {
			continue
		}
		for _, v := range se.Values {
			if v.Value > 0xffff {
				if _, ok := r[uint32(v.Value)]; !ok {
					r[uint32(v.Value)] = v.Name
				}
			}
		}
	}
	return r, nil
}

// offsets are the byte offsets the program reads, from the kernel's BTF.
type offsets struct {
	skbDev, skbSk  uint32 // struct sk_buff: dev, sk
	devNet         uint32 // struct net_device: nd_net.net
	sockNet        uint32 // struct sock: __sk_common.skc_net.net
	netInum        uint32 // struct net: ns.inum
	reasonArg      int    // index of the reason among the tracepoint's arguments
	tracepointArgs int
}

// offsetsFromBTF finds the offsets and checks the tracepoint's arguments:
// (struct sk_buff *skb, void *location, enum skb_drop_reason reason, ...).
func offsetsFromBTF(spec *btf.Spec) (offsets, error) {
	var o offsets
	var err error
	field := func(strct string, path ...string) uint32 {
		if err != nil {
			return 0
		}
		var s *btf.Struct
		if e := spec.TypeByName(strct, &s); e != nil {
			err = unavailable(e, "the kernel's BTF has no struct %s", strct)
			return 0
		}
		off, e := memberOffset(s, path...)
		if e != nil {
			err = unavailable(e, "struct %s", strct)
		}
		return off
	}
	o.skbDev = field("sk_buff", "dev")
	o.skbSk = field("sk_buff", "sk")
	o.devNet = field("net_device", "nd_net", "net")
	o.sockNet = field("sock", "__sk_common", "skc_net", "net")
	o.netInum = field("net", "ns", "inum")
	if err != nil {
		return o, err
	}
	var td *btf.Typedef
	if e := spec.TypeByName("btf_trace_kfree_skb", &td); e != nil {
		return o, unavailable(e, "the kernel's BTF has no skb:kfree_skb tracepoint")
	}
	ptr, ok := btf.UnderlyingType(td.Type).(*btf.Pointer)
	if !ok {
		return o, unavailable(nil, "btf_trace_kfree_skb is not a function pointer")
	}
	proto, ok := btf.UnderlyingType(ptr.Target).(*btf.FuncProto)
	if !ok {
		return o, unavailable(nil, "btf_trace_kfree_skb is not a function pointer")
	}
	// The first parameter is the tracepoint's private data, not an argument.
	params := proto.Params
	if len(params) > 0 {
		params = params[1:]
	}
	o.tracepointArgs = len(params)
	o.reasonArg = -1
	for i, p := range params {
		if en, ok := btf.UnderlyingType(p.Type).(*btf.Enum); ok && en.Name == "skb_drop_reason" {
			o.reasonArg = i
		}
	}
	if o.reasonArg < 0 {
		return o, unavailable(nil, "skb:kfree_skb has no drop reason argument (Linux 5.17 added it)")
	}
	if len(params) == 0 || !isSkbPointer(params[0].Type) {
		return o, unavailable(nil, "skb:kfree_skb's first argument is not a struct sk_buff pointer")
	}
	return o, nil
}

func isSkbPointer(t btf.Type) bool {
	p, ok := btf.UnderlyingType(t).(*btf.Pointer)
	if !ok {
		return false
	}
	s, ok := btf.UnderlyingType(p.Target).(*btf.Struct)
	return ok && s.Name == "sk_buff"
}

// memberOffset returns the byte offset of the member reached by path
// below t, looking through anonymous structs and unions and typedefs as C
// does ("dev" of sk_buff sits in an anonymous union in an anonymous struct
// in an anonymous union).
func memberOffset(t btf.Type, path ...string) (uint32, error) {
	var total uint32
	cur := t
	for _, name := range path {
		bits, typ, ok := findMember(cur, name)
		if !ok {
			return 0, fmt.Errorf("no member %q in %s", name, describe(cur))
		}
		if bits%8 != 0 {
			return 0, fmt.Errorf("member %q is a bit field", name)
		}
		total += bits / 8
		cur = typ
	}
	return total, nil
}

// findMember looks for name among the members of t (a struct or union,
// after typedefs), descending into anonymous members. It returns the
// member's offset in bits from the start of t.
func findMember(t btf.Type, name string) (uint32, btf.Type, bool) {
	var members []btf.Member
	switch u := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		members = u.Members
	case *btf.Union:
		members = u.Members
	default:
		return 0, nil, false
	}
	for _, m := range members {
		if m.Name == name {
			return uint32(m.Offset), m.Type, true
		}
	}
	for _, m := range members {
		if m.Name != "" {
			continue
		}
		if off, typ, ok := findMember(m.Type, name); ok {
			return uint32(m.Offset) + off, typ, true
		}
	}
	return 0, nil, false
}

func describe(t btf.Type) string {
	if n := t.TypeName(); n != "" {
		return n
	}
	return fmt.Sprintf("%T", t)
}
