// Package lab owns linerate's virtual lab: topologies of network namespaces
// joined by veth links (pair, router, star) that stand in for the seeds'
// testbeds on any Linux machine, for users and for linerate's own tests.
//
// A lab is built with Up from a Spec, everything through netlink, netns and
// nftables (no shelling out to ip or nft). A state file records each object
// before it is created, so Down removes exactly what Up made, also after a
// crash or kill -9 of Up half way, and never a namespace linerate did not
// create. Start and Do run a command or Go code inside one node; node names
// resolve to their addresses there (docs/lab.md).
package lab

import (
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"time"

	"linerate/ceiling"
	"linerate/internal/units"
	"linerate/internal/usage"
)

// Topologies Up can build.
const (
	Pair   = "pair"   // nodes a and b over one link
	Router = "router" // lan — router — wan; the router forwards and NATs out of wan
	Star   = "star"   // box with one link to each of peer1..peerN
)

// Topologies lists the topologies by name, in the order help text shows them.
var Topologies = []string{Pair, Router, Star}

// Limits of a Spec, checked by Validate.
const (
	MaxNameLen = 20
	MaxPorts   = 64
	MaxQueues  = 64
	MinMTU     = 68    // the smallest MTU IPv4 allows (RFC 791)
	MaxMTU     = 65535 // veth's max_mtu (ETH_MAX_MTU in the kernel)
	MinRate    = 1_000_000
	MaxRate    = 400_000_000_000
)

// DefaultSubnet is the address plan's default: a private (RFC 1918) range
// chosen to be unlikely to collide with a home or office network. Link k
// gets the k-th /24 inside it (10.231.k.0/24).
var DefaultSubnet = netip.MustParsePrefix("10.231.0.0/16")

// NetnsPrefix starts the name of every network namespace a lab creates:
// "lr-" + lab name + "-" + node name.
const NetnsPrefix = "lr-"

// Spec says which lab to build.
type Spec struct {
	// Name names the lab; namespaces are called lr-NAME-NODE.
	Name     string `json:"name"`
	Topology string `json:"topology"`
	// Ports is the number of peers of a star; 0 for other topologies.
	Ports int `json:"ports,omitempty"`
	// MTU of every link; 0 keeps the kernel's default (1500).
	MTU int `json:"mtu,omitempty"`
	// Queues is the number of rx and tx queues of each veth; 0 means 1.
	Queues int `json:"queues,omitempty"`
	// Rate caps each direction of each link, in bits per second of
	// Ethernet frames as the kernel counts them (header included; preamble,
	// FCS and gap not); 0 leaves the links uncapped.
	Rate uint64 `json:"rate_bps,omitempty"`
	// Subnet is carved into one subnet per link; zero means DefaultSubnet.
	Subnet netip.Prefix `json:"subnet"`
	// Serve, when set, starts an agent in every node (see Serve).
	Serve *Serve `json:"serve,omitempty"`
	// VM, when set, makes some nodes virtual machines (see VM).
	VM *VM `json:"vm,omitempty"`

	// afterStep, when set (by tests only), is called after each step of Up
	// with the number of steps done, so a test can kill Up half way.
	afterStep func(done int)
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// RequireRoot is a usage error unless the process runs as root, which
// building, removing and entering labs needs.
func RequireRoot(what string) error {
	if os.Geteuid() != 0 {
		return usage.Errorf("%s needs root (it works with network namespaces): try sudo", what)
	}
	return nil
}

// CheckName reports whether name can name a lab, as a usage error.
func CheckName(name string) error {
	switch {
	case name == "":
		return usage.Errorf("lab name is empty")
	case len(name) > MaxNameLen:
		return usage.Errorf("lab name %q is too long: at most %d characters", name, MaxNameLen)
	case !nameRE.MatchString(name):
		return usage.Errorf("lab name %q: use lower-case letters, digits and '-', starting with a letter or digit", name)
	}
	return nil
}

// Validate checks a spec and fills in its defaults (Queues, Subnet, Ports).
// Every problem is bad input; one in a field is a *usage.FieldError
// naming the field.
func (s *Spec) Validate() error {
	if err := CheckName(s.Name); err != nil {
		return err
	}
	switch s.Topology {
	case Pair, Router:
		if s.Ports != 0 {
			return usage.Field("Ports", "is for the star topology, not %s", s.Topology)
		}
	case Star:
		if s.Ports < 1 || s.Ports > MaxPorts {
			return usage.Field("Ports", "%d: a star has 1 to %d ports", s.Ports, MaxPorts)
		}
	default:
		return usage.Errorf("unknown topology %q: want one of %s", s.Topology, strings.Join(Topologies, ", "))
	}
	if s.MTU != 0 && (s.MTU < MinMTU || s.MTU > MaxMTU) {
		return usage.Field("MTU", "%d: want %d to %d", s.MTU, MinMTU, MaxMTU)
	}
	if s.Queues == 0 {
		s.Queues = 1
	}
	if s.Queues < 1 || s.Queues > MaxQueues {
		return usage.Field("Queues", "%d: want 1 to %d", s.Queues, MaxQueues)
	}
	if s.Rate != 0 && (s.Rate < MinRate || s.Rate > MaxRate) {
		return usage.Field("Rate", "%s: want %s to %s", FormatRate(s.Rate), FormatRate(MinRate), FormatRate(MaxRate))
	}
	if !s.Subnet.IsValid() {
		s.Subnet = DefaultSubnet
	}
	if s.Serve != nil && (s.Serve.Port < 1 || s.Serve.Port > 65535) {
		return usage.Errorf("agents' port %d: want 1 to 65535", s.Serve.Port)
	}
	if s.Serve != nil {
		for _, c := range s.Serve.CPUs {
			if c < 0 {
				return usage.Errorf("agents' CPU %d: negative", c)
			}
		}
	}
	return checkSubnet(s.Subnet, s.links())
}

// links is the number of links the topology has.
func (s *Spec) links() int {
	switch s.Topology {
	case Router:
		return 2
	case Star:
		return s.Ports
	}
	return 1
}

// linkBits is the prefix length of each link's subnet carved from base:
// eight bits longer than base, but never longer than /30 (two hosts).
func linkBits(base netip.Prefix) int {
	return min(base.Bits()+8, 30)
}

func checkSubnet(p netip.Prefix, links int) error {
	if !p.Addr().Is4() {
		return usage.Field("Subnet", "%s: want an IPv4 prefix such as %s", p, DefaultSubnet)
	}
	if p.Masked() != p {
		return usage.Field("Subnet", "%s has host bits set: did you mean %s?", p, p.Masked())
	}
	if p.Bits() < 8 || p.Bits() > 29 {
		return usage.Field("Subnet", "%s: want a prefix length from /8 to /29", p)
	}
	// Link k (1-based) uses the k-th subnet, so slot 0 stays unused and
	// link numbers match the third octet with the default plan.
	slots := 1 << (linkBits(p) - p.Bits())
	if links+1 > slots {
		return usage.Field("Subnet", "%s has room for %d links of /%d; this lab needs %d", p, slots-1, linkBits(p), links)
	}
	return nil
}

// ParseRate reads a rate in bits per second as ceiling.ParseSpeed does
// ("100M", "2.5G", "1gbit", "500000"); its error is bad input.
func ParseRate(s string) (uint64, error) {
	bps, err := ceiling.ParseSpeed(s)
	if err != nil {
		return 0, usage.Wrap(err)
	}
	return uint64(bps), nil
}

// FormatRate writes a rate in bits per second the way ParseRate reads it.
func FormatRate(bps uint64) string { return units.Speed(int64(bps)) }

// Lab is a lab as built: what the spec asked for, the nodes and links with
// their addresses, and the journal of objects created. It is also the
// content of the lab's state file.
type Lab struct {
	Spec  Spec   `json:"spec"`
	Nodes []Node `json:"nodes"`
	Links []Link `json:"links"`
	// Created is when Up started; Pid is the process that ran it.
	Created time.Time `json:"created"`
	Pid     int       `json:"pid"`
	// Complete is set once every object exists and is configured.
	Complete bool `json:"complete"`
	// Partial says why the state file could not be read (never written:
	// Load sets it); the journal is then what could be recovered.
	Partial string `json:"partial,omitempty"`
	// Objects is the journal: each object is recorded before it is made.
	Objects []Object `json:"objects"`
	// Agents are the agents started (Spec.Serve), each recorded once it
	// runs.
	Agents []Agent `json:"agents,omitempty"`
	// Guests are the VM nodes' guests (Spec.VM), each recorded once its
	// supervisor runs.
	Guests []Guest `json:"guests,omitempty"`

	dir Dir // where the state file lives
}

// Node is one host of a lab, a network namespace of its own.
type Node struct {
	Name  string `json:"name"`
	Netns string `json:"netns"`
	// Ifaces are the node's ends of its links, in link order.
	Ifaces []Iface `json:"ifaces"`
	// Gateway is the next hop of the node's default route, if it has one.
	Gateway netip.Addr `json:"gateway,omitzero"`
	// Forward says the node routes between its links (ip_forward=1).
	Forward bool `json:"forward,omitempty"`
	// Masquerade names the interface the node NATs out of, if any.
	Masquerade string `json:"masquerade,omitempty"`
}

// Iface is one end of a link, inside its node's namespace. An interface is
// named after the node at the other end of its link.
type Iface struct {
	Name string       `json:"name"`
	Addr netip.Prefix `json:"addr"`
	// Peer and PeerIface name the other end of the link.
	Peer      string `json:"peer"`
	PeerIface string `json:"peer_iface"`
}

// Link is one veth pair between two nodes.
type Link struct {
	A End `json:"a"`
	B End `json:"b"`
	// Subnet is the link's own subnet, carved from the spec's.
	Subnet netip.Prefix `json:"subnet"`
}

// End is one end of a link.
type End struct {
	Node  string       `json:"node"`
	Iface string       `json:"iface"`
	Addr  netip.Prefix `json:"addr"`
}

// Object is one entry of the journal: something Up is about to create or
// has created that Down must remove.
type Object struct {
	Kind  string `json:"kind"`  // KindNetns, KindVeth, KindTap, KindTable or KindHosts
	Netns string `json:"netns"` // the namespace, or the one the object lives in
	// Name is the interface of a veth (its peer goes with it) or of a
	// tap, the nftables table, or the /etc/netns directory; "" for a
	// namespace.
	Name string `json:"name,omitempty"`
	// Dev and Ino identify a namespace once it exists, so Down can tell it
	// from a foreign one that took the same name; zero before that.
	Dev uint64 `json:"dev,omitempty"`
	Ino uint64 `json:"ino,omitempty"`
	// Done is set once the object exists.
	Done bool `json:"done"`
}

// Kinds of journalled objects.
const (
	KindNetns = "netns"
	KindVeth  = "veth"
	KindTap   = "tap" // Name is the tap, in Netns, behind a guest's NIC
	KindTable = "nftables-table"
	KindHosts = "etc-netns-hosts" // Name is the directory /etc/netns/NETNS
)

// Name is the lab's name.
func (l *Lab) Name() string { return l.Spec.Name }

// Node returns the named node, or a usage error listing the lab's nodes.
func (l *Lab) Node(name string) (Node, error) {
	for _, n := range l.Nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return Node{}, usage.Errorf("lab %s has no node %q: its nodes are %s", l.Spec.Name, name, strings.Join(l.NodeNames(), ", "))
}

// NodeNames lists the lab's node names in order.
func (l *Lab) NodeNames() []string {
	names := make([]string, len(l.Nodes))
	for i, n := range l.Nodes {
		names[i] = n.Name
	}
	return names
}

// Addrs lists the node's addresses, one per interface, in link order.
func (n Node) Addrs() []netip.Addr {
	a := make([]netip.Addr, len(n.Ifaces))
	for i, f := range n.Ifaces {
		a[i] = f.Addr.Addr()
	}
	return a
}

// NetnsName is the network namespace of a node of a lab.
func NetnsName(lab, node string) string {
	return NetnsPrefix + lab + "-" + node
}

// String describes the spec's options on one line.
func (s Spec) String() string {
	mtu := "mtu default"
	if s.MTU != 0 {
		mtu = fmt.Sprintf("mtu %d", s.MTU)
	}
	rate := "uncapped"
	if s.Rate != 0 {
		rate = "capped at " + FormatRate(s.Rate) + "bit/s each way"
	}
	q := "1 queue"
	if s.Queues > 1 {
		q = fmt.Sprintf("%d queues", s.Queues)
	}
	return fmt.Sprintf("subnet %s, %s, %s per veth, links %s", s.Subnet, mtu, q, rate)
}
