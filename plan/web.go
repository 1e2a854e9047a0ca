package plan

import (
	"net"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// DefaultWebPort is the port a host's agent serves /metrics on (serve
// --web) when the plan names none: the one docs/watch.md uses.
const DefaultWebPort = 9464

// web reads a host's web: PORT, :PORT or HOST:PORT.
func (p *parser) web(n *yaml.Node, what string) (string, error) {
	s, err := p.scalar(n, what)
	if err != nil {
		return "", err
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host, port = "", s
	}
	if v, err := strconv.ParseUint(port, 10, 16); err != nil || v == 0 {
		return "", p.errorf(n, "%s %q: want PORT, :PORT or HOST:PORT where the agent serves --web (port 1-65535)", what, s)
	}
	if host != "" && !validHost(host) {
		return "", p.errorf(n, "%s %q: %q is not an IP address or a host name", what, s, host)
	}
	return net.JoinHostPort(host, port), nil
}

// WebAddr is where h's agent serves its live view and /metrics (serve
// --web): its web: key, the host in at: standing in for a missing host;
// without web:, the host in at: and DefaultWebPort.
func (h Host) WebAddr() string {
	host, port := h.Reach.Name, strconv.Itoa(DefaultWebPort)
	if h.Web != "" {
		hh, pp, _ := net.SplitHostPort(h.Web)
		if hh != "" {
			host = hh
		}
		port = pp
	}
	return net.JoinHostPort(host, port)
}

// TargetGroup is one group of a Prometheus file_sd target list.
type TargetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// PrometheusTargets lists every host's agent as a Prometheus scrape
// target (file_sd), labelled with the host's name in the plan
// (linerate_host).
func (pl *Plan) PrometheusTargets() []TargetGroup {
	groups := make([]TargetGroup, 0, len(pl.Hosts))
	for _, h := range pl.Hosts {
		groups = append(groups, TargetGroup{Targets: []string{h.WebAddr()}, Labels: map[string]string{"linerate_host": h.Name}})
	}
	return groups
}
