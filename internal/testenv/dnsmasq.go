package testenv

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
)

// DNSMasqPath is Debian's dnsmasq (package dnsmasq-base: the program
// without the service, so installing it starts no DNS server on the
// machine).
const DNSMasqPath = "/usr/sbin/dnsmasq"

// DNS is a real DNS server (dnsmasq) that a test runs inside one of its
// network namespaces, answering for one domain from the records the test
// gives and for nothing else, listening on one address there. It stops
// when the test ends, also when it fails.
type DNS struct {
	// Addr is where it listens (port 53).
	Addr netip.Addr
	log  *lockedBuffer
}

// DNSRecords are what the server answers: A and AAAA records by name
// (every name under the domain), and SRV records, each
// "_SERVICE._tcp.NAME,TARGET,PORT".
type DNSRecords struct {
	Domain string
	Hosts  map[string][]netip.Addr
	SRV    []string
}

// StartDNS runs dnsmasq in ns on addr:53 (bound to that address only, no
// upstream servers, no /etc/hosts, no configuration file, no DHCP) and
// returns once it answers. It skips the test when dnsmasq is missing
// (make test installs dnsmasq-base).
func StartDNS(t testing.TB, ns *NetNS, addr netip.Addr, r DNSRecords) *DNS {
	t.Helper()
	RequireRoot(t)
	if _, err := exec.LookPath(DNSMasqPath); err != nil {
		t.Skipf("%s not found: install dnsmasq-base (make test does)", DNSMasqPath)
	}
	args := []string{"--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts", "--no-poll",
		"--bind-interfaces", "--listen-address=" + addr.String(), "--port=53",
		"--pid-file=", "--user=root", "--log-facility=-", "--log-queries",
		"--local=/" + r.Domain + "/"}
	for name, addrs := range r.Hosts {
		for _, a := range addrs { // a host-record holds one address of each family
			args = append(args, "--host-record="+name+","+a.String())
		}
	}
	for _, s := range r.SRV {
		args = append(args, "--srv-host="+s)
	}
	cmd := exec.Command(DNSMasqPath, args...)
	d := &DNS{Addr: addr, log: &lockedBuffer{}}
	// dnsmasq logs "dnsmasq[PID]: started, version ..." once it listens.
	started := func(line string) bool { return strings.Contains(line, ": started, version") }
	startDaemon(t, ns, cmd, d.log, started, nil)
	return d
}

// ResolvConf is a resolv.conf that sends every lookup to d.
func (d *DNS) ResolvConf() string {
	return fmt.Sprintf("nameserver %s\noptions timeout:2 attempts:2\n", d.Addr)
}

// Resolver is Go's own resolver asking d, over the network of ns, whatever
// this machine's resolv.conf says.
func (d *DNS) Resolver(ns *NetNS) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (c net.Conn, err error) {
		err = ns.Do(func() error {
			c, err = (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(d.Addr.String(), "53"))
			return err
		})
		return c, err
	}}
}

// Log is what dnsmasq wrote so far (every query it answered).
func (d *DNS) Log() string { return d.log.String() }
