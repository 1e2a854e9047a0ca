package plan

import (
	"context"
	"fmt"
	"net"

	"go.yaml.in/yaml/v3"

	"linerate/remote"
)

// MaxHosts is how many hosts a plan may hold once the names it gives as
// dns:// or dns+srv:// are looked up (a file names at most maxHosts).
const MaxHosts = remote.MaxDiscovered

// Expansion is what a host given as dns://NAME or dns+srv://NAME stood for
// when the plan was run: the agents DNS gave, each a host of the plan.
type Expansion struct {
	// Host is the host's name in the plan, At its spec, Line where it is.
	Host    string   `json:"host"`
	At      string   `json:"at"`
	Line    int      `json:"line"`
	Members []Member `json:"members"`
}

// Member is one agent a dns:// or dns+srv:// host stood for.
type Member struct {
	// Name is its name in the plan that runs: HOST-N, N from 1 in the
	// order Discover gives.
	Name string `json:"name"`
	// At is where its agent is reached (ADDRESS:PORT).
	At string `json:"at"`
	// Target is the SRV target it was found as.
	Target string `json:"target,omitempty"`
}

// Discovered says whether h stands for the agents a DNS name gives
// (dns:// or dns+srv://) and is looked up before the plan runs.
func (h *Host) Discovered() bool {
	return h != nil && (h.Reach.Kind == remote.DNS || h.Reach.Kind == remote.SRV)
}

// discovered is the first host of the plan found through DNS, nil when
// there is none.
func (pl *Plan) discovered() *Host {
	for i := range pl.Hosts {
		if pl.Hosts[i].Discovered() {
			return &pl.Hosts[i]
		}
	}
	return nil
}

// Discovers says whether the plan names hosts through DNS: Discover then
// looks them up.
func (pl *Plan) Discovers() bool { return pl.discovered() != nil }

// discoveredHost refuses what a host found through DNS cannot have: an
// address or ports (each agent has its own) and a web: with a host (each
// agent serves its own; PORT and :PORT apply to each).
func (p *parser) discoveredHost(n *yaml.Node, what string, h *Host) error {
	switch {
	case h.Address != "" || len(h.Ports) > 0:
		return p.errorf(n, "%s: %s stands for many agents, each reached at its own address: no address or ports", what, h.Reach)
	case h.Web != "":
		if host, _, _ := net.SplitHostPort(h.Web); host != "" {
			return p.errorf(n, "%s: web %s: %s stands for many agents: give the port only (web: %s)", what, h.Web, h.Reach, h.Web[len(host)+1:])
		}
	}
	return nil
}

// Discover looks up the hosts the plan gives as dns:// or dns+srv://
// (remote.Discover, with r) and returns the plan with each replaced, in
// its place, by the agents it stands for, named HOST-1, HOST-2 ...: a
// flow from or to such a host becomes one flow per agent (every pair, but
// an agent to itself, when both ends are the same or such hosts), sharing
// its Index; sample: names every agent. Expansions says what each name
// gave. A plan that names no host through DNS is returned as it is.
//
// A name that gives no agent is an error naming the host and its line
// (wrapping remote.ErrNoRecords); a plan that grows past MaxHosts hosts or
// the flows a plan may hold, or whose flows the agents would refuse at an
// address DNS gave (an IPv6 one too small for a frame size), is an *Error.
func (pl *Plan) Discover(ctx context.Context, r remote.Resolver) (*Plan, error) {
	if !pl.Discovers() {
		return pl, nil
	}
	out := *pl
	out.Hosts, out.Flows, out.Sample = nil, nil, nil
	members := map[string][]string{}
	for _, h := range pl.Hosts {
		if !h.Discovered() {
			out.Hosts = append(out.Hosts, h)
			continue
		}
		found, err := remote.Discover(ctx, r, h.Reach)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: host %s: %w", pl.File, h.Line, h.Name, err)
		}
		if len(out.Hosts)+len(found) > MaxHosts {
			return nil, &Error{File: pl.File, Line: h.Line, Msg: fmt.Sprintf("host %s: %s gave %d agents: a plan holds at most %d hosts", h.Name, h.Reach, len(found), MaxHosts)}
		}
		exp := Expansion{Host: h.Name, At: h.Reach.String(), Line: h.Line}
		for i, f := range found {
			m := h
			m.Name, m.Reach = fmt.Sprintf("%s-%d", h.Name, i+1), f.Host
			exp.Members = append(exp.Members, Member{Name: m.Name, At: f.Host.String(), Target: f.Target})
			members[h.Name] = append(members[h.Name], m.Name)
			out.Hosts = append(out.Hosts, m)
		}
		out.Expansions = append(out.Expansions, exp)
	}
	seen := map[string]int{}
	for _, h := range out.Hosts {
		if line, ok := seen[h.Name]; ok {
			return nil, &Error{File: pl.File, Line: max(line, h.Line), Msg: fmt.Sprintf("host %s: named twice once DNS was asked (a host given as dns:// names its agents HOST-1, HOST-2 ...): rename one", h.Name)}
		}
		seen[h.Name] = h.Line
	}
	each := func(name string) []string {
		if m, ok := members[name]; ok {
			return m
		}
		return []string{name}
	}
	// Count before building: a group to a group is every pair.
	n := 0
	for _, f := range pl.Flows {
		from, to := each(f.From), each(f.To)
		n += len(from) * len(to)
		if f.From == f.To {
			n -= len(from)
		}
	}
	if n > maxFlows {
		return nil, &Error{File: pl.File, Msg: fmt.Sprintf("the hosts DNS gave make %d flows: a plan holds at most %d", n, maxFlows)}
	}
	out.Flows = make([]Flow, 0, n)
	for _, f := range pl.Flows {
		_, fromGroup := members[f.From]
		_, toGroup := members[f.To]
		if !fromGroup && !toGroup {
			out.Flows = append(out.Flows, f)
			continue
		}
		for _, a := range each(f.From) {
			for _, b := range each(f.To) {
				if a == b {
					continue
				}
				nf := f
				nf.From, nf.To, nf.Name = a, b, a+"-"+b
				if toGroup {
					nf.Address = out.Host(b).DataAddress()
				}
				if out.named(nf.Name) {
					nf.Name = fmt.Sprintf("%s.%d", nf.Name, nf.Index)
				}
				out.Flows = append(out.Flows, nf)
			}
		}
	}
	for _, s := range pl.Sample {
		out.Sample = append(out.Sample, each(s)...)
	}
	for i := range out.Flows {
		f := &out.Flows[i]
		sp := f.Spec(out.Duration, out.Warmup, f.IPv4())
		if err := sp.Check(); err != nil {
			return nil, &Error{File: pl.File, Line: f.Line, Msg: fmt.Sprintf("flow %d to %s (%s): %v", f.Index, f.To, f.Address, err)}
		}
	}
	return &out, nil
}
