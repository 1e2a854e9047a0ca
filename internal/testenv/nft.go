package testenv

import (
	"encoding/binary"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Hook is where an nftables base chain made by DropUDP sits.
type Hook string

// The hooks DropUDP can use.
const (
	HookInput   Hook = "input"
	HookForward Hook = "forward"
	HookOutput  Hook = "output"
)

// DropUDP adds a rule "udp dport PORT [numgen inc mod EVERY == 0] counter
// drop" to the chain of hook in table "inet lrt" of the namespace (both
// made when missing). every ≤ 1 drops every such packet; every = N drops
// one in N, exactly, in arrival order. The rules go with the namespace.
func (n *NetNS) DropUDP(t testing.TB, hook Hook, port uint16, every uint32) {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(int(n.Handle)))
	if err != nil {
		t.Fatalf("nftables in %s: %v", n.Name, err)
	}
	num := map[Hook]*nftables.ChainHook{
		HookInput: nftables.ChainHookInput, HookForward: nftables.ChainHookForward, HookOutput: nftables.ChainHookOutput,
	}[hook]
	if num == nil {
		t.Fatalf("DropUDP: hook %q", hook)
	}
	table := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "lrt"})
	chain := c.AddChain(&nftables.Chain{
		Name: string(hook), Table: table, Type: nftables.ChainTypeFilter,
		Hooknum: num, Priority: nftables.ChainPriorityFilter,
	})
	var dport [2]byte
	binary.BigEndian.PutUint16(dport[:], port)
	exprs := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_UDP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: dport[:]},
	}
	if every > 1 {
		exprs = append(exprs,
			&expr.Numgen{Register: 1, Modulus: every, Type: unix.NFT_NG_INCREMENTAL},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.NativeEndian.AppendUint32(nil, 0)},
		)
	}
	exprs = append(exprs, &expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop})
	c.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: exprs})
	if err := c.Flush(); err != nil {
		t.Fatalf("add the drop rule in %s: %v", n.Name, err)
	}
}
