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
	var links []netlink.Link
	for _, f := range c.Ifaces {
		l, err := configureIface(nl, f)
		if err != nil {
			return err
		}
		links = append(links, l)
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
	if c.Serve != nil {
		return g.startServe(c.Serve)
	}
	return nil
}

// configureIface finds a NIC by its MAC, names it, sets its MTU, address
// and rate cap, and brings it up.
func configureIface(nl *netlink.Handle, f IfaceConfig) (netlink.Link, error) {
	mac, err := net.ParseMAC(f.MAC)
	if err != nil {
		return nil, fmt.Errorf("NIC %s: %w", f.Name, err)
	}
	links, err := nl.LinkList()
	if err != nil {
		return nil, err
	}
	var link netlink.Link
	for _, l := range links {
		if l.Type() == "device" && l.Attrs().HardwareAddr.String() == mac.String() {
			link = l
		}
	}
	if link == nil {
		return nil, fmt.Errorf("no NIC with address %s for %s: did its driver load? (dmesg)", mac, f.Name)
	}
	if link.Attrs().Name != f.Name {
		if err := nl.LinkSetDown(link); err != nil {
			return nil, err
		}
		if err := nl.LinkSetName(link, f.Name); err != nil {
			return nil, fmt.Errorf("name NIC %s %s: %w", link.Attrs().Name, f.Name, err)
		}
	}
	if link, err = nl.LinkByName(f.Name); err != nil {
		return nil, err
	}
	if f.MTU != 0 && link.Attrs().MTU != f.MTU {
		if err := nl.LinkSetMTU(link, f.MTU); err != nil {
			return nil, fmt.Errorf("MTU %d on %s: %w", f.MTU, f.Name, err)
		}
	}
	if err := nl.AddrReplace(link, &netlink.Addr{IPNet: nodenet.IPNet(f.Addr)}); err != nil {
		return nil, fmt.Errorf("address %s on %s: %w", f.Addr, f.Name, err)
	}
	if f.Rate != 0 {
		if err := nl.QdiscReplace(nodenet.TBF(link.Attrs().Index, f.Rate)); err != nil {
			return nil, fmt.Errorf("cap %s with tbf: %w", f.Name, err)
		}
	}
	if err := nl.LinkSetUp(link); err != nil {
		return nil, fmt.Errorf("bring %s up: %w", f.Name, err)
	}
	return link, nil
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
