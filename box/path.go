package box

import (
	"fmt"

	"linerate/source/rtnl"
)

// PathIface is one interface on a test's path and what may limit the rate
// through it: its link speed and the shaping qdiscs and classes of its
// egress.
type PathIface struct {
	// Host names the host (namespace) the interface is in: "client",
	// "router".
	Host  string `json:"host"`
	Iface string `json:"iface"`
	// Kind is the link type ("veth", "bridge", ...); "" for a physical NIC.
	Kind     string `json:"kind,omitempty"`
	Loopback bool   `json:"loopback,omitempty"`
	// SpeedMbps is the link speed sysfs reports; 0 when unknown (link
	// down, no carrier, a driver that does not say).
	SpeedMbps int `json:"speed_mbps,omitempty"`
	// Qdiscs are the interface's egress qdiscs, root and below.
	Qdiscs []rtnl.Qdisc `json:"qdiscs,omitempty"`
	// Classes are its traffic classes (htb's carry rates).
	Classes []rtnl.Class `json:"classes,omitempty"`
}

// Path reads the named interfaces of this namespace as PathIfaces of
// host. An interface that does not exist is an error naming it.
func (r *NetnsReader) Path(host string, ifaces ...string) ([]PathIface, error) {
	links, err := r.rt.Links()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.src.Name(), err)
	}
	qdiscs, err := r.rt.Qdiscs()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.src.Name(), err)
	}
	byName := make(map[string]rtnl.Link, len(links))
	for _, l := range links {
		byName[l.Name] = l
	}
	var out []PathIface
	for _, name := range ifaces {
		l, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("%s: no interface %s", r.src.Name(), name)
		}
		p := PathIface{Host: host, Iface: name, Kind: l.Kind, Loopback: l.Loopback}
		if dev, err := r.src.Sys().NetDevice(name); err == nil && dev.SpeedMbps != nil && *dev.SpeedMbps > 0 {
			p.SpeedMbps = *dev.SpeedMbps
		}
		htb := false
		for _, q := range qdiscs {
			if q.Ifindex == l.Index && !q.Ingress() {
				p.Qdiscs = append(p.Qdiscs, q)
				htb = htb || q.Kind == "htb"
			}
		}
		if htb {
			if p.Classes, err = r.rt.Classes(l.Index); err != nil {
				return nil, fmt.Errorf("%s: %w", r.src.Name(), err)
			}
		}
		out = append(out, p)
	}
	return out, nil
}
