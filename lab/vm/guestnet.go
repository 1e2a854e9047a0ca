package vm

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"linerate/lab/nodenet"
)

// Files a guest's configuration writes.
const (
	hostsFile    = "/etc/hosts"
	linkFilesDir = "/etc/systemd/network"
	ipForward    = "/proc/sys/net/ipv4/ip_forward"
	servePidFile = guestRun + "/serve.pid"
	serveLogFile = guestRun + "/serve.log"
)

// carrierWait bounds the wait for every NIC's carrier after it is
// brought up (an emulated e1000e needs a moment under TCG).
const carrierWait = 30 * time.Second

// configure sets the guest up as c says. It can be run again on a guest
// already set up (the host does after it lost the session).
func (g *guest) configure(c *Config) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	nl, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer nl.Close()
	if lo, err := nl.LinkByName("lo"); err == nil {
		nl.LinkSetUp(lo)
	}
	for _, f := range c.Ifaces {
		if err := configureIface(nl, f); err != nil {
			return err
		}
	}
	if err := waitCarrier(nl, c.Ifaces); err != nil {
		return err
	}
	if c.Gateway.IsValid() {
		r := &netlink.Route{Gw: net.IP(c.Gateway.AsSlice())}
		if err := nl.RouteReplace(r); err != nil {
			return fmt.Errorf("default route via %s: %w", c.Gateway, err)
		}
	}
	if c.Forward {
		if err := os.WriteFile(ipForward, []byte("1"), 0o644); err != nil {
			return fmt.Errorf("ip_forward: %w", err)
		}
	}
	if c.Masquerade != "" {
		if err := nodenet.DeleteTable(); err != nil {
			return fmt.Errorf("nftables: %w", err)
		}
		if err := nodenet.Masquerade(c.Masquerade); err != nil {
			return fmt.Errorf("nftables NAT out of %s: %w", c.Masquerade, err)
		}
	}
	if err := os.WriteFile(hostsFile, []byte(c.Hosts), 0o644); err != nil {
		return fmt.Errorf("hosts: %w", err)
	}
	if c.Persist {
		if err := writeLinkFiles(c.Ifaces); err != nil {
			return err
		}
	}
	g.watchNICs(c.Ifaces)
	if c.Serve != nil {
		return g.startServe(c.Serve)
	}
	return nil
}

// configureIface finds a NIC by its MAC, names it, sets its MTU, address
// and rate cap, and brings it up.
func configureIface(nl *netlink.Handle, f IfaceConfig) error {
	link, err := linkByMAC(nl, f.MAC)
	if err != nil {
		return err
	}
	if link == nil {
		return fmt.Errorf("no NIC with address %s for %s: did its driver load? (dmesg)", f.MAC, f.Name)
	}
	if link.Attrs().Name != f.Name {
		if err := nl.LinkSetDown(link); err != nil {
			return err
		}
		if err := nl.LinkSetName(link, f.Name); err != nil {
			return fmt.Errorf("name NIC %s %s: %w", link.Attrs().Name, f.Name, err)
		}
	}
	if link, err = nl.LinkByName(f.Name); err != nil {
		return err
	}
	if f.MTU != 0 && link.Attrs().MTU != f.MTU {
		if err := nl.LinkSetMTU(link, f.MTU); err != nil {
			return fmt.Errorf("MTU %d on %s: %w", f.MTU, f.Name, err)
		}
	}
	if err := nl.AddrReplace(link, &netlink.Addr{IPNet: nodenet.IPNet(f.Addr)}); err != nil {
		return fmt.Errorf("address %s on %s: %w", f.Addr, f.Name, err)
	}
	if f.Rate != 0 {
		if err := nl.QdiscReplace(nodenet.TBF(link.Attrs().Index, f.Rate)); err != nil {
			return fmt.Errorf("cap %s with tbf: %w", f.Name, err)
		}
	}
	if err := nl.LinkSetUp(link); err != nil {
		return fmt.Errorf("bring %s up: %w", f.Name, err)
	}
	return nil
}

// linkByMAC finds the NIC (a device, not a virtual link) with the
// address; nil when there is none.
func linkByMAC(nl *netlink.Handle, addr string) (netlink.Link, error) {
	mac, err := net.ParseMAC(addr)
	if err != nil {
		return nil, err
	}
	links, err := nl.LinkList()
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		if l.Type() == "device" && l.Attrs().HardwareAddr.String() == mac.String() {
			return l, nil
		}
	}
	return nil, nil
}

// nicSettle is how long a NIC that appeared is left to udev (which names
// it in a Debian guest) before the agent sets it up.
const nicSettle = 500 * time.Millisecond

// watchNICs sets up again a NIC of the guest that comes back as a new
// device (its driver unbound and bound again, its module reloaded), as
// the network manager of a real box brings an interface up when it
// appears. A NIC someone only set down is left down: a new device is
// told by its new ifindex. One watch runs at a time; a new setup
// replaces it.
func (g *guest) watchNICs(ifaces []IfaceConfig) {
	if g.stopWatch != nil {
		close(g.stopWatch)
	}
	done := make(chan struct{})
	g.stopWatch = done
	index := map[string]int{}
	if nl, err := netlink.NewHandle(unix.NETLINK_ROUTE); err == nil {
		for _, f := range ifaces {
			if l, err := linkByMAC(nl, f.MAC); err == nil && l != nil {
				index[f.MAC] = l.Attrs().Index
			}
		}
		nl.Close()
	}
	updates := make(chan netlink.LinkUpdate, 64)
	if err := netlink.LinkSubscribe(updates, done); err != nil {
		g.logf("watch NICs: %v", err)
		return
	}
	go func() {
		for {
			select {
			case <-done:
				return
			case u, ok := <-updates:
				if !ok {
					return
				}
				if u.Header.Type != unix.RTM_NEWLINK || u.Attrs().Flags&net.FlagUp != 0 {
					continue
				}
				for _, f := range ifaces {
					if u.Attrs().HardwareAddr.String() != f.MAC || index[f.MAC] == u.Attrs().Index {
						continue
					}
					index[f.MAC] = u.Attrs().Index
					time.Sleep(nicSettle)
					g.mu.Lock()
					err := g.reconfigure(f)
					g.mu.Unlock()
					if err != nil {
						g.logf("set %s up again: %v", f.Name, err)
					}
				}
			}
		}
	}()
}

// reconfigure sets one NIC up again if it is down.
func (g *guest) reconfigure(f IfaceConfig) error {
	nl, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer nl.Close()
	l, err := linkByMAC(nl, f.MAC)
	if err != nil || l == nil || l.Attrs().Flags&net.FlagUp != 0 {
		return err
	}
	g.logf("%s (%s) came back down: setting it up", f.Name, f.MAC)
	return configureIface(nl, f)
}

// waitCarrier waits until every NIC is operationally up.
func waitCarrier(nl *netlink.Handle, ifaces []IfaceConfig) error {
	deadline := time.Now().Add(carrierWait)
	for _, f := range ifaces {
		for {
			l, err := nl.LinkByName(f.Name)
			if err != nil {
				return err
			}
			if l.Attrs().OperState == netlink.OperUp {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s is still %s after %s", f.Name, l.Attrs().OperState, carrierWait)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// writeLinkFiles names each NIC after its peer from boot on, the way a
// Debian system names interfaces: a systemd .link file matching its MAC.
func writeLinkFiles(ifaces []IfaceConfig) error {
	if err := os.MkdirAll(linkFilesDir, 0o755); err != nil {
		return err
	}
	for _, f := range ifaces {
		body := fmt.Sprintf("# Written by linerate's lab: this NIC is named after the node at its other end.\n[Match]\nMACAddress=%s\n\n[Link]\nName=%s\n", f.MAC, f.Name)
		if err := writeAtomic(filepath.Join(linkFilesDir, "10-linerate-"+f.Name+".link"), []byte(body)); err != nil {
			return fmt.Errorf("link file of %s: %w", f.Name, err)
		}
	}
	return nil
}

// startServe (re)starts the lab's agent in the guest and waits until it
// accepts connections on loopback.
func (g *guest) startServe(s *ServeConfig) error {
	if err := os.MkdirAll(guestRun, 0o700); err != nil {
		return err
	}
	stopServe()
	if err := writeAtomic(s.TokenFile, []byte(s.Secret+"\n")); err != nil {
		return fmt.Errorf("agents' secret: %w", err)
	}
	if err := os.Chmod(s.TokenFile, 0o600); err != nil {
		return err
	}
	log, err := os.OpenFile(serveLogFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	self, err := os.Executable()
	if err != nil {
		self = GuestBinary
	}
	cmd := exec.Command(self, s.Args...)
	cmd.Env = []string{"PATH=" + guestPath, "HOME=/root"}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	os.WriteFile(servePidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
	deadline := time.Now().Add(agentWait)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("agent ended before it listened on %s (%v): %s", addr, werr, tail(serveLogFile, 400))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("agent does not accept connections on %s after %s", addr, agentWait)
		}
	}
}

// agentWait bounds the wait for a guest's agent to listen.
const agentWait = 20 * time.Second

// stopServe kills the agent an earlier configuration started, if it runs.
func stopServe() {
	b, err := os.ReadFile(servePidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	// The agent's own command line names it; a pid reused by something
	// else is left alone.
	cl, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || !strings.Contains(string(cl), "serve") {
		return
	}
	syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 100; i++ {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	os.Remove(servePidFile)
}

// tail is the end of a file, for an error message.
func tail(p string, n int) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
