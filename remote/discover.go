package remote

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"linerate/internal/order"
)

// ErrNoRecords: a dns:// or dns+srv:// name gave no agent (no such name,
// or a name with no A, AAAA or SRV records of the kind asked for).
var ErrNoRecords = errors.New("no agents found")

// ErrTooMany: a name stands for more agents than one plan may hold.
var ErrTooMany = errors.New("too many agents")

// MaxDiscovered bounds the agents one name may stand for, checked before
// anything is built from the records.
const MaxDiscovered = 1024

// parseDNS reads dns://NAME[:PORT] and dns+srv://_SERVICE._tcp.DOMAIN.
func parseDNS(spec, s string) (Host, error) {
	scheme, rest, _ := strings.Cut(s, "://")
	bad := func(format string, a ...any) (Host, error) {
		return Host{}, fmt.Errorf("%w %q: %s", ErrSpec, spec, fmt.Sprintf(format, a...))
	}
	if strings.ContainsAny(rest, "/?#@") {
		return bad("a %s:// spec is a name only: %s", scheme, map[string]string{
			"dns": "dns://NAME[:PORT]", "dns+srv": "dns+srv://_SERVICE._tcp.DOMAIN"}[scheme])
	}
	if scheme == "dns+srv" {
		if strings.Contains(rest, ":") {
			return bad("dns+srv:// takes no port: the SRV records give each target's")
		}
		labels := strings.Split(strings.TrimSuffix(rest, "."), ".")
		if len(labels) < 3 || !strings.HasPrefix(labels[0], "_") || labels[1] != "_tcp" {
			return bad("want dns+srv://_SERVICE._tcp.DOMAIN (_linerate._tcp.example.org), the name of SRV records")
		}
		if err := checkDNSName(rest); err != nil {
			return bad("%v", err)
		}
		return Host{Kind: SRV, Name: strings.TrimSuffix(rest, ".")}, nil
	}
	name, port := rest, DefaultPort
	if h, p, err := net.SplitHostPort(rest); err == nil {
		n, err := parsePort(p)
		if err != nil {
			return bad("%v", err)
		}
		name, port = h, n
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return bad("%s is an address: give it as %s (an agent), dns:// takes a name to look up", name, net.JoinHostPort(name, strconv.Itoa(port)))
	}
	if err := checkDNSName(name); err != nil {
		return bad("%v", err)
	}
	return Host{Kind: DNS, Name: strings.TrimSuffix(name, "."), Port: port}, nil
}

// checkDNSName refuses a name that is not made of DNS labels (letters,
// digits, '-' and '_'; 1 to 63 bytes each, 253 in all).
func checkDNSName(name string) error {
	n := strings.TrimSuffix(name, ".")
	if n == "" {
		return errors.New("no name")
	}
	if len(n) > 253 {
		return fmt.Errorf("name of %d bytes: at most 253", len(n))
	}
	for _, l := range strings.Split(n, ".") {
		if l == "" || len(l) > 63 || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return fmt.Errorf("name %q: label %q: want 1 to 63 letters, digits, '-' or '_', not starting or ending with '-'", name, l)
		}
		if err := checkWord("name", l); err != nil {
			return err
		}
	}
	return nil
}

// Resolver looks names up; *net.Resolver is one (net.DefaultResolver reads
// /etc/resolv.conf and /etc/hosts, which `ip netns exec` replaces with a
// namespace's own from /etc/netns/NAME/).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
}

// Found is one agent a dns:// or dns+srv:// spec stands for.
type Found struct {
	// Host is the agent: its address and control port.
	Host Host
	// Target is the SRV target it was found as ("" for dns://).
	Target string
}

// lookupTimeout bounds the lookups of one spec.
const lookupTimeout = 15 * time.Second

// Discover looks up the agents a dns:// or dns+srv:// host stands for, in
// a stable order (by address, or by SRV target and port): every A and AAAA
// record of a dns:// name, each at the spec's port; every target and port
// of the SRV records of a dns+srv:// name, each target reached at the first
// of its addresses (IPv4 first). A name that gives none is an *Error with
// ErrNoRecords naming it; so is an SRV target with no address. Any other
// kind of host is itself.
func Discover(ctx context.Context, r Resolver, h Host) ([]Found, error) {
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	switch h.Kind {
	case DNS:
		addrs, err := lookupAddrs(ctx, r, h, h.Name)
		if err != nil {
			return nil, err
		}
		out := make([]Found, len(addrs))
		for i, a := range addrs {
			out[i] = Found{Host: Host{Kind: Agent, Name: a.String(), Port: h.Port}}
		}
		return out, nil
	case SRV:
		_, srvs, err := r.LookupSRV(ctx, "", "", h.Name)
		if err == nil && len(srvs) == 0 {
			err = errors.New("no SRV records")
		}
		if err != nil {
			return nil, noRecords(h, err)
		}
		if len(srvs) > MaxDiscovered {
			return nil, &Error{Host: h.String(), Kind: ErrTooMany, ExitCode: -1,
				Err: fmt.Errorf("%d SRV records: at most %d", len(srvs), MaxDiscovered)}
		}
		order.Sort(srvs, func(a, b *net.SRV) int {
			return cmp.Or(strings.Compare(a.Target, b.Target), cmp.Compare(a.Port, b.Port))
		})
		srvs = slices.CompactFunc(srvs, func(a, b *net.SRV) bool { return a.Target == b.Target && a.Port == b.Port })
		out := make([]Found, 0, len(srvs))
		for _, s := range srvs {
			target := strings.TrimSuffix(s.Target, ".")
			addrs, err := lookupAddrs(ctx, r, h, target)
			if err != nil {
				return nil, err
			}
			out = append(out, Found{Host: Host{Kind: Agent, Name: addrs[0].String(), Port: int(s.Port)}, Target: target})
		}
		return out, nil
	}
	return []Found{{Host: h}}, nil
}

// lookupAddrs is every address of name, IPv4 first, each once; an
// *Error naming h and name when there is none.
func lookupAddrs(ctx context.Context, r Resolver, h Host, name string) ([]netip.Addr, error) {
	addrs, err := r.LookupNetIP(ctx, "ip", name)
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("no A or AAAA records for %s", name)
	}
	if err != nil {
		if h.Kind == SRV {
			err = fmt.Errorf("SRV target %s: %w", name, err)
		}
		return nil, noRecords(h, err)
	}
	if len(addrs) > MaxDiscovered {
		return nil, &Error{Host: h.String(), Kind: ErrTooMany, ExitCode: -1,
			Err: fmt.Errorf("%s has %d addresses: at most %d", name, len(addrs), MaxDiscovered)}
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	order.Sort(addrs, func(a, b netip.Addr) int {
		return cmp.Or(cmp.Compare(a.BitLen(), b.BitLen()), a.Compare(b))
	})
	return slices.Compact(addrs), nil
}

// noRecords is the error of a lookup that found nothing, with the
// resolver's own words (no such host, a server that failed).
func noRecords(h Host, err error) *Error {
	return &Error{Host: h.String(), Kind: ErrNoRecords, ExitCode: -1, Err: err}
}
