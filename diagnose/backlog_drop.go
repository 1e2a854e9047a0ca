package diagnose

import (
	"fmt"
	"strconv"
)

// backlogDrop: packets dropped because a CPU's input backlog was full
// (softnet_stat "dropped" rising) → raise netdev_max_backlog, spread with RPS.
type backlogDrop struct{}

func (backlogDrop) ID() string { return "backlog-drop" }
func (backlogDrop) Explain() string {
	return "softnet backlog drops: the per-CPU input queue overflows"
}

func (backlogDrop) Check(ev *Evidence) []Finding {
	m, ok := ev.Mean()
	if !ok {
		return nil
	}
	var ev2 []string
	var total float64
	for _, s := range m.Softnet {
		if s.Dropped > 0 {
			total += s.Dropped
			ev2 = append(ev2, fmt.Sprintf("CPU%d: %s dropped, %s processed", s.CPU, rate(s.Dropped), rate(s.Processed)))
		}
	}
	if total <= 0 {
		return nil
	}
	cur, _ := ev.Box.Sysctl("net.core.netdev_max_backlog")
	n, _ := strconv.Atoi(cur)
	want := 4096
	if n >= want {
		want = n * 2
	}
	ev2 = append(ev2, "net.core.netdev_max_backlog = "+cur)
	return []Finding{{
		Severity: Warning, Subject: "box",
		Summary:  fmt.Sprintf("%s packets dropped because a CPU's backlog queue was full", rate(total)),
		Evidence: ev2,
		Fixes: []Fix{{Kind: FixSysctl, Target: "net.core.netdev_max_backlog", Value: strconv.Itoa(want),
			Note: "a longer per-CPU backlog; if one CPU does all the work, RPS spreads it"}},
	}}
}
