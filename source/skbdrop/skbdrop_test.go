//go:build !small

package skbdrop

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// kernelLike builds a BTF spec shaped as Linux 6.18's own (the layout the
// privileged test checks against the running kernel): sk_buff.dev inside
// an anonymous union in an anonymous struct in an anonymous union,
// possible_net_t a typedef of a one-member struct.
func kernelLike(t *testing.T, withReason bool) *btf.Spec {
	t.Helper()
	u32 := &btf.Int{Name: "unsigned int", Size: 4}
	u64 := &btf.Int{Name: "long unsigned int", Size: 8}
	void := &btf.Void{}
	vp := &btf.Pointer{Target: void}
	net := &btf.Struct{Name: "net", Size: 4288, Members: []btf.Member{
		{Name: "ns", Offset: 152 * 8, Type: &btf.Struct{Name: "ns_common", Size: 80, Members: []btf.Member{
			{Name: "stashed", Offset: 0, Type: vp},
			{Name: "inum", Offset: 24 * 8, Type: u32},
		}}},
	}}
	possible := &btf.Typedef{Name: "possible_net_t", Type: &btf.Struct{Size: 8, Members: []btf.Member{
		{Name: "net", Type: &btf.Pointer{Target: net}},
	}}}
	dev := &btf.Struct{Name: "net_device", Size: 2496, Members: []btf.Member{
		{Name: "ifindex", Offset: 224 * 8, Type: u32},
		{Name: "nd_net", Offset: 264 * 8, Type: possible},
	}}
	sockCommon := &btf.Struct{Name: "sock_common", Size: 136, Members: []btf.Member{
		{Name: "skc_net", Offset: 48 * 8, Type: possible},
	}}
	sock := &btf.Struct{Name: "sock", Size: 776, Members: []btf.Member{
		{Name: "__sk_common", Offset: 0, Type: sockCommon},
	}}
	inner := &btf.Union{Size: 8, Members: []btf.Member{
		{Name: "dev", Type: &btf.Pointer{Target: dev}},
		{Name: "dev_scratch", Type: u64},
	}}
	anonStruct := &btf.Struct{Size: 24, Members: []btf.Member{
		{Name: "next", Offset: 0, Type: vp},
		{Name: "prev", Offset: 64, Type: vp},
		{Offset: 128, Type: inner},
	}}
	skb := &btf.Struct{Name: "sk_buff", Size: 232, Members: []btf.Member{
		{Offset: 0, Type: &btf.Union{Size: 24, Members: []btf.Member{{Type: anonStruct}}}},
		{Name: "sk", Offset: 24 * 8, Type: &btf.Pointer{Target: sock}},
	}}
	reason := &btf.Enum{Name: "skb_drop_reason", Size: 4, Values: []btf.EnumValue{
		{Name: "SKB_NOT_DROPPED_YET", Value: 0}, {Name: "SKB_CONSUMED", Value: 1},
		{Name: "SKB_DROP_REASON_NOT_SPECIFIED", Value: 2}, {Name: "SKB_DROP_REASON_NO_SOCKET", Value: 3},
		{Name: "SKB_DROP_REASON_MAX", Value: 128}, {Name: "SKB_DROP_REASON_SUBSYS_MASK", Value: 0xffff0000},
	}}
	ovs := &btf.Enum{Name: "ovs_drop_reason", Size: 4, Values: []btf.EnumValue{
		{Name: "OVS_DROP_LAST_ACTION", Value: 3 << 16},
	}}
	params := []btf.FuncParam{{Name: "__data", Type: vp}, {Name: "skb", Type: &btf.Pointer{Target: skb}}, {Name: "location", Type: vp}}
	if withReason {
		params = append(params, btf.FuncParam{Name: "reason", Type: reason})
	}
	trace := &btf.Typedef{Name: "btf_trace_kfree_skb", Type: &btf.Pointer{Target: &btf.FuncProto{Return: void, Params: params}}}
	types := []btf.Type{trace, skb, ovs}
	if withReason {
		types = append(types, reason)
	}
	b, err := btf.NewBuilder(types, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestOffsetsFromBTF(t *testing.T) {
	o, err := offsetsFromBTF(kernelLike(t, true))
	if err != nil {
		t.Fatal(err)
	}
	want := offsets{skbDev: 16, skbSk: 24, devNet: 264, sockNet: 48, netInum: 176, reasonArg: 2, tracepointArgs: 3}
	if o != want {
		t.Errorf("offsets = %+v, want %+v", o, want)
	}
	// The program assembles over them and encodes.
	var buf bytes.Buffer
	if err := program(3, o).Marshal(&buf, binary.LittleEndian); err != nil {
		t.Errorf("program does not encode: %v", err)
	}
}

func TestOffsetsWithoutReason(t *testing.T) {
	_, err := offsetsFromBTF(kernelLike(t, false))
	var u *Unavailable
	if !errors.As(err, &u) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want an *Unavailable", err)
	}
	if _, err := ReasonsFromBTF(kernelLike(t, false)); !errors.Is(err, ErrUnavailable) {
		t.Errorf("ReasonsFromBTF without the enum: %v", err)
	}
}

func TestReasonsFromBTF(t *testing.T) {
	r, err := ReasonsFromBTF(kernelLike(t, true))
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[uint32]string{0: "SKB_NOT_DROPPED_YET", 1: "SKB_CONSUMED", 3: "NO_SOCKET", 3 << 16: "OVS_DROP_LAST_ACTION", 128: "128", 77: "77"} {
		if got := r.Name(n); got != want {
			t.Errorf("Name(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestMemberOffsetErrors(t *testing.T) {
	s := &btf.Struct{Name: "x", Members: []btf.Member{{Name: "a", Offset: 3, Type: &btf.Int{Size: 4}}}}
	if _, err := memberOffset(s, "b"); err == nil {
		t.Error("missing member: no error")
	}
	if _, err := memberOffset(s, "a"); err == nil {
		t.Error("bit field: no error")
	}
}
