// Package plan owns linerate's plans: one YAML file that names the hosts of
// a test and how each is reached, the flows between them, the hosts to
// sample, how long and how many rounds, and the ceiling to hold the total
// against (docs/plans.md). Parse checks all of it and reports the first
// mistake as file:line: what is wrong (an *Error). The Plan it returns is
// what a runner executes: every value typed, every default filled in, a
// flow that names several destination addresses split into one Flow per
// address, so nothing is parsed again. Expect works out, before anything
// runs, what the plan's links and its ceiling let it carry.
package plan

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"linerate/ceiling"
	"linerate/remote"
	"linerate/results"
	"linerate/source/tree"
	"linerate/wire"
)

// Plan is a checked plan, ready to run.
type Plan struct {
	// File is the plan's path as given.
	File string
	// Hosts in the order the file names them.
	Hosts []Host
	// Flows in the order the file gives them; a flow with several
	// addresses is one Flow per address, in a row, sharing Index.
	Flows []Flow
	// Sample names the hosts whose counters are sampled, besides the ends
	// of the flows (which always are).
	Sample []string
	// Duration is each round's measured time, Warmup the time sent before
	// it (excluded), Rounds how many times the whole plan runs.
	Duration time.Duration
	Warmup   time.Duration
	Rounds   int
	// Ceiling is what the total is held against; nil when none is given.
	Ceiling *Ceiling
	// Matrix sweeps the flows over sets, sizes, MSS and rates; nil when
	// the plan runs every flow at once each round.
	Matrix *Matrix
	// Expansions say what each host given as dns:// or dns+srv:// stood
	// for, once Discover looked them up.
	Expansions []Expansion
}

// Host is one host of a plan: an agent already running there or one
// started over ssh.
type Host struct {
	Name string
	// Reach is how the host is reached.
	Reach remote.Host
	// Copy copies linerate there for the run (ssh hosts only); Binary is
	// the file to copy (an absolute path), empty to let remote choose one
	// of the host's architecture.
	Copy   bool
	Binary string
	// Address is where flows to this host go when they name no address;
	// empty: the host's name in Reach.
	Address string
	// Ports are the host's network ports the plan describes, in file
	// order: which addresses each holds, its speed and MTU.
	Ports []Port
	// Web is where its agent serves /metrics (serve --web), HOST:PORT or
	// :PORT (the host in Reach); empty: WebAddr's default.
	Web string
	// Line is where the host is in the file.
	Line int
}

// Port is one network port of a host (a NIC port): its addresses, the
// speed of its link and its MTU. Flows to its addresses share its link.
type Port struct {
	Name      string
	Addresses []string
	// SpeedBps is the link speed (0: not given); MTU 1500 unless given.
	SpeedBps int64
	MTU      int
	Line     int
}

// Options are base with what the plan says about reaching h (its copy and
// binary): what remote.Dial takes for this host.
func (h *Host) Options(base remote.Options) remote.Options {
	base.Copy, base.Binary = h.Copy, h.Binary
	return base
}

// Port is the port of h that holds addr, nil when none does.
func (h *Host) Port(addr string) *Port {
	for i := range h.Ports {
		if slices.Contains(h.Ports[i].Addresses, addr) {
			return &h.Ports[i]
		}
	}
	return nil
}

// DataAddress is where flows to the host go by default: its address, else
// the first address of its first port, else its name in Reach.
func (h *Host) DataAddress() string {
	if h.Address == "" && len(h.Ports) > 0 {
		return h.Ports[0].Addresses[0]
	}
	return cmp.Or(h.Address, h.Reach.Name)
}

// Flow is traffic between two hosts of the plan, as the runner asks the
// agents for it.
type Flow struct {
	// Index is the flow's position under flows: (from 1); Line where it
	// is in the file.
	Index, Line int
	// Name names the flow in a matrix's sets and cells: its name: key, or
	// FROM-TO (FROM-TO.INDEX when another flow took that already).
	Name string
	// From sends and To receives (Direction Forward); both are host names.
	From, To string
	// Address is the destination on To: an IP address or a name.
	Address   string
	Proto     wire.Proto
	Direction wire.Direction
	// Rate applies to each direction; zero is as fast as possible.
	Rate wire.Rate
	// Size is the UDP frame size (FCS included) when the plan gives it;
	// the payload then depends on the address family (PayloadFor).
	Size int
	// Payload is the UDP payload, or the bytes of each TCP write (0: the
	// engine's default), when Size is 0.
	Payload int
	// Streams, Ports and Threads are as for bench: flows per port or TCP
	// connections, UDP destination ports, sender and receiver threads.
	Streams, Ports, Threads int
	// MSS sets TCP_MAXSEG (0: the path's).
	MSS int
	// Copy makes a TCP flow write from user memory, as iperf3 does,
	// instead of sendfile(2) from an in-memory file (bench tcp's --copy).
	Copy bool
	// DSCP marks the flow's packets both ways (0: unmarked).
	DSCP int
	// Engine is the UDP send engine (auto unless the plan names one).
	Engine results.Engine
	// RR makes the flow a transaction test (bench rr): Streams loops of
	// a request and its response, over one connection each, over UDP,
	// or over a new connection per transaction (Connect). Nil for a bulk
	// flow.
	RR *wire.RR
	// Port is the port of To that holds Address ("" when the plan
	// describes none); SpeedBps its speed (0: not given) and MTU its MTU
	// (1500 unless given). They only shape the expectation.
	Port     string
	SpeedBps int64
	MTU      int
}

// Ceiling is what a plan's total is held against: the PCIe bus of one of
// its hosts, given as a link or read from a capture of that host.
type Ceiling struct {
	// Host is whose bus it is.
	Host string
	// Bus is the link given with pcie:, nil with Root.
	Bus *ceiling.Bus
	// Root is a capture of the host (`linerate capture`), an absolute
	// path; the caller reads it.
	Root string
	// Ports name the host's ports whose NICs sit on the bus; empty: all of
	// its traffic crosses it.
	Ports []string
	Line  int
}

// Limits on what one plan may hold.
const (
	maxFileBytes = 1 << 20
	maxHosts     = MaxHosts
	maxFlows     = 1024
	maxRounds    = 1000
	maxDuration  = 24 * time.Hour
)

// Defaults a plan does not need to give.
const (
	DefaultDuration = 10 * time.Second
	DefaultWarmup   = time.Second
	// defaultUDPPayload makes 64-byte frames over IPv4, as bench does.
	defaultUDPPayload = 18
	defaultMTU        = 1500
)

// The keys of each part of a plan, in the order docs/plans.md gives them.
var (
	planKeys    = []string{"hosts", "defaults", "flows", "sample", "duration", "warmup", "rounds", "ceiling", "matrix"}
	hostKeys    = []string{"at", "copy", "address", "ports", "web"}
	portKeys    = []string{"address", "speed", "mtu"}
	flowKeys    = []string{"from", "to", "address", "name", "proto", "size", "payload", "streams", "flows", "ports", "threads", "rate", "direction", "mss", "engine", "copy", "dscp", "rr"}
	rrKeys      = []string{"connect", "size", "timeout"}
	settingKeys = flowKeys[4:]
	ceilingKeys = []string{"host", "pcie", "mps", "mrrs", "addr32", "ecrc", "root", "ports"}
)

// Load reads and checks the plan in a file: a regular file of at most 1
// MiB. Anything else (a named pipe, a device) is refused before it is
// opened, so nothing blocks, and read through tree.ReadNamed, which opens
// without blocking and checks the open file again.
func Load(path string) (*Plan, error) {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read the plan: %v", unwrapPath(err))}
	case !fi.Mode().IsRegular():
		return nil, &Error{File: path, Msg: tree.Kind(fi.Mode())}
	case fi.Size() > maxFileBytes:
		return nil, &Error{File: path, Msg: fmt.Sprintf("larger than %d bytes: not a plan", maxFileBytes)}
	}
	data, err := tree.ReadNamed(path, maxFileBytes)
	var refused *tree.RefusedError
	switch {
	case errors.As(err, &refused):
		return nil, &Error{File: path, Msg: refused.Why}
	case err != nil:
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read the plan: %v", unwrapPath(err))}
	}
	return Parse(path, data)
}

// unwrapPath drops the path an *os.PathError repeats.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// Parse checks the plan in data, read from file (which names it in errors
// and anchors the relative paths it holds).
func Parse(file string, data []byte) (*Plan, error) {
	p := &parser{file: file}
	root, err := p.document(data)
	if err != nil {
		return nil, err
	}
	fs, err := p.mapping(root, "the plan", planKeys)
	if err != nil {
		return nil, err
	}
	top := map[string]*field{}
	for _, f := range fs {
		top[f.key] = f
	}
	pl := &Plan{File: file, Duration: DefaultDuration, Warmup: DefaultWarmup, Rounds: 1}
	dir := filepath.Dir(file)
	if top["hosts"] == nil {
		return nil, p.errorf(root, "no hosts: name each host and how to reach it (hosts: {cm4: ssh://pi@cm4.local, pi1: 192.168.1.11})")
	}
	if err := p.hosts(top["hosts"], dir, pl); err != nil {
		return nil, err
	}
	defaults := &settings{at: map[string]*yaml.Node{}}
	if f := top["defaults"]; f != nil {
		sfs, err := p.mapping(f.v, "defaults", settingKeys)
		if err != nil {
			return nil, err
		}
		if err := p.settings(sfs, defaults); err != nil {
			return nil, err
		}
	}
	if top["flows"] == nil {
		return nil, p.errorf(root, "no flows: give at least one (flows: [{from: pi1, to: cm4, proto: tcp}])")
	}
	if err := p.flows(top["flows"], defaults, pl); err != nil {
		return nil, err
	}
	if f := top["sample"]; f != nil {
		names, err := p.words(f.v, "sample")
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if err := p.knownHost(f.v, pl, "sample", n); err != nil {
				return nil, err
			}
			if slices.Contains(pl.Sample, n) {
				return nil, p.errorf(f.v, "sample: %s given twice", n)
			}
			pl.Sample = append(pl.Sample, n)
		}
	}
	if f := top["duration"]; f != nil {
		if pl.Duration, err = p.duration(f.v, "duration"); err != nil {
			return nil, err
		}
		if pl.Duration <= 0 || pl.Duration > maxDuration {
			return nil, p.errorf(f.v, "duration %s: want more than 0 and at most %s", pl.Duration, maxDuration)
		}
	}
	if f := top["warmup"]; f != nil {
		if pl.Warmup, err = p.duration(f.v, "warmup"); err != nil {
			return nil, err
		}
		if pl.Warmup < 0 || pl.Warmup > maxDuration {
			return nil, p.errorf(f.v, "warmup %s: want 0 to %s", pl.Warmup, maxDuration)
		}
	}
	if f := top["rounds"]; f != nil {
		if pl.Rounds, err = p.integer(f.v, "rounds"); err != nil {
			return nil, err
		}
		if pl.Rounds < 1 || pl.Rounds > maxRounds {
			return nil, p.errorf(f.v, "rounds %d: want 1 to %d", pl.Rounds, maxRounds)
		}
	}
	if f := top["ceiling"]; f != nil {
		if pl.Ceiling, err = p.ceiling(f, dir, pl); err != nil {
			return nil, err
		}
	}
	if f := top["matrix"]; f != nil {
		if h := pl.discovered(); h != nil {
			return nil, p.errorf(f.k, "matrix: not with hosts found through DNS (%s is %s): name the hosts of a matrix one by one", h.Name, h.Reach)
		}
		if pl.Matrix, err = p.matrix(f, pl); err != nil {
			return nil, err
		}
	}
	for _, h := range pl.Hosts {
		if !pl.Sampled(h.Name) {
			return nil, &Error{File: file, Line: h.Line, Msg: fmt.Sprintf("host %s is in no flow and not under sample: remove it, or sample it", h.Name)}
		}
	}
	// Every flow's spec, as the agents will check it.
	for i := range pl.Flows {
		f := &pl.Flows[i]
		sp := f.Spec(pl.Duration, pl.Warmup, f.IPv4())
		if err := sp.Check(); err != nil {
			return nil, &Error{File: file, Line: f.Line, Msg: fmt.Sprintf("flow %d: %v", f.Index, err)}
		}
	}
	return pl, nil
}

var hostNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

func (p *parser) hosts(f *field, dir string, pl *Plan) error {
	n := f.v
	if n.Kind != yaml.MappingNode {
		return p.errorf(n, "hosts: want a mapping of names to hosts (cm4: ssh://pi@cm4.local), not %s", kindOf(n))
	}
	if len(n.Content) == 0 {
		return p.errorf(n, "hosts: none given")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || !hostNameRE.MatchString(k.Value) {
			return p.errorf(k, "host name %s: want letters, digits, '.', '-' and '_' (at most 63)", kindOf(k))
		}
		name := k.Value
		if pl.Host(name) != nil {
			return p.errorf(k, "host %s given twice", name)
		}
		if len(pl.Hosts) == maxHosts {
			return p.errorf(k, "more than %d hosts", maxHosts)
		}
		h := Host{Name: name, Line: k.Line}
		what := "host " + name
		spec, specNode := "", v
		if v.Kind == yaml.MappingNode {
			fs, err := p.mapping(v, what, hostKeys)
			if err != nil {
				return err
			}
			var copyField *field
			for _, hf := range fs {
				switch hf.key {
				case "at":
					if spec, err = p.scalar(hf.v, what+": at"); err != nil {
						return err
					}
					specNode = hf.v
				case "copy":
					copyField = hf
				case "address":
					if h.Address, err = p.address(hf.v, what+": address"); err != nil {
						return err
					}
				case "ports":
					if err := p.ports(hf.v, what, &h); err != nil {
						return err
					}
				case "web":
					if h.Web, err = p.web(hf.v, what+": web"); err != nil {
						return err
					}
				}
			}
			if specNode == v {
				return p.errorf(v, "%s: no at: say how to reach it (at: ssh://user@host, or ADDR[:PORT] of a running agent)", what)
			}
			if copyField != nil {
				if err := p.copy(copyField.v, what, dir, &h); err != nil {
					return err
				}
			}
		} else {
			var err error
			if spec, err = p.scalar(v, what); err != nil {
				return err
			}
		}
		r, err := remote.Parse(spec)
		if err != nil {
			return p.errorf(specNode, "%s: %v", what, err)
		}
		h.Reach = r
		if h.Copy && r.Kind != remote.SSH {
			return p.errorf(specNode, "%s: copy needs an ssh:// host (linerate copies itself there over ssh); %s is an agent already running", what, r)
		}
		if h.Discovered() {
			if err := p.discoveredHost(v, what, &h); err != nil {
				return err
			}
		}
		pl.Hosts = append(pl.Hosts, h)
	}
	return nil
}

// ports reads a host's ports: NAME: {address: A or [A, ...], speed: 1G,
// mtu: 1500}.
func (p *parser) ports(n *yaml.Node, what string, h *Host) error {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return p.errorf(n, "%s: ports: want a mapping of port names to their addresses and speed (eth1: {address: 10.0.1.1, speed: 1G})", what)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || !hostNameRE.MatchString(k.Value) {
			return p.errorf(k, "%s: port name %s: want an interface name", what, kindOf(k))
		}
		pw := what + ": port " + k.Value
		if slices.ContainsFunc(h.Ports, func(pt Port) bool { return pt.Name == k.Value }) {
			return p.errorf(k, "%s given twice", pw)
		}
		pt := Port{Name: k.Value, MTU: defaultMTU, Line: k.Line}
		fs, err := p.mapping(v, pw, portKeys)
		if err != nil {
			return err
		}
		for _, f := range fs {
			switch f.key {
			case "address":
				items := []*yaml.Node{f.v}
				if f.v.Kind == yaml.SequenceNode {
					items = f.v.Content
				}
				for _, a := range items {
					a = resolve(a)
					s, err := p.address(a, pw+": address")
					if err != nil {
						return err
					}
					if h.Port(s) != nil || slices.Contains(pt.Addresses, s) {
						return p.errorf(a, "%s: address %s given twice", what, s)
					}
					pt.Addresses = append(pt.Addresses, s)
				}
			case "speed":
				s, err := p.scalar(f.v, pw+": speed")
				if err != nil {
					return err
				}
				if pt.SpeedBps, err = ceiling.ParseSpeed(s); err != nil {
					return p.errorf(f.v, "%s: speed: %v", pw, err)
				}
			case "mtu":
				if pt.MTU, err = p.integer(f.v, pw+": mtu"); err != nil {
					return err
				}
				if _, err := ceiling.MTUFrame(pt.MTU, ceiling.Headers{Proto: ceiling.UDP}); err != nil {
					return p.errorf(f.v, "%s: mtu: %v", pw, err)
				}
			}
		}
		if len(pt.Addresses) == 0 {
			return p.errorf(k, "%s: no address: give the addresses flows reach it at", pw)
		}
		h.Ports = append(h.Ports, pt)
	}
	return nil
}

// copy reads copy: true|false|PATH (a binary to copy, relative to the
// plan's directory).
func (p *parser) copy(n *yaml.Node, what, dir string, h *Host) error {
	s, err := p.scalar(n, what+": copy")
	if err != nil {
		return err
	}
	switch s {
	case "true", "yes", "on":
		h.Copy = true
	case "false", "no", "off":
	default:
		h.Copy, h.Binary = true, absPath(dir, s)
	}
	return nil
}

func absPath(dir, s string) string {
	if filepath.IsAbs(s) {
		return filepath.Clean(s)
	}
	if a, err := filepath.Abs(filepath.Join(dir, s)); err == nil {
		return a
	}
	return filepath.Join(dir, s)
}

// address reads a destination: an IP address or a host name.
func (p *parser) address(n *yaml.Node, what string) (string, error) {
	s, err := p.scalar(n, what)
	if err != nil {
		return "", err
	}
	if !validHost(s) {
		return "", p.errorf(n, "%s %q: want an IP address or a host name", what, s)
	}
	return s, nil
}

// validHost says whether s is an IP address or a host name.
func validHost(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil || hostNameRE.MatchString(s) || dnsNameRE.MatchString(s)
}

var dnsNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$`)

// Host is the host named name, nil when there is none.
func (pl *Plan) Host(name string) *Host {
	for i := range pl.Hosts {
		if pl.Hosts[i].Name == name {
			return &pl.Hosts[i]
		}
	}
	return nil
}

func (pl *Plan) hostNames() string {
	var names []string
	for _, h := range pl.Hosts {
		names = append(names, h.Name)
	}
	return strings.Join(names, ", ")
}

// knownHost checks that name is a host of the plan; what says where it is
// named ("flow 2: to").
func (p *parser) knownHost(n *yaml.Node, pl *Plan, what, name string) error {
	if pl.Host(name) != nil {
		return nil
	}
	if _, err := netip.ParseAddr(name); err == nil || strings.Contains(name, ":") {
		return p.errorf(n, "%s %s is an address, not a host of this plan: flows run between agents; name the host under hosts and this address as its address", what, name)
	}
	return p.errorf(n, "%s %s: no such host (hosts: %s)", what, name, pl.hostNames())
}

func (p *parser) ceiling(f *field, dir string, pl *Plan) (*Ceiling, error) {
	fs, err := p.mapping(f.v, "ceiling", ceilingKeys)
	if err != nil {
		return nil, err
	}
	c := &Ceiling{Line: f.k.Line}
	bus := ceiling.Bus{MPS: 128, MRRS: ceiling.DefaultMRRS}
	var busKey, portsField *field
	for _, cf := range fs {
		switch cf.key {
		case "host":
			if c.Host, err = p.scalar(cf.v, "ceiling: host"); err != nil {
				return nil, err
			}
			if err := p.knownHost(cf.v, pl, "ceiling: host", c.Host); err != nil {
				return nil, err
			}
			if h := pl.Host(c.Host); h.Discovered() {
				return nil, p.errorf(cf.v, "ceiling: host %s is %s: the ceiling is one host's bus", c.Host, h.Reach)
			}
		case "pcie":
			s, err := p.scalar(cf.v, "ceiling: pcie")
			if err != nil {
				return nil, err
			}
			if bus.Link, err = ceiling.ParseLink(s); err != nil {
				return nil, p.errorf(cf.v, "ceiling: pcie: %v", err)
			}
			c.Bus = &bus
		case "mps", "mrrs":
			v, err := p.integer(cf.v, "ceiling: "+cf.key)
			if err != nil {
				return nil, err
			}
			if err := ceiling.ValidateSize(v); err != nil {
				return nil, p.errorf(cf.v, "ceiling: %s %d: %v", cf.key, v, err)
			}
			if cf.key == "mps" {
				bus.MPS = v
			} else {
				bus.MRRS = v
			}
			busKey = cf
		case "addr32", "ecrc":
			b, err := p.boolean(cf.v, "ceiling: "+cf.key)
			if err != nil {
				return nil, err
			}
			if cf.key == "addr32" {
				bus.Addr32 = b
			} else {
				bus.ECRC = b
			}
			busKey = cf
		case "root":
			s, err := p.scalar(cf.v, "ceiling: root")
			if err != nil {
				return nil, err
			}
			c.Root = absPath(dir, s)
		case "ports":
			portsField = cf
		}
	}
	switch {
	case c.Bus != nil && c.Root != "":
		return nil, p.errorf(f.k, "ceiling: pcie and root: give one (a link to model, or a capture of the host)")
	case c.Bus == nil && c.Root == "":
		return nil, p.errorf(f.k, "ceiling: give pcie: genNxM (with mps:) or root: CAPTURE")
	case c.Bus == nil && busKey != nil:
		return nil, p.errorf(busKey.k, "ceiling: %s describes a PCIe link: give pcie: genNxM too", busKey.key)
	}
	if c.Host == "" {
		if len(pl.Sample) != 1 || pl.Host(pl.Sample[0]).Discovered() {
			return nil, p.errorf(f.k, "ceiling: say whose bus it is (host: NAME)")
		}
		c.Host = pl.Sample[0]
	}
	if portsField != nil {
		names, err := p.words(portsField.v, "ceiling: ports")
		if err != nil {
			return nil, err
		}
		h := pl.Host(c.Host)
		for _, n := range names {
			if !slices.ContainsFunc(h.Ports, func(pt Port) bool { return pt.Name == n }) {
				return nil, p.errorf(portsField.v, "ceiling: ports: %s has no port %s (give it under hosts: %s: ports:)", c.Host, n, c.Host)
			}
			if slices.Contains(c.Ports, n) {
				return nil, p.errorf(portsField.v, "ceiling: ports: %s given twice", n)
			}
			c.Ports = append(c.Ports, n)
		}
	}
	return c, nil
}

// Roles of a host in a plan, as its samples are labelled.
const (
	RoleClient = "client" // it sends a flow (the flow's from)
	RoleServer = "server" // it receives a flow (the flow's to)
	RoleDUT    = "dut"    // neither: the device under test in the middle
)

// Roles says what a host does in the plan: client, server (both for a
// host at either end of different flows), or dut for a sampled host that
// is neither; nil for a host that takes no part.
func (pl *Plan) Roles(name string) []string {
	var client, server bool
	for _, f := range pl.Flows {
		client = client || f.From == name
		server = server || f.To == name
	}
	var r []string
	if client {
		r = append(r, RoleClient)
	}
	if server {
		r = append(r, RoleServer)
	}
	if r == nil && slices.Contains(pl.Sample, name) {
		r = []string{RoleDUT}
	}
	return r
}

// Sampled says whether a host's counters are recorded: every end of a
// flow, and the hosts under sample.
func (pl *Plan) Sampled(name string) bool {
	return len(pl.Roles(name)) > 0
}
