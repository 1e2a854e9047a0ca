package live

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"linerate/internal/units"
)

// TextOptions shape the text view.
type TextOptions struct {
	// Terminal redraws in place: the cursor goes home first, each line
	// clears what was left of the one before, and the rest of the screen
	// is cleared at the end. Otherwise one block follows the other,
	// separated by a blank line.
	Terminal bool
	// MaxIRQs limits the interrupt rows (the busiest are kept); 0: all.
	MaxIRQs int
	// Web is the live page's address, shown in the title when set.
	Web string
}

// perCPUColumns is the most CPUs the interrupt table shows one column
// each; beyond it shows the total and the busiest CPU.
const perCPUColumns = 16

// WriteText writes s as tables: CPUs, interfaces, interrupts, and the
// bench's last second if one runs.
func WriteText(w io.Writer, s Snapshot, o TextOptions) error {
	b := bufio.NewWriter(w)
	eol := "\n"
	if o.Terminal {
		b.WriteString("\x1b[H")
		eol = "\x1b[K\n"
	}
	line := func(format string, a ...any) { fmt.Fprintf(b, format, a...); b.WriteString(eol) }

	clock := "15:04:05"
	if s.Seconds < 0.995 {
		clock = "15:04:05.0"
	}
	web := ""
	if o.Web != "" {
		web = "  live page " + o.Web
	}
	line("linerate watch  %s  interval %.2fs%s", s.Time.Format(clock), s.Seconds, web)
	if bn := s.Bench; bn != nil {
		phase := ""
		if bn.Warmup {
			phase = " (warmup)"
		}
		// A side no report measured is unknown, never a 0 (results.IntervalStats).
		side := func(pps, bps float64, unknown bool) string {
			if unknown {
				return "? pps ? bit/s"
			}
			return si(pps) + " pps " + si(bps) + " bit/s"
		}
		line("bench %4.0fs%s  sent %s  received %s", bn.T, phase,
			side(bn.SentPPS, bn.SentBPS, bn.SentUnknown), side(bn.ReceivedPPS, bn.ReceivedBPS, bn.ReceivedUnknown))
	}
	line("")
	line("%-5s %6s %6s %6s %6s %6s %8s %8s %8s %8s %8s %9s", "CPU", "usr%", "sys%", "irq%", "soft%", "busy%",
		"intr/s", "NET_RX/s", "NET_TX/s", "pkts/s", "drop/s", "squeeze/s")
	var all CPU
	for _, c := range s.CPUs {
		line("%-5d %6.1f %6.1f %6.1f %6.1f %6.1f %8s %8s %8s %8s %8s %9s", c.ID, c.User, c.System, c.IRQ, c.SoftIRQ, c.Busy,
			si(c.Interrupts), si(c.NetRX), si(c.NetTX), si(c.Processed), si(c.Dropped), si(c.TimeSqueeze))
		all.User += c.User
		all.System += c.System
		all.IRQ += c.IRQ
		all.SoftIRQ += c.SoftIRQ
		all.Busy += c.Busy
		all.Interrupts += c.Interrupts
		all.NetRX += c.NetRX
		all.NetTX += c.NetTX
		all.Processed += c.Processed
		all.Dropped += c.Dropped
		all.TimeSqueeze += c.TimeSqueeze
	}
	if n := float64(len(s.CPUs)); n > 1 {
		line("%-5s %6.1f %6.1f %6.1f %6.1f %6.1f %8s %8s %8s %8s %8s %9s", "all", all.User/n, all.System/n, all.IRQ/n, all.SoftIRQ/n, all.Busy/n,
			si(all.Interrupts), si(all.NetRX), si(all.NetTX), si(all.Processed), si(all.Dropped), si(all.TimeSqueeze))
	}

	line("")
	width := 9
	for _, i := range s.Ifaces {
		width = max(width, len(i.Name))
	}
	line("%-*s %9s %9s %9s %9s %9s %9s %9s", width, "IFACE", "rx bit/s", "tx bit/s", "rx pps", "tx pps", "rx drop/s", "tx drop/s", "errors/s")
	if len(s.Ifaces) == 0 {
		line("(no interface)")
	}
	for _, i := range s.Ifaces {
		line("%-*s %9s %9s %9s %9s %9s %9s %9s", width, i.Name, si(i.RxBps), si(i.TxBps), si(i.RxPps), si(i.TxPps),
			si(i.RxDrops), si(i.TxDrops), si(i.RxErrors+i.TxErrors))
	}

	line("")
	irqs := s.IRQs
	if o.MaxIRQs > 0 && len(irqs) > o.MaxIRQs {
		irqs = busiest(irqs, o.MaxIRQs)
	}
	name, ifw := 16, 9
	for _, q := range irqs {
		name = max(name, min(len(q.Name), 28))
		ifw = max(ifw, len(q.Iface))
	}
	var h strings.Builder
	fmt.Fprintf(&h, "%-5s %-*s %-*s", "IRQ", name, "NAME", ifw, "IFACE")
	wide := len(s.CPUs) <= perCPUColumns
	if wide {
		for _, c := range s.CPUs {
			fmt.Fprintf(&h, " %7s", fmt.Sprintf("CPU%d", c.ID))
		}
	} else {
		fmt.Fprintf(&h, " %-8s", "busiest")
	}
	fmt.Fprintf(&h, " %8s", "total/s")
	line("%s", h.String())
	if len(irqs) == 0 {
		line("(no interrupt fired)")
	}
	for _, q := range irqs {
		var r strings.Builder
		qn := q.Name
		if len(qn) > name {
			qn = qn[:name]
		}
		fmt.Fprintf(&r, "%-5s %-*s %-*s", q.IRQ, name, qn, ifw, q.Iface)
		if wide {
			for i := range s.CPUs {
				v := 0.0
				if i < len(q.PerCPU) {
					v = q.PerCPU[i]
				}
				fmt.Fprintf(&r, " %7s", si(v))
			}
		} else {
			top := 0
			for i, v := range q.PerCPU {
				if v > q.PerCPU[top] {
					top = i
				}
			}
			id := top
			if top < len(s.CPUs) {
				id = s.CPUs[top].ID
			}
			fmt.Fprintf(&r, " %-8s", fmt.Sprintf("CPU%d", id))
		}
		fmt.Fprintf(&r, " %8s", si(q.Total))
		line("%s", r.String())
	}
	if len(irqs) < len(s.IRQs) {
		line("(%d more interrupts)", len(s.IRQs)-len(irqs))
	}
	if o.Terminal {
		b.WriteString("\x1b[J")
	} else {
		b.WriteString("\n")
	}
	return b.Flush()
}

// busiest keeps the n interrupts with the highest totals, in their order.
func busiest(irqs []IRQ, n int) []IRQ {
	keep := make([]bool, len(irqs))
	for range n {
		best := -1
		for i, q := range irqs {
			if !keep[i] && (best < 0 || q.Total > irqs[best].Total) {
				best = i
			}
		}
		keep[best] = true
	}
	out := make([]IRQ, 0, n)
	for i, q := range irqs {
		if keep[i] {
			out = append(out, q)
		}
	}
	return out
}

// si writes a figure in at most 6 characters: 950, 12.3k, 1.23M, 9.41G.
var si = units.Short.Format
