package box

import "linerate/source/rtnl"

// PathIface is one interface on a test's path and what may limit the rate
// through it: its link speed and the shaping qdiscs and classes of its
// egress. linerate/box/netnsread reads them from a live namespace.
type PathIface struct {
	// Host names the host (namespace) the interface is in: "client",
	// "router".
	Host  string `json:"host"`
	Iface string `json:"iface"`
	// Kind is the link type ("veth", "bridge", ...); "" for a physical NIC.
	Kind     string `json:"kind,omitempty"`
	Loopback bool   `json:"loopback,omitempty"`
	// MTU is the interface's MTU, MaxMTU the largest its driver accepts
	// (0 when unknown): the far end's evidence for jumbo-frames.
	MTU    int `json:"mtu,omitempty"`
	MaxMTU int `json:"max_mtu,omitempty"`
	// SpeedMbps is the link speed sysfs reports; 0 when unknown (link
	// down, no carrier, a driver that does not say).
	SpeedMbps int `json:"speed_mbps,omitempty"`
	// Qdiscs are the interface's egress qdiscs, root and below.
	Qdiscs []rtnl.Qdisc `json:"qdiscs,omitempty"`
	// Classes are its traffic classes (htb's carry rates).
	Classes []rtnl.Class `json:"classes,omitempty"`
}
