// Package diagnose names the bottleneck of a box with evidence. Each rule
// lives in its own file, has a kebab-case ID, and turns Evidence (the model
// of the box, the per-second rates sampled while traffic ran, and what the
// load generator knew) into Findings: a severity, the counters that
// triggered it, a one-line explanation and the fixes that would help.
//
// Nothing here does I/O: the caller builds Evidence from a capture, a saved
// bench result or a live sampling run.
package diagnose

import (
	"fmt"
	"sort"
	"strings"

	"linerate/box"
	"linerate/internal/units"
	"linerate/results"
)

// Severity orders findings.
type Severity string

// Severities, from the least to the most urgent.
const (
	Info     Severity = "info"
	Warning  Severity = "warning"
	Critical Severity = "critical"
)

func (s Severity) rank() int {
	switch s {
	case Critical:
		return 2
	case Warning:
		return 1
	}
	return 0
}

// Finding is one thing a rule noticed.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// Subject is what the finding is about: "eth0", "cpu0", "irq 41",
	// "0000:01:00.0", "box".
	Subject string `json:"subject"`
	// Summary is the one-line explanation.
	Summary string `json:"summary"`
	// Evidence lists the counters and values that triggered the rule.
	Evidence []string `json:"evidence"`
	// Fixes are the tuning actions that would help, most useful first.
	Fixes []Fix `json:"fixes,omitempty"`
}

// Fix is a tuning action in words a tuner can act on. Kind says what is
// changed (one of FixKinds); Target names the object; Value is the new
// value.
//
//	Kind          Target                         Value
//	irq-affinity  "eth0/rx-0", "eth0/#0", "41"   CPU list "1" or "1-3"
//	rps           "eth1/rx-0"                    CPU list "1-3"
//	rps-flow      "eth1/rx-0"                    "4096" (rps_flow_cnt)
//	xps           "eth1/tx-0"                    CPU list
//	coalesce      "eth0"                         "rx-usecs=100,rx-frames=10"
//	rings         "eth0"                         "rx=4096" or "rx=max"
//	channels      "eth0"                         "combined=4"
//	rss-equal     "eth0"                         "2" (queues)
//	flow-hash     "eth0/udp4"                    "sdfn"
//	feature       "eth0/generic-receive-offload" "on"
//	mtu           "eth1"                         "9000"
//	sysctl        "net.core.rmem_max"            "8388608"
//	irqbalance    "box"                          "stop"
//	governor      "cpu0-3" / "all"               "performance"
//	boot          "cmdline.txt"                  "pci=pcie_bus_perf" (never applied, printed)
type Fix struct {
	Kind   FixKind `json:"kind"`
	Target string  `json:"target"`
	Value  string  `json:"value"`
	// Note says why, shown beside the change.
	Note string `json:"note,omitempty"`
}

func (f Fix) String() string {
	s := f.Kind.String() + " " + f.Target + " = " + f.Value
	if f.Note != "" {
		s += "  (" + f.Note + ")"
	}
	return s
}

// Load is what the load generator knew about a run, when there was one.
type Load struct {
	// AskedPPS is the rate asked for; 0 means "as fast as possible".
	AskedPPS    float64 `json:"asked_pps"`
	SentPPS     float64 `json:"sent_pps"`
	ReceivedPPS float64 `json:"received_pps"`
	LossRatio   float64 `json:"loss_ratio"`
	// SenderBusy is the busiest sender thread's CPU share, percent; 0 when
	// unknown.
	SenderBusy float64 `json:"sender_busy"`
	// SenderLimited is true when the run's verdict named the sender as its
	// limit (results.LimitSender), whatever SenderBusy says.
	SenderLimited bool `json:"sender_limited,omitempty"`
	// Local is true when the generator ran on the box being diagnosed.
	Local bool `json:"local"`
}

// Evidence is everything a rule may look at.
type Evidence struct {
	Box *box.Box
	// Rates are the per-second intervals sampled while traffic ran, oldest
	// first; empty when the box was only inspected.
	Rates []box.Rates
	Load  *Load
	// Drops are the drop counters over the same window (box.DropDelta);
	// nil when they were not read.
	Drops *box.Drops
	// Path is what is known of the far end and the path to it (its NIC's
	// largest MTU, what a DF probe carried); nil when nobody looked.
	Path *PathMTU
	// Host names the machine the evidence is of, when it is not this one
	// (a device in the middle sampled by its agent); "" otherwise.
	Host string
	// Soak is what a bench --soak saw of this box's heat; nil otherwise.
	Soak *results.Soak
	// Queues are what a test counted per receive queue of an interface
	// over its measured window (a bench result's rx_queues); empty when
	// it counted none.
	Queues []QueueCount

	// mean caches Mean for the rules of one Run.
	mean *box.Rates
}

// QueueCount is the packets each receive queue of an interface took over
// a test's window, and what counted them ("ethtool", "qstats", "link",
// "xdp": results.QueueStat's counters).
type QueueCount struct {
	Iface   string
	Counter string
	Packets []uint64
	Seconds float64
}

// Rule is one check.
type Rule interface {
	ID() string
	// Explain says in one line what the rule looks for.
	Explain() string
	Check(ev *Evidence) []Finding
}

// Rules is the catalog, in the order rules run.
func Rules() []Rule {
	return []Rule{
		irqSingleCPU{}, irqUnmovable{}, rpsOff{}, rssImbalance{},
		coalescingOff{}, ringOverflow{}, backlogDrop{}, budgetSqueeze{},
		socketBufferOverflow{}, pcieBottleneck{}, linkDegraded{},
		cpuThrottled{}, irqbalanceConflict{}, generatorLimited{},
		netfilterDrop{}, conntrackDrop{}, qdiscDrop{}, udpClosedPort{},
		nicUnbound{}, pciKernelLog{}, offloadOff{}, channelsUnused{}, xpsOff{}, piOverclock{},
		jumboFrames{}, soakThrottled{},
	}
}

// Run applies the rules (all, or only those whose IDs are given) and
// returns the findings, most severe first. An unknown ID is an error.
func Run(ev *Evidence, only ...string) ([]Finding, error) {
	rules := Rules()
	if len(only) > 0 {
		byID := map[string]Rule{}
		for _, r := range rules {
			byID[r.ID()] = r
		}
		rules = rules[:0]
		for _, id := range only {
			r, ok := byID[id]
			if !ok {
				return nil, fmt.Errorf("no rule %q (see `linerate diagnose --rules`)", id)
			}
			rules = append(rules, r)
		}
	}
	ev.mean = nil // Rates may have changed since the last Run
	var out []Finding
	for _, r := range rules {
		for _, f := range r.Check(ev) {
			f.Rule = r.ID()
			out = append(out, f)
		}
	}
	for i := range out {
		hostOnly(ev.Box, &out[i])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Severity.rank() > out[j].Severity.rank() })
	return out, nil
}

// hostOnly takes out of a finding made inside a network namespace the
// fixes that would change the host (an IRQ's affinity, a CPU governor, a
// sysctl the namespace has no copy of), and says so in its evidence: tune
// in the namespace would refuse them, and they belong to whoever tunes
// the host.
func hostOnly(b *box.Box, f *Finding) {
	if b == nil {
		return
	}
	ns, ok := strings.CutPrefix(b.Meta.Source, "live netns ")
	if !ok {
		return
	}
	hostWide := map[string]bool{}
	for _, s := range b.Sysctls {
		hostWide[s.Name] = s.HostWide
	}
	kept := f.Fixes[:0]
	for _, fx := range f.Fixes {
		why := ""
		switch {
		case fx.Kind == FixIRQAffinity:
			why = "IRQs are the host's"
		case fx.Kind == FixGovernor:
			why = "CPU governors are the host's"
		case fx.Kind == FixIRQBalance:
			why = "irqbalance is the host's service"
		case fx.Kind == FixSysctl && hostWide[fx.Target]:
			why = fx.Target + " is host-wide"
		}
		if why == "" {
			kept = append(kept, fx)
			continue
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("not proposed: %s:%s=%s (%s: set it on the host, not in netns %s)", fx.Kind, fx.Target, fx.Value, why, ns))
	}
	f.Fixes = kept
}

// Mean averages the rates over all intervals; ok is false when there are none.
func (ev *Evidence) Mean() (box.Rates, bool) {
	if len(ev.Rates) == 0 {
		return box.Rates{}, false
	}
	if ev.mean == nil {
		m := box.MeanRates(ev.Rates)
		ev.mean = &m
	}
	return *ev.mean, true
}

// cpuList prints CPU ids as "0-3,5".
func cpuList(ids []int) string {
	sort.Ints(ids)
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// pct formats a percentage.
func pct(v float64) string { return units.Percent(v/100, 0) }

// rate formats a per-second figure compactly: 81.0k/s, 1.20M/s.
func rate(v float64) string { return units.Fixed.Unit(v, "/s") }
