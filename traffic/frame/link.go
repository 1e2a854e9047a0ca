package frame

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"linerate/internal/usage"
)

// The link a frame sender sends on: a frame that fits its MTU, the
// addresses the frames carry when the settings leave them out, and the
// next hop's Ethernet address, resolved through the kernel's neighbour
// table.

// onLink checks that frames of cfg fit its interface (an Ethernet address,
// the MTU) and fills in the addresses cfg leaves out: the interface's MAC
// and first IPv4 address, the next hop's MAC. engine names the engine in
// errors ("ring", "xdp").
func (cfg *RingConfig) onLink(engine string) (*netlink.LinkAttrs, error) {
	link, err := netlink.LinkByName(cfg.Iface)
	if err != nil {
		return nil, usage.Errorf("%s sender: interface %q: %w", engine, cfg.Iface, err)
	}
	attrs := link.Attrs()
	if len(attrs.HardwareAddr) != 6 {
		return nil, usage.Errorf("%s sender: interface %s has no Ethernet address (the %s engine sends Ethernet frames)", engine, cfg.Iface, engine)
	}
	if cfg.FrameSize-ringFCSLen-ringEthLen > attrs.MTU {
		what := fmt.Sprintf("frame size %d", cfg.FrameSize)
		if len(cfg.Sizes) > 1 {
			what = fmt.Sprintf("the mix's largest frame, %d bytes,", cfg.FrameSize)
		}
		return nil, usage.Errorf("%s sender: %s needs an MTU of %d, %s has %d", engine, what, cfg.FrameSize-ringFCSLen-ringEthLen, cfg.Iface, attrs.MTU)
	}
	if cfg.SrcMAC == nil {
		cfg.SrcMAC = attrs.HardwareAddr
	}
	if !cfg.SrcIP.IsValid() {
		if cfg.SrcIP, err = firstIPv4(link); err != nil {
			return nil, err
		}
	}
	if cfg.DstMAC == nil {
		if cfg.DstMAC, err = ResolveNextHop(cfg.Iface, cfg.DstIP); err != nil {
			return nil, err
		}
	}
	return attrs, nil
}

// firstIPv4 is the first IPv4 address of link.
func firstIPv4(link netlink.Link) (netip.Addr, error) {
	addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("ring sender: addresses of %s: %w", link.Attrs().Name, err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok {
			return ip, nil
		}
	}
	return netip.Addr{}, usage.Errorf("ring sender: interface %s has no IPv4 address to send from", link.Attrs().Name)
}

// ResolveNextHop returns the Ethernet address of the next hop from iface
// towards dst: the gateway of the route to dst through iface, or dst itself
// when it is on the link. It reads the neighbour table and, when the entry
// is missing, sends one empty UDP datagram to dst's discard port (9)
// through iface so that the kernel resolves it (ARP), then waits up to two
// seconds for the entry.
func ResolveNextHop(iface string, dst netip.Addr) (net.HardwareAddr, error) {
	dst = dst.Unmap()
	if !dst.Is4() {
		return nil, usage.Errorf("resolve next hop: %v is not an IPv4 address", dst)
	}
	link, err := netlink.LinkByName(iface)
	if err != nil {
		return nil, usage.Errorf("resolve next hop: interface %q: %w", iface, err)
	}
	ifindex := link.Attrs().Index
	hop := dst
	routes, err := netlink.RouteGetWithOptions(dst.AsSlice(), &netlink.RouteGetOptions{OifIndex: ifindex})
	if err != nil {
		return nil, usage.Errorf("resolve next hop: no route to %v through %s: %w", dst, iface, err)
	}
	for _, r := range routes {
		if r.Gw != nil {
			if gw, ok := netip.AddrFromSlice(r.Gw.To4()); ok {
				hop = gw
			}
		}
	}
	if mac, err := neighMAC(ifindex, hop); err != nil || mac != nil {
		return mac, err
	}
	if err := probeNextHop(iface, dst); err != nil {
		return nil, fmt.Errorf("resolve next hop %v on %s: %w", hop, iface, err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		mac, err := neighMAC(ifindex, hop)
		if err != nil || mac != nil {
			return mac, err
		}
	}
	return nil, fmt.Errorf("resolve next hop %v on %s: no ARP answer within 2s", hop, iface)
}

// neighMAC returns hop's address from the neighbour table of ifindex, or
// nil when there is no usable entry.
func neighMAC(ifindex int, hop netip.Addr) (net.HardwareAddr, error) {
	neighs, err := netlink.NeighList(ifindex, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("neighbour table: %w", err)
	}
	const usable = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY |
		netlink.NUD_PROBE | netlink.NUD_PERMANENT | netlink.NUD_NOARP
	for _, n := range neighs {
		ip, ok := netip.AddrFromSlice(n.IP.To4())
		if ok && ip == hop && n.State&usable != 0 && len(n.HardwareAddr) == 6 {
			return n.HardwareAddr, nil
		}
	}
	return nil, nil
}

// probeNextHop sends one empty UDP datagram to dst's discard port out of iface,
// which makes the kernel resolve the next hop.
func probeNextHop(iface string, dst netip.Addr) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("probe socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.BindToDevice(fd, iface); err != nil {
		return fmt.Errorf("probe socket bound to %s: %w", iface, err)
	}
	err = unix.Sendto(fd, nil, unix.MSG_DONTWAIT, &unix.SockaddrInet4{Port: 9, Addr: dst.As4()})
	if err != nil && !errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("probe %v: %w", dst, err)
	}
	return nil
}
