package sock

import (
	"fmt"
	"net"
	"net/netip"
)

func interfaceIndex(name string) (int, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return 0, err
	}
	return ifi.Index, nil
}

// InterfaceOf finds the interface that holds address a (in the network
// namespace of the calling thread).
func InterfaceOf(a netip.Addr) (string, int, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", 0, err
	}
	for _, ifi := range ifs {
		addrs, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, ad := range addrs {
			if pn, ok := ad.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(pn.IP); ok && ip.Unmap() == a.Unmap() {
					return ifi.Name, ifi.Index, nil
				}
			}
		}
	}
	return "", 0, fmt.Errorf("no interface holds %s", a)
}
