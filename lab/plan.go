package lab

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Plan lays out a validated spec: its nodes, links and addresses. It does
// nothing to the machine.
//
// Link k (from 1) gets the k-th subnet of the spec's Subnet; the first node
// of the link gets the subnet's first address, the second the next one:
// with the default plan, the router is 10.231.1.1 on its lan link and
// 10.231.2.1 on its wan link, lan is 10.231.1.2 and wan 10.231.2.2.
func Plan(s Spec) (*Lab, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	type pair struct{ a, b string }
	var nodes []string
	var pairs []pair
	switch s.Topology {
	case Pair:
		nodes = []string{"a", "b"}
		pairs = []pair{{"a", "b"}}
	case Router:
		nodes = []string{"lan", "router", "wan"}
		pairs = []pair{{"router", "lan"}, {"router", "wan"}}
	case Star:
		nodes = []string{"box"}
		for k := 1; k <= s.Ports; k++ {
			p := fmt.Sprintf("peer%d", k)
			nodes = append(nodes, p)
			pairs = append(pairs, pair{"box", p})
		}
	}
	if s.VM != nil {
		v := *s.VM
		v.Nodes = slices.Clone(v.Nodes)
		s.VM = &v
	}
	l := &Lab{Spec: s}
	index := map[string]int{}
	for i, n := range nodes {
		index[n] = i
		l.Nodes = append(l.Nodes, Node{Name: n, Netns: NetnsName(s.Name, n)})
	}
	bits := linkBits(s.Subnet)
	for k, p := range pairs {
		sub := nthSubnet(s.Subnet, bits, k+1)
		first := sub.Addr().Next()
		a := End{Node: p.a, Iface: p.b, Addr: netip.PrefixFrom(first, bits)}
		b := End{Node: p.b, Iface: p.a, Addr: netip.PrefixFrom(first.Next(), bits)}
		l.Links = append(l.Links, Link{A: a, B: b, Subnet: sub})
		na, nb := &l.Nodes[index[p.a]], &l.Nodes[index[p.b]]
		na.Ifaces = append(na.Ifaces, Iface{Name: a.Iface, Addr: a.Addr, Peer: b.Node, PeerIface: b.Iface})
		nb.Ifaces = append(nb.Ifaces, Iface{Name: b.Iface, Addr: b.Addr, Peer: a.Node, PeerIface: a.Iface})
	}
	switch s.Topology {
	case Router:
		r := &l.Nodes[index["router"]]
		r.Forward = true
		r.Masquerade = "wan"
		for _, h := range []string{"lan", "wan"} {
			n := &l.Nodes[index[h]]
			n.Gateway = peerAddr(l, n.Name, "router")
		}
	case Star:
		// Peers route everything through the box, which does not forward:
		// like the CM4 of the seeds, it is the end of every path.
		for i := range l.Nodes[1:] {
			n := &l.Nodes[i+1]
			n.Gateway = peerAddr(l, n.Name, "box")
		}
	}
	if err := l.Spec.validateVM(l); err != nil {
		return nil, err
	}
	return l, nil
}

// nthSubnet is the n-th subnet of length bits inside base.
func nthSubnet(base netip.Prefix, bits, n int) netip.Prefix {
	a := base.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += uint32(n) << (32 - bits)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), bits)
}

// peerAddr is the address of node to on the link it shares with node from.
func peerAddr(l *Lab, from, to string) netip.Addr {
	for _, k := range l.Links {
		switch {
		case k.A.Node == from && k.B.Node == to:
			return k.B.Addr.Addr()
		case k.B.Node == from && k.A.Node == to:
			return k.A.Addr.Addr()
		}
	}
	return netip.Addr{}
}

// Addr is the address node from reaches node to at: to's address on the
// last link of the path between them, through nodes that forward. It is
// false when to cannot be reached from from. A node reaches itself at its
// first address.
func (l *Lab) Addr(from, to string) (netip.Addr, bool) {
	if from == to {
		n, err := l.Node(to)
		if err != nil || len(n.Ifaces) == 0 {
			return netip.Addr{}, false
		}
		return n.Ifaces[0].Addr.Addr(), true
	}
	forwards := map[string]bool{}
	for _, n := range l.Nodes {
		forwards[n.Name] = n.Forward
	}
	// Breadth-first from from; a node is passed through only if it forwards.
	seen := map[string]bool{from: true}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur != from && !forwards[cur] {
			continue
		}
		for _, k := range l.Links {
			var next End
			switch cur {
			case k.A.Node:
				next = k.B
			case k.B.Node:
				next = k.A
			default:
				continue
			}
			if next.Node == to {
				return next.Addr.Addr(), true
			}
			if !seen[next.Node] {
				seen[next.Node] = true
				queue = append(queue, next.Node)
			}
		}
	}
	return netip.Addr{}, false
}

// Hosts renders the hosts file node sees inside the lab: localhost, then
// every node it can reach, by name and by NAME.LAB, at the address it
// reaches it at.
func (l *Lab) Hosts(node string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# linerate lab %s, as seen from %s\n", l.Spec.Name, node)
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	names := l.NodeNames()
	slices.Sort(names)
	for _, n := range names {
		if a, ok := l.Addr(node, n); ok {
			fmt.Fprintf(&b, "%s\t%s %s.%s\n", a, n, n, l.Spec.Name)
		}
	}
	return b.String()
}
