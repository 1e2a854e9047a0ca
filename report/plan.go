//go:build !small

package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"linerate/ceiling"
	"linerate/internal/units"
	"linerate/plan"
	"linerate/remote"
	"linerate/wire"
)

// Plan prints a checked plan as it will run: its hosts and how each is
// reached, its flows, what each port and the whole plan can carry at line
// rate, and the ceiling with what it leaves.
func Plan(w io.Writer, pl *plan.Plan, e *plan.Expectation) error {
	ew := &ceilErrWriter{w: w}
	fmt.Fprintf(ew, "plan %s: %s, %s; %s of %s after a %s warmup\n\n", pl.File,
		plural(len(pl.Flows), "flow"), plural(len(pl.Hosts), "host"), plural(pl.Rounds, "round"), pl.Duration, pl.Warmup)
	if err := Expansions(ew, pl); err != nil {
		return err
	}

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tREACHED\tROLE\tPORTS")
	for _, h := range pl.Hosts {
		how := "agent at " + h.Reach.String()
		if h.Reach.Kind == remote.SSH {
			how = h.Reach.String() + ", serve --stdio"
			if h.Copy {
				how += ", copied there"
				if h.Binary != "" {
					how += " from " + h.Binary
				}
			}
		}
		roles := strings.Join(pl.Roles(h.Name), "+")
		var ports []string
		for _, pt := range h.Ports {
			s := pt.Name + " " + strings.Join(pt.Addresses, " ")
			if pt.SpeedBps > 0 {
				s += " " + units.Speed(pt.SpeedBps)
			}
			if pt.MTU != 1500 {
				s += fmt.Sprintf(" mtu %d", pt.MTU)
			}
			ports = append(ports, s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.Name, how, roles, strings.Join(ports, ", "))
	}
	tw.Flush()
	fmt.Fprintln(ew)

	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FLOW\tLINE\tFROM\tTO\tADDRESS\tPROTO\tDIRECTION\tFRAME\tSTREAMS\tTHREADS\tRATE")
	for i := range pl.Flows {
		f := &pl.Flows[i]
		frame := "?"
		if fr, err := f.Frame(); err == nil {
			frame = fmt.Sprintf("%d B, payload %d", fr.Bytes, fr.Payload)
		}
		if f.RR != nil {
			frame = fmt.Sprintf("%s %d,%d B", RRKind(wire.Spec{Proto: f.Proto, RR: f.RR}), f.RR.Request, f.RR.Response)
		}
		streams := fmt.Sprint(f.Streams)
		if f.Proto == wire.UDP && f.Ports > 1 {
			streams = fmt.Sprintf("%d × %d ports", f.Streams, f.Ports)
		}
		extra := ""
		if f.MSS > 0 {
			extra = fmt.Sprintf(" (mss %d)", f.MSS)
		}
		if f.Engine.BelowSocket() {
			extra = " (" + string(f.Engine) + ")"
		}
		rate := "as fast as possible"
		if !f.Rate.Unlimited() {
			rate = f.Rate.String()
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s%s\t%s\t%s\t%s\t%d\t%s\n", f.Index, f.Line, f.From, f.To, f.Address,
			f.Proto, extra, f.Direction, frame, streams, f.Threads, rate)
	}
	tw.Flush()
	fmt.Fprintln(ew)

	fmt.Fprintln(ew, "expected at line rate, per port (goodput, frames/s):")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tPORT\tSPEED\tIN\tOUT")
	for _, p := range e.Ports {
		port := strings.Join(p.Addresses, " ")
		if p.Port != "" {
			port = p.Port + " " + port
		}
		speed := "-"
		if p.SpeedBps > 0 {
			speed = units.Speed(p.SpeedBps)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Host, port, speed, oneWay(p.In), oneWay(p.Out))
	}
	fmt.Fprintf(tw, "total\t\t\t%s\t\n", oneWay(e.Total))
	tw.Flush()
	if !e.Total.Known {
		fmt.Fprintln(ew, "  (a port without a speed and a flow without a rate go as fast as the path allows: give the port's speed under hosts: NAME: ports:)")
	}

	if c := pl.Ceiling; c != nil {
		fmt.Fprintln(ew)
		src := ""
		if c.Root != "" {
			src = " (read from " + c.Root + ")"
		}
		b := e.Bus
		if b == nil {
			fmt.Fprintf(ew, "ceiling: %s's bus%s\n", c.Host, src)
			return ew.err
		}
		behind := "all its ports"
		if len(b.Ports) > 0 {
			behind = strings.Join(b.Ports, " ")
		}
		fmt.Fprintf(ew, "ceiling: %s's PCIe %s link at MPS %d%s, behind it %s\n", b.Host, linkName(b.Bus.Link), b.Bus.MPS, src, behind)
		switch {
		case !b.Expected.Known:
			fmt.Fprintf(ew, "  carries at most %s of this traffic (binding: %s)\n", units.Bps(b.CarriedBps), b.Binding)
		case b.Share >= 1:
			fmt.Fprintf(ew, "  carries all %s the links let through it (%s of what it could, binding: %s)\n",
				units.Bps(b.Expected.GoodputBps), units.Percent(1/b.Share, 0), b.Binding)
			fmt.Fprintf(ew, "  the plan can reach %s: its links limit it, not the bus\n", units.Bps(e.LimitedBps))
		default:
			fmt.Fprintf(ew, "  carries %s of the %s its ports' links let through (%s, binding: %s): the bus limits\n",
				units.Bps(b.CarriedBps), units.Bps(b.Expected.GoodputBps), units.Percent(b.Share, 0), b.Binding)
			fmt.Fprintf(ew, "  the plan can reach %s of the %s its links allow\n", units.Bps(e.LimitedBps), units.Bps(e.Total.GoodputBps))
		}
	}
	return ew.err
}

func linkName(l ceiling.Link) string { return fmt.Sprintf("gen%dx%d", l.Gen, l.Lanes) }

// oneWay prints one way of a port: "-" when nothing goes that way.
func oneWay(t plan.Traffic) string {
	switch {
	case !t.Known:
		return "as fast as the path allows"
	case t.PPS == 0:
		return "-"
	}
	return fmt.Sprintf("%s  %s/s", units.Bps(t.GoodputBps), units.Count(t.PPS))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
