package fleet

import (
	"io"

	"linerate/internal/usage"
	"linerate/remote"
)

// Pair is one sender of a run of third-party flows (bench --from) and the
// targets its flow goes to.
type Pair struct {
	From remote.Host
	To   []string
}

// PairFlows pairs senders with targets: the i-th sender with the i-th
// target, one sender with every target (fan-out), or every sender with
// one target (fan-in). A sender is a host spec (remote.Parse); a target
// must be an agent the sender can reach, never one started over ssh,
// which serves only the controller that started it. Bad input is a
// usage.FieldError on From or To.
func PairFlows(from, to []string) ([]Pair, error) {
	hosts := make([]remote.Host, len(from))
	for i, f := range from {
		h, err := remote.Parse(f)
		if err != nil {
			return nil, usage.Field("From", "%q: %w", f, err)
		}
		hosts[i] = h
	}
	for _, t := range to {
		if h, err := remote.Parse(t); err == nil && h.Kind == remote.SSH {
			return nil, usage.Field("To", "%q: a flow's target must be an agent the sender can reach (HOST[:PORT] running 'linerate serve'); an agent started over ssh serves only its controller", t)
		}
	}
	switch {
	case len(from) == len(to):
		out := make([]Pair, len(from))
		for i := range from {
			out[i] = Pair{From: hosts[i], To: to[i : i+1]}
		}
		return out, nil
	case len(from) == 1:
		return []Pair{{From: hosts[0], To: to}}, nil
	case len(to) == 1:
		out := make([]Pair, len(from))
		for i := range from {
			out[i] = Pair{From: hosts[i], To: to}
		}
		return out, nil
	}
	return nil, usage.Field("To", "gives %d targets for %d senders: give as many of each (the i-th sender sends to the i-th target), one sender with several targets, or several senders with one target", len(to), len(from))
}

// ParseSample is the hosts in the middle to sample, from their specs
// (agents, HOST[:PORT], or ssh://), each named by its address; their ssh
// clients write to stderr. A bad spec is a usage.FieldError on Sample.
func ParseSample(specs []string, stderr io.Writer) ([]Host, error) {
	var hosts []Host
	for _, spec := range specs {
		h, err := remote.Parse(spec)
		if err != nil {
			return nil, usage.Field("Sample", "%q: %w", spec, err)
		}
		hosts = append(hosts, Host{Name: h.String(), Reach: h, Options: remote.Options{Stderr: stderr}})
	}
	return hosts, nil
}
