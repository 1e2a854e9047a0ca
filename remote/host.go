// Package remote owns reaching the hosts a test involves: it turns a host
// spec into a control channel to linerate's agent on that host. A spec is
// either the address of an agent already running there (HOST[:PORT], a TCP
// connection to `linerate serve`) or an ssh URL (ssh://[user@]host[:port]),
// for which the system's OpenSSH client starts `linerate serve --stdio` on
// the host and ssh's standard input and output become the channel; with
// Copy, a static release binary of the host's architecture is copied there
// first and removed at the end. A spec may also stand for many agents
// found through DNS (dns://NAME, every A and AAAA record; dns+srv://, every
// SRV target): Discover looks them up and gives one agent spec for each.
//
// The package knows nothing of the control protocol spoken on the channel
// (package traffic does): it gives a net.Conn, and when the channel fails it
// says why in one line that names the host and the cause (Error, with a
// sentinel a caller tests with errors.Is). The same channel type serves the
// far end: Stdio turns `serve --stdio`'s standard input and output into a
// net.Conn.
package remote

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// DefaultPort is the TCP port of an agent (`linerate serve`) when a spec
// names none; it is wire.DefaultPort (a test checks they agree).
const DefaultPort = 7557

// Kind is how a host is reached.
type Kind int

const (
	// Agent is an agent already running on the host: a TCP connection to
	// its control port.
	Agent Kind = iota + 1
	// SSH starts the agent on the host through the system's ssh client.
	SSH
	// DNS stands for every agent a name's A and AAAA records give, each at
	// Port (dns://NAME[:PORT]); Discover turns it into Agent hosts.
	DNS
	// SRV stands for every target and port of a name's SRV records
	// (dns+srv://_SERVICE._tcp.DOMAIN); Discover turns it into Agent hosts.
	SRV
)

func (k Kind) String() string {
	switch k {
	case Agent:
		return "agent"
	case SSH:
		return "ssh"
	case DNS:
		return "dns"
	case SRV:
		return "dns+srv"
	}
	return "unknown"
}

// ErrSpec marks a host spec that cannot be read.
var ErrSpec = errors.New("bad host spec")

// Host is where one host is reached, as a spec says.
type Host struct {
	Kind Kind
	// Name is the host name or address: the agent's host (Agent), or the
	// ssh destination (SSH: a name ssh resolves, its config's Host aliases
	// included).
	Name string
	// Port is the agent's control port (Agent), or the ssh port; 0 leaves
	// the ssh port to ssh (its config, or 22).
	Port int
	// User is the ssh login; empty leaves it to ssh.
	User string
}

// Parse reads a host spec: HOST[:PORT] (an agent already running; port
// 7557 by default; an IPv6 address in brackets when a port follows),
// ssh://[user@]host[:port], or a name that stands for many agents:
// dns://NAME[:PORT] or dns+srv://_SERVICE._tcp.DOMAIN (Discover).
func Parse(spec string) (Host, error) {
	s := strings.TrimSpace(spec)
	if s == "" {
		return Host{}, fmt.Errorf("%w: empty", ErrSpec)
	}
	if scheme, _, ok := strings.Cut(s, "://"); ok {
		switch scheme {
		case "ssh":
			return parseSSH(spec, s)
		case "dns", "dns+srv":
			return parseDNS(spec, s)
		}
		return Host{}, fmt.Errorf("%w %q: scheme %q: want ssh://[user@]host[:port], HOST[:PORT] of a running agent, dns://NAME[:PORT] or dns+srv://_SERVICE._tcp.DOMAIN", ErrSpec, spec, scheme)
	}
	host, port := s, DefaultPort
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := parsePort(p)
		if err != nil {
			return Host{}, fmt.Errorf("%w %q: %w", ErrSpec, spec, err)
		}
		host, port = h, n
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	}
	if err := checkName(host); err != nil {
		return Host{}, fmt.Errorf("%w %q: %w", ErrSpec, spec, err)
	}
	return Host{Kind: Agent, Name: host, Port: port}, nil
}

func parseSSH(spec, s string) (Host, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Host{}, fmt.Errorf("%w %q: %w", ErrSpec, spec, errors.Unwrap(err))
	}
	switch {
	case u.Opaque != "" || (u.Path != "" && u.Path != "/"):
		return Host{}, fmt.Errorf("%w %q: an ssh URL has no path: ssh://[user@]host[:port]", ErrSpec, spec)
	case u.RawQuery != "" || u.Fragment != "":
		return Host{}, fmt.Errorf("%w %q: an ssh URL has no query or fragment", ErrSpec, spec)
	}
	h := Host{Kind: SSH, Name: u.Hostname()}
	if u.User != nil {
		if _, set := u.User.Password(); set {
			return Host{}, fmt.Errorf("%w %q: no password in the URL: ssh logs in with keys (BatchMode)", ErrSpec, spec)
		}
		h.User = u.User.Username()
		if err := checkWord("user", h.User); err != nil {
			return Host{}, fmt.Errorf("%w %q: %w", ErrSpec, spec, err)
		}
	}
	if p := u.Port(); p != "" {
		if h.Port, err = parsePort(p); err != nil {
			return Host{}, fmt.Errorf("%w %q: %w", ErrSpec, spec, err)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return Host{}, fmt.Errorf("%w %q: empty port", ErrSpec, spec)
	}
	if err := checkName(h.Name); err != nil {
		return Host{}, fmt.Errorf("%w %q: %w", ErrSpec, spec, err)
	}
	return h, nil
}

func parsePort(p string) (int, error) {
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q: want 1-65535", p)
	}
	return int(n), nil
}

// checkName refuses a host name ssh would take for an option, or one that
// holds characters no host name or address has; an address's zone is an
// interface name.
func checkName(name string) error {
	if a, err := netip.ParseAddr(name); err == nil {
		if z := a.Zone(); z != "" {
			return checkWord("zone", z)
		}
		return nil
	}
	return checkWord("host", name)
}

// checkWord refuses a user, host name or zone that is empty, starts with
// '-' (ssh would take it for an option) or holds anything but
// [A-Za-z0-9._-]: it goes to ssh's command line and the remote shell.
func checkWord(what, w string) error {
	switch {
	case w == "":
		return fmt.Errorf("no %s", what)
	case strings.HasPrefix(w, "-"):
		return fmt.Errorf("%s %q starts with '-'", what, w)
	}
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return fmt.Errorf("%s %q: %q is not allowed (only A-Z a-z 0-9 . _ -)", what, w, r)
		}
	}
	return nil
}

// String is the spec in its canonical form.
func (h Host) String() string {
	switch h.Kind {
	case Agent:
		return net.JoinHostPort(h.Name, strconv.Itoa(h.Port))
	case SSH:
		u := url.URL{Scheme: "ssh", Host: h.Name}
		if strings.Contains(h.Name, ":") {
			u.Host = "[" + h.Name + "]"
		}
		if h.Port != 0 {
			u.Host = net.JoinHostPort(h.Name, strconv.Itoa(h.Port))
		}
		if h.User != "" {
			u.User = url.User(h.User)
		}
		return u.String()
	case DNS:
		return "dns://" + net.JoinHostPort(h.Name, strconv.Itoa(h.Port))
	case SRV:
		return "dns+srv://" + h.Name
	}
	return "?"
}

// destination is the ssh destination argument: [user@]host.
func (h Host) destination() string {
	if h.User != "" {
		return h.User + "@" + h.Name
	}
	return h.Name
}
