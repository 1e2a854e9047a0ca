package netnsread

import (
	"fmt"

	"linerate/box"
	"linerate/source/rtnl"
)

// Path reads the named interfaces of this namespace as PathIfaces of
// host. An interface that does not exist is an error naming it.
func (r *Reader) Path(host string, ifaces ...string) ([]box.PathIface, error) {
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
	var out []box.PathIface
	for _, name := range ifaces {
		l, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("%s: no interface %s", r.src.Name(), name)
		}
		p := box.PathIface{Host: host, Iface: name, Kind: l.Kind, Loopback: l.Loopback, MTU: l.MTU, MaxMTU: l.MaxMTU}
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
