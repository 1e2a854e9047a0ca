package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"linerate/ceiling"
	"linerate/internal/units"
)

// CeilingJSON writes a ceiling result (ceiling.Report or ceiling.Answer) as
// indented JSON.
func CeilingJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// CeilingBox prints the box-level ceiling: a table of NICs with their line
// rates, then each group of NICs sharing a PCIe link with that link's
// ceiling, warnings and notes, then the assumptions.
func CeilingBox(w io.Writer, r ceiling.Report) error {
	ew := &ceilErrWriter{w: w}
	title := "ceiling"
	if r.Host != "" {
		title += " of " + r.Host
	}
	if r.Source != "" {
		title += " (" + r.Source + ")"
	}
	fmt.Fprintln(ew, title)
	fmt.Fprintln(ew)
	if len(r.NICs) == 0 {
		fmt.Fprintln(ew, "no network interfaces")
	} else {
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NIC\tDRIVER\tLINE RATE\tFULL-SIZE FRAMES\t64-BYTE FRAMES\tPCIE")
		for _, n := range r.NICs {
			drv := n.Driver
			if drv == "" {
				drv = "-"
			}
			bus := n.NotPCIe
			if n.Group != "" {
				bus = "under " + n.Group
			}
			if n.SpeedBps == 0 {
				fmt.Fprintf(tw, "%s\t%s\tunknown\t\t\t%s\n", n.Name, drv, bus)
				continue
			}
			speed := units.Bps(float64(n.SpeedBps))
			if n.SpeedFrom != "link" {
				speed += " (" + n.SpeedFrom + ", no link)"
			}
			full := fmt.Sprintf("%d B: %s fps, %s goodput", n.Full.Frame.Bytes, units.Count(float64(n.Full.PPS)), units.Bps(n.Full.GoodputBps))
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s fps\t%s\n", n.Name, drv, speed, full, units.Count(float64(n.Small.PPS)), bus)
		}
		tw.Flush()
		for _, n := range r.NICs {
			if n.SpeedBps == 0 {
				fmt.Fprintf(ew, "%s: line rate unknown: %s\n", n.Name, n.Unknown)
			}
		}
	}
	for _, g := range r.Groups {
		fmt.Fprintln(ew)
		ceilGroup(ew, g)
	}
	if len(r.Assumptions) > 0 {
		fmt.Fprintln(ew)
		fmt.Fprintln(ew, "assumptions:")
		for _, a := range r.Assumptions {
			fmt.Fprintln(ew, "  - "+a)
		}
	}
	return ew.err
}

func ceilGroup(w io.Writer, g ceiling.Group) {
	fmt.Fprintf(w, "PCIe link under %s: %s\n", g.ID, strings.Join(g.NICs, ", "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if g.Link != nil {
		l := fmt.Sprintf("%s, %s", g.Bottleneck, g.Link)
		if g.MaxLink != nil {
			l += fmt.Sprintf("; both ends allow Gen%d x%d", g.MaxLink.Gen, g.MaxLink.Lanes)
		}
		fmt.Fprintf(tw, "  bottleneck\t%s\n", l)
	}
	if g.MPS > 0 || g.MRRS > 0 {
		fmt.Fprintf(tw, "  sizes\tMPS %s (%s supported along the path), MRRS %s\n", ceilSize(g.MPS), ceilSize(g.MPSSupported), ceilSize(g.MRRS))
	}
	if g.Full != nil && g.Small != nil {
		fmt.Fprintf(tw, "  capacity\t%s each way for packets\n", ceilBytesPerSec(g.Full.BytesPerSec))
		fmt.Fprintf(tw, "  \t%d-BYTE FRAMES\t64-BYTE FRAMES\n", g.Frame.Bytes)
		for i, f := range []ceiling.Figure{g.Full.Receive, g.Full.Transmit, g.Full.Forward} {
			s := []ceiling.Figure{g.Small.Receive, g.Small.Transmit, g.Small.Forward}[i]
			fmt.Fprintf(tw, "  %s\t%s fps = %s line, %s goodput\t%s fps = %s line\n", f.Pattern,
				units.Count(f.FPS), units.Bps(f.LineBps), units.Bps(f.GoodputBps),
				units.Count(s.FPS), units.Bps(s.LineBps))
		}
		if g.TCP != nil {
			fmt.Fprintf(tw, "  iperf TCP in\t%s goodput (%d-byte segments in, an ACK out for every 2)\n", units.Bps(g.TCP.GoodputBps), g.Frame.Bytes)
		}
	} else {
		fmt.Fprintf(tw, "  ceiling\tunknown: %s\n", g.Unknown)
	}
	if g.PortsBps > 0 {
		fmt.Fprintf(tw, "  ports\t%s together\n", units.Bps(float64(g.PortsBps)))
	} else {
		fmt.Fprintf(tw, "  ports\tline rates unknown\n")
	}
	tw.Flush()
	for _, m := range g.Warnings {
		fmt.Fprintln(w, "  WARNING: "+m)
	}
	for _, m := range g.Notes {
		fmt.Fprintln(w, "  note: "+m)
	}
}

// CeilingAnswer prints the figures of a ceiling.Query: line rates at a
// speed, a bus's ceiling with the cost of each frame on it, and the model
// held against measured figures.
func CeilingAnswer(w io.Writer, a ceiling.Answer) error {
	ew := &ceilErrWriter{w: w}
	if len(a.Rates) > 0 {
		fmt.Fprintf(ew, "Ethernet at %s: each frame also takes %d bytes of preamble, SFD and inter-frame gap on the wire\n",
			ceilSpeed(a.Query.SpeedBps), ceiling.WireExtraBytes)
		payloads := false
		for _, r := range a.Rates {
			if what := ceilFrameWhat(r.Frame); what != "" {
				fmt.Fprintf(ew, "%d-byte frame: %s\n", r.Frame.Bytes, what)
				payloads = true
			}
		}
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		head := "FRAME\tWIRE\tFRAMES/S\tL2"
		if payloads {
			head += "\tL3 (IP)\tGOODPUT"
		}
		fmt.Fprintln(tw, head+"\t")
		for _, r := range a.Rates {
			row := fmt.Sprintf("%d\t%d\t%s\t%s", r.Frame.Bytes, r.WireBytes, units.Count(float64(r.PPS)), units.Bps(r.L2Bps))
			if payloads {
				row += fmt.Sprintf("\t%s\t%s", ceilOrDash(r.L3Bps), ceilOrDash(r.GoodputBps))
			}
			fmt.Fprintln(tw, row+"\t")
		}
		tw.Flush()
	}
	if len(a.Bus) > 0 && a.Query.Bus != nil {
		if len(a.Rates) > 0 {
			fmt.Fprintln(ew)
		}
		b := *a.Query.Bus
		addr := "64-bit DMA addresses (4 DW headers)"
		if b.Addr32 {
			addr = "32-bit DMA addresses (3 DW headers)"
		}
		enc, _, _ := b.Link.Encoding()
		fmt.Fprintf(ew, "PCIe %s, MPS %d, MRRS %d, %s", b.Link, b.MPS, b.MRRS, addr)
		if b.ECRC {
			fmt.Fprint(ew, ", ECRC")
		}
		fmt.Fprintln(ew)
		fmt.Fprintf(ew, "%s each way after %s; %s for packets after SKP ordered sets\n",
			units.Bps(b.Link.RawBps()), enc, ceilBytesPerSec(b.BytesPerSec()))
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		head := "FRAME\tPATTERN\tFRAMES/S\tLINE RATE\tL2\tGOODPUT\tLIMIT"
		portHead := ""
		if len(a.Ports) > 0 {
			portHead = fmt.Sprintf("\t%s PORTS", units.Speed(a.Query.SpeedBps))
		}
		fmt.Fprintln(tw, head+portHead+"\t")
		for i, c := range a.Bus {
			for j, f := range []ceiling.Figure{c.Receive, c.Transmit, c.Forward} {
				frame := ""
				if j == 0 {
					frame = fmt.Sprint(c.Frame.Bytes)
				}
				row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", frame, f.Pattern, units.Count(f.FPS),
					units.Bps(f.LineBps), units.Bps(f.L2Bps), ceilOrDash(f.GoodputBps), f.Binding)
				if len(a.Ports) > i {
					switch f.Pattern {
					case string(ceiling.Receive):
						row += fmt.Sprintf("\t%.2f", a.Ports[i].Receive)
					case string(ceiling.Transmit):
						row += fmt.Sprintf("\t%.2f", a.Ports[i].Transmit)
					default:
						row += "\t"
					}
				}
				fmt.Fprintln(tw, row+"\t")
			}
		}
		tw.Flush()
		fmt.Fprintln(ew, "LINE RATE is the Ethernet speed those frames fill; LIMIT the link direction that runs out (up = device to RAM).")
		c := a.Bus[0]
		for _, f := range []ceiling.Figure{c.Receive, c.Transmit} {
			fmt.Fprintf(ew, "\nbytes on the link per %d-byte frame, %s:\n", c.Frame.Bytes, map[string]string{"receive": "received", "transmit": "sent"}[f.Pattern])
			ceilCosts(ew, f.Load)
		}
	}
	if a.TCP != nil {
		fmt.Fprintf(ew, "\niperf-style TCP stream into the box at MTU 1500 over this bus: %s goodput\n", units.Bps(a.TCP.GoodputBps))
	}
	if len(a.Calibration) > 0 {
		fmt.Fprintln(ew, "the model against measured figures:")
		for _, c := range a.Calibration {
			fmt.Fprintf(ew, "  %s: measured %s, model %s (%s)\n", c.Source, units.Bps(c.GoodputBps), units.Bps(c.ModelBps), units.SignedPercent(c.Error, 1))
		}
	}
	return ew.err
}

func ceilCosts(w io.Writer, l ceiling.Load) {
	width := len("total")
	for _, c := range l.Costs {
		width = max(width, len(c.What))
	}
	fmt.Fprintf(w, "  %-*s  %8s  %8s\n", width, "", "UP", "DOWN")
	for _, c := range l.Costs {
		fmt.Fprintf(w, "  %-*s  %8.1f  %8.1f\n", width, c.What, c.UpBytes, c.DownBytes)
	}
	fmt.Fprintf(w, "  %-*s  %8.1f  %8.1f\n", width, "total", l.UpBytes, l.DownBytes)
}

// ceilFrameWhat says what is in a frame built around a payload:
// "TCP/IPv4 payload 88 + 40 bytes of IP and TCP header + 14 Ethernet + 4 FCS".
func ceilFrameWhat(f ceiling.Frame) string {
	if f.Headers == nil {
		return ""
	}
	l2 := f.Bytes - f.L3Bytes - f.Pad - ceiling.FCSBytes
	s := fmt.Sprintf("%s payload %d + %d of IP and %s headers + %d Ethernet header", f.Headers, f.Payload,
		f.L3Bytes-f.Payload, strings.ToUpper(string(f.Headers.Proto)), l2)
	if f.Pad > 0 {
		s += fmt.Sprintf(" + %d padding", f.Pad)
	}
	return s + fmt.Sprintf(" + %d FCS", ceiling.FCSBytes)
}

// ceilSpeed prints a link speed: "1 Gb/s", "2.5 Gb/s", "100 Mb/s".
func ceilSpeed(bps int64) string {
	s := units.Speed(bps)
	if n := len(s); n > 0 && s[n-1] >= 'A' && s[n-1] <= 'Z' {
		return s[:n-1] + " " + s[n-1:] + "b/s"
	}
	return s + " b/s"
}

func ceilOrDash(bps float64) string {
	if bps <= 0 {
		return "-"
	}
	return units.Bps(bps)
}

func ceilSize(n int) string {
	if n <= 0 {
		return "unknown"
	}
	return fmt.Sprint(n)
}

func ceilBytesPerSec(v float64) string {
	return fmt.Sprintf("%.1f MB/s", v/1e6)
}

// ceilErrWriter keeps the first write error so the printers can write
// freely and report it once.
type ceilErrWriter struct {
	w   io.Writer
	err error
}

func (e *ceilErrWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
