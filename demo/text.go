package demo

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"linerate/autotune"
	"linerate/box"
	"linerate/ceiling"
	"linerate/internal/units"
	"linerate/report"
	"linerate/results"
)

// cpusPerRow is how many CPUs one row of the CPU table holds; bigger
// machines get several tables.
const cpusPerRow = 8

// arrow is the path of a flow: "lan→wan".
func (f Flow) arrow() string { return f.From + "→" + f.To }

// share prints a share of the ceiling: "99.8 %".
func share(v float64) string { return units.Percent(v, 1) }

func pps(v float64) string { return units.Count(v) + " pps" }

// mbps prints bits per second in Mb/s with one decimal, for table columns.
func mbps(v float64) string { return fmt.Sprintf("%.1f", v/1e6) }

// flowLine is one direction of an outcome, for the progress lines.
func flowLine(f Flow, speedBps int64) string {
	s := fmt.Sprintf("%s  %s  %s", f.arrow(), units.Bps(f.Bps), pps(f.PPS))
	if f.Ceiling != nil {
		s += fmt.Sprintf("  = %s of a %s port (%s, %s in %d-byte frames)", share(f.Share), units.Speed(speedBps),
			units.Bps(ceilingBps(f)), pps(float64(f.Ceiling.PPS)), f.Frame.Bytes)
	} else {
		s += fmt.Sprintf("  in %d-byte frames", f.Frame.Bytes)
	}
	if f.LossRatio > 0 {
		s += fmt.Sprintf(", %s lost", units.Percent(f.LossRatio, 2))
	}
	switch {
	case f.Retransmits == 1:
		s += ", 1 retransmit"
	case f.Retransmits > 1:
		s += fmt.Sprintf(", %d retransmits", f.Retransmits)
	}
	return s
}

// ceilingBps is the ceiling in the unit the measured figure has: TCP
// goodput, or UDP frames with their FCS.
func ceilingBps(f Flow) float64 {
	if f.Ceiling == nil {
		return 0
	}
	if f.Frame.Headers != nil && f.Frame.Headers.Proto == ceiling.TCP {
		return f.Ceiling.GoodputBps
	}
	return f.Ceiling.L2Bps
}

// cpuBrief is one CPU's use: "cpu0 100 % (usr 1 sys 34 softirq 64)".
func cpuBrief(c box.CPUUse) string {
	return fmt.Sprintf("cpu%d %s (usr %.0f sys %.0f softirq %.0f)", c.ID, units.Percent(c.Busy/100, 0), c.User, c.System, c.SoftIRQ)
}

// outcomeLines are the progress lines of a finished experiment.
func outcomeLines(o *Outcome, speedBps int64) []string {
	var lines []string
	for _, f := range o.Flows {
		lines = append(lines, flowLine(f, speedBps))
	}
	if len(o.CPU) > 0 {
		var parts []string
		for _, c := range o.CPU {
			parts = append(parts, cpuBrief(c))
		}
		for i := 0; i < len(parts); i += 4 {
			head := "      "
			if i == 0 {
				head = "CPU   "
			}
			lines = append(lines, head+strings.Join(parts[i:min(i+4, len(parts))], "  "))
		}
	}
	if o.LimitedBy != "" {
		l := "bench: limited by " + o.LimitedBy
		if o.LimitedWhy != "" {
			l += ": " + o.LimitedWhy
		}
		lines = append(lines, l)
	}
	if len(o.Errors) > 0 {
		lines = append(lines, "bench: "+errorsLine(o.Errors))
	}
	return lines
}

// WriteText writes the report as the tables the demo ends with: each
// experiment's figures beside the ceiling, then the CPU use per core.
func WriteText(w io.Writer, r *Report) error {
	if len(r.Outcomes) == 0 {
		_, err := fmt.Fprintln(w, "no experiment finished")
		return err
	}
	var b strings.Builder
	port := "uncapped links, no ceiling"
	ceilHead := "CEILING"
	if r.SpeedBps > 0 {
		port = fmt.Sprintf("links shaped like %s Ethernet ports", units.Speed(r.SpeedBps))
		ceilHead = units.Speed(r.SpeedBps) + " PORT"
	}
	fmt.Fprintf(&b, "\nlab %s: %s → %s (NAT) → %s, %s, %s measured per experiment\n\n",
		r.Lab, r.Client, r.Router, r.Server, port, trimSeconds(r.Duration))
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "EXPERIMENT\tPATH\tMb/s\tpps\t%s Mb/s\tpps\tSHARE\tFRAME\n", ceilHead)
	for _, o := range r.Outcomes {
		for i, f := range o.Flows {
			name := o.Experiment.Title
			if i > 0 {
				name = ""
			}
			ceilBps, ceilPPS, sh := "-", "-", "-"
			if f.Ceiling != nil {
				ceilBps, ceilPPS, sh = mbps(ceilingBps(f)), units.Count(float64(f.Ceiling.PPS)), share(f.Share)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d B\n", name, f.arrow(), mbps(f.Bps), units.Count(f.PPS),
				ceilBps, ceilPPS, sh, f.Frame.Bytes)
		}
	}
	tw.Flush()
	b.WriteString("Mb/s: TCP goodput, UDP Ethernet frames with FCS. pps: UDP datagrams received, TCP segments (goodput ÷ segment payload).\n")
	if r.Guest != "" {
		b.WriteString(strings.ToUpper(r.Guest[:1]) + r.Guest[1:] + ".\n")
	}
	if r.SpeedBps > 0 {
		fmt.Fprintf(&b, "%s: what a %s Ethernet port carries in the same frames (preamble, FCS and gap counted); SHARE: pps over that.\n",
			ceilHead, units.Speed(r.SpeedBps))
	}

	var ids []int
	for _, o := range r.Outcomes {
		for _, c := range o.CPU {
			if !slices.Contains(ids, c.ID) {
				ids = append(ids, c.ID)
			}
		}
	}
	slices.Sort(ids)
	switch {
	case len(ids) > 0 && r.Guest != "":
		fmt.Fprintf(&b, "\nCPU per core of %s, a guest of its own, while each ran, busy %% (usr/sys/softirq):\n"+
			"the router's forwarding alone (%s's and %s's agents run in namespaces of this machine).\n",
			r.Router, r.Client, r.Server)
	case len(ids) > 0:
		fmt.Fprintf(&b, "\nCPU per core while each ran, busy %% (usr/sys/softirq). %s, %s and %s are network namespaces\n"+
			"of this machine and share its %d CPUs: this is the sender, the router's forwarding and the receiver together.\n",
			r.Client, r.Router, r.Server, len(ids))
	}
	if len(ids) > 0 {
		for lo := 0; lo < len(ids); lo += cpusPerRow {
			row := ids[lo:min(lo+cpusPerRow, len(ids))]
			tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
			fmt.Fprint(tw, "EXPERIMENT")
			for _, id := range row {
				fmt.Fprintf(tw, "\tCPU%d", id)
			}
			fmt.Fprintln(tw)
			for _, o := range r.Outcomes {
				fmt.Fprint(tw, o.Experiment.Title)
				for _, id := range row {
					cell := "-"
					if i := slices.IndexFunc(o.CPU, func(c box.CPUUse) bool { return c.ID == id }); i >= 0 {
						c := o.CPU[i]
						cell = fmt.Sprintf("%.0f (%.0f/%.0f/%.0f)", c.Busy, c.User, c.System, c.SoftIRQ)
					}
					fmt.Fprint(tw, "\t"+cell)
				}
				fmt.Fprintln(tw)
			}
			tw.Flush()
		}
	}
	writeDiagnosis(&b, r.Diagnosis)
	writeTuning(&b, r.Tuning, r.Diagnosis)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDiagnosis writes the diagnose step's findings, briefly.
func writeDiagnosis(b *strings.Builder, d *Diagnosis) {
	if d == nil {
		return
	}
	fmt.Fprintf(b, "\ndiagnose: %s during a flood of %d-byte UDP packets %s → %s, sender and receiver on CPU%d, %s measured\n",
		d.DUT, d.FrameSize, clientNode, serverNode, d.CPU, trimSeconds(d.Duration))
	for _, l := range diagnosisLines(d) {
		fmt.Fprintf(b, "  %s\n", l)
	}
}

// writeTuning writes tune auto's before/after table: each change tried,
// the goal metric before and after it (medians), the change, whether it
// was kept and why; then the first baseline against the last, the flood
// after tuning against the diagnose step's (before), and what the demo
// undid.
func writeTuning(b *strings.Builder, t *Tuning, before *Diagnosis) {
	if t == nil {
		return
	}
	r := t.Auto
	switch {
	case r == nil:
		b.WriteString("\ntune auto: did not run\n")
		return
	case len(r.Baseline) == 0:
		b.WriteString("\ntune auto: stopped before its baseline was measured\n")
		writeUndo(b, t)
		return
	}
	each := ""
	if r.Spec != nil {
		each = " of " + r.Spec.Duration.D().String()
	}
	if m := report.AutoMethod(r); m != "" {
		fmt.Fprintf(b, "\ntune auto on %s: goal %s, rounds%s each; %s\n", r.DUT, r.Metric, each, m)
	} else {
		fmt.Fprintf(b, "\ntune auto on %s: goal %s, median of %d round%s%s each; a change is kept when it gains more than %s and more than the rounds' spread\n",
			r.DUT, r.Metric, r.Rounds, plural(r.Rounds), each, units.Percent(r.MinGain, 0))
	}
	if len(r.Trials) == 0 {
		b.WriteString("nothing was tried: no candidate this system can take\n")
	} else {
		report.Trials(b, r, triedFor)
	}
	for _, sk := range r.Skipped {
		fmt.Fprintf(b, "not tried: %s: %s\n", sk.Item, sk.Reason)
	}
	line := report.BeforeAfter(r)
	line += fmt.Sprintf(", loss %s → %s", autotune.MetricLoss.Format(r.Before.LossRatio), autotune.MetricLoss.Format(r.After.LossRatio))
	if results.LoadsDiffer(r.Before.SentPPS, r.After.SentPPS) {
		// The sender shares the router's CPUs: freed, it offers more.
		line += fmt.Sprintf(" at %s → %s offered (not the same load: the losses are not comparable)",
			units.Rate(r.Before.SentPPS, "pps"), units.Rate(r.After.SentPPS, "pps"))
	}
	bc, bok := r.Before.Value(autotune.MetricCPUPerMpkt)
	ac, aok := r.After.Value(autotune.MetricCPUPerMpkt)
	if bok && aok {
		line += fmt.Sprintf(", CPU %s → %s (the whole machine's, per million packets delivered)",
			autotune.MetricCPUPerMpkt.Format(bc), autotune.MetricCPUPerMpkt.Format(ac))
	}
	b.WriteString(line + "\n")
	if r.Interrupted {
		b.WriteString("interrupted: the change being tried was rolled back\n")
	}
	if t.After != nil {
		fmt.Fprintf(b, "the flood again after tuning, with what was kept: %s\n", afterLine(before, t.After))
	}
	writeUndo(b, t)
}

// writeUndo says what the demo undid at the end of the tune step.
func writeUndo(b *strings.Builder, t *Tuning) {
	restored := 0
	for _, res := range t.Restored {
		if res.Err == nil && res.Dropped == "" {
			restored++
		}
	}
	var what string
	switch {
	case t.Auto != nil && len(t.Auto.Kept()) == 0 && restored == 0:
		what = "nothing was kept"
	case restored == 1:
		what = "the demo rolled back the kept change at the end"
	default:
		what = fmt.Sprintf("the demo rolled back the %d kept changes at the end", restored)
	}
	if t.JournalRemoved {
		fmt.Fprintf(b, "%s: the router is as the demo found it, and its journal is empty and removed\n", what)
	} else {
		fmt.Fprintf(b, "%s; the journal could not be emptied (see the error)\n", what)
	}
}

// triedFor says why a change was tried: the seeds (the demo's one --try
// item) or the diagnose rule whose fix it is.
func triedFor(source string) string {
	switch {
	case source == "--try":
		return seedSource
	case strings.HasPrefix(source, "diagnose "):
		return strings.TrimPrefix(source, "diagnose ")
	}
	return source
}

// trimSeconds prints seconds as a duration: "5s", "1.5s".
func trimSeconds(s float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", s), "0"), ".") + "s"
}
