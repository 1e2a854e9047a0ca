package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"linerate/box"
	"linerate/ceiling"
	"linerate/internal/units"
	"linerate/internal/usage"
	"linerate/report"
	"linerate/source"
)

// ceilingOptions are the flags of ceiling.
type ceilingOptions struct {
	speed      string
	frame      int
	payload    int
	proto      string
	ipv6       bool
	timestamps bool
	vlan       bool
	mtu        int
	pcie       string
	mps        int
	mrrs       int
	addr32     bool
	ecrc       bool
	root       string
	json       bool
}

func newCeilingCmd() *cobra.Command {
	o := &ceilingOptions{}
	c := &cobra.Command{
		Use:   "ceiling",
		Short: "Work out the most a link or a PCIe bus can carry: frames/s, goodput, bus limits",
		Long: `ceiling does the arithmetic of line rate and PCIe bandwidth.

With no flags (or --root CAPTURE) it reports on the whole box: each NIC's
line rate, the NICs that share a PCIe link, what that link carries after
encoding, TLP, DLLP and DMA overheads, and a warning when the ports
together can outrun it (a Compute Module 4 with four 1 Gb/s ports behind
one Gen2 x1 link tops out near 3 Gb/s).

With --speed it gives frames per second, L2/L3 rates and goodput for a
frame (--frame), a TCP or UDP payload (--payload, --proto, --ipv6), or
full-size frames for an MTU (--mtu); without those, for the standard frame
sizes 64 to 9018. Each frame costs 20 bytes more on the wire: preamble 7,
SFD 1, inter-frame gap 12.

With --pcie it models a PCIe link: 8b/10b or 128b/130b encoding, SKP
ordered sets, 8 bytes of framing, sequence number and LCRC around every
TLP, 3 or 4 DW headers, Ack and UpdateFC DLLPs, and the NIC's descriptor
traffic (modelled on Intel's igb). It assumes DMA uses 64-bit addresses
(4 DW headers; the CM4's PCIe window puts all of RAM above 4 GB) unless
--addr32 says otherwise.`,
		Example: `  linerate ceiling                                  # this box: NICs, shared PCIe links, warnings
  linerate ceiling --root cm4.tar.gz --json         # the same for a capture, as JSON
  linerate ceiling --speed 1G --frame 64            # 1,488,095 frames/s
  linerate ceiling --speed 1G --payload 88 --proto tcp   # 146-byte frames: 753,012 frames/s
  linerate ceiling --speed 10G --mtu 9000           # jumbo frames
  linerate ceiling --speed 2.5G                     # every standard frame size
  linerate ceiling --pcie gen2x1 --mps 128          # the CM4's bus: about 3 Gb/s
  linerate ceiling --pcie gen2x1 --mps 512 --speed 1G   # after pci=pcie_bus_perf; how many 1G ports fit`,
		Args: argsWith(cobra.NoArgs),
		RunE: o.run,
	}
	f := c.Flags()
	f.StringVar(&o.speed, "speed", "", "Ethernet link speed: 100M, 1G, 2.5G, 10G, 25G or bits per second (default 1G when a frame is given)")
	f.IntVar(&o.frame, "frame", 0, "frame size in bytes, destination MAC through FCS (64 to 65557)")
	f.IntVar(&o.payload, "payload", 0, "L4 payload in bytes (the TCP MSS or UDP datagram); the frame is built around it")
	f.StringVar(&o.proto, "proto", "tcp", "L4 protocol of --payload or --mtu: tcp or udp")
	f.BoolVar(&o.ipv6, "ipv6", false, "carry --payload or --mtu over IPv6 (40-byte header) instead of IPv4 (20)")
	f.BoolVar(&o.timestamps, "timestamps", false, "add the 12-byte TCP timestamps option (Linux sends it by default)")
	f.BoolVar(&o.vlan, "vlan", false, "add a 4-byte 802.1Q VLAN tag to --payload or --mtu frames")
	f.IntVar(&o.mtu, "mtu", 0, "use full-size frames for this MTU (1500, 9000, ...)")
	f.StringVar(&o.pcie, "pcie", "", "model a PCIe link: genNxM, e.g. gen2x1 (the CM4), gen3x4")
	f.IntVar(&o.mps, "mps", 128, "Max Payload Size of the --pcie link in bytes: 128, 256, 512, 1024, 2048 or 4096")
	f.IntVar(&o.mrrs, "mrrs", ceiling.DefaultMRRS, "Max Read Request Size of the NIC on the --pcie link in bytes: 128 to 4096")
	f.BoolVar(&o.addr32, "addr32", false, "DMA addresses below 4 GB on the --pcie link: 3 DW TLP headers instead of 4")
	f.BoolVar(&o.ecrc, "ecrc", false, "add the optional 4-byte ECRC to every TLP on the --pcie link")
	f.StringVar(&o.root, "root", "", "report on a capture (directory or .tar.gz made by 'linerate capture') instead of this machine")
	f.BoolVar(&o.json, "json", false, "print the figures as JSON")
	c.Long += ceilingCalibrationHelp()
	return c
}

// ceilingCalibrationHelp lists the bus model beside the measured figures
// it is held against, for --help.
func ceilingCalibrationHelp() string {
	cal, err := ceiling.Calibrate()
	if err != nil || len(cal) == 0 {
		return ""
	}
	s := "\n\nThe bus model against measured figures (an iperf TCP stream into the box):"
	for _, c := range cal {
		s += fmt.Sprintf("\n  %s: measured %s, model %s (%s)",
			c.Source, units.Bps(c.GoodputBps), units.Bps(c.ModelBps), units.SignedPercent(c.Error, 1))
	}
	return s
}

// ceilingCalcFlags are the flags that ask for arithmetic rather than a
// report on a box.
var ceilingCalcFlags = []string{"speed", "frame", "payload", "proto", "ipv6", "timestamps", "vlan", "mtu", "pcie", "mps", "mrrs", "addr32", "ecrc"}

func (o *ceilingOptions) run(cmd *cobra.Command, _ []string) error {
	fs := cmd.Flags()
	var calc []string
	for _, n := range ceilingCalcFlags {
		if fs.Changed(n) {
			calc = append(calc, "--"+n)
		}
	}
	out := cmd.OutOrStdout()
	if len(calc) == 0 {
		return o.box(cmd)
	}
	if o.root != "" {
		return usage.Errorf("--root reports on a captured box; it does not combine with %s", calc[0])
	}
	q, err := o.query(cmd)
	if err != nil {
		return err
	}
	a, err := ceiling.Ask(q)
	if err != nil {
		return usage.Wrap(err)
	}
	if o.json {
		return report.CeilingJSON(out, a)
	}
	return report.CeilingAnswer(out, a)
}

// query turns the flags into a ceiling.Query.
func (o *ceilingOptions) query(cmd *cobra.Command) (ceiling.Query, error) {
	fs := cmd.Flags()
	var q ceiling.Query
	given := 0
	for _, n := range []string{"frame", "payload", "mtu"} {
		if fs.Changed(n) {
			given++
		}
	}
	if given > 1 {
		return q, usage.Errorf("--frame, --payload and --mtu each set the frame: give one of them")
	}
	if !fs.Changed("payload") && !fs.Changed("mtu") {
		for _, n := range []string{"proto", "ipv6", "timestamps", "vlan"} {
			if fs.Changed(n) {
				return q, usage.Errorf("--%s describes the headers around --payload or --mtu: give one of those too", n)
			}
		}
	}
	if o.pcie == "" {
		for _, n := range []string{"mps", "mrrs", "addr32", "ecrc"} {
			if fs.Changed(n) {
				return q, usage.Errorf("--%s describes a PCIe link: give --pcie genNxM too", n)
			}
		}
	}
	f, err := o.queryFrame(fs)
	if err != nil {
		return q, err
	}
	if given == 1 {
		q.Frames = []ceiling.Frame{f}
	}
	switch {
	case fs.Changed("speed"):
		s, err := ceiling.ParseSpeed(o.speed)
		if err != nil {
			return q, usage.Errorf("--speed: %w", err)
		}
		q.SpeedBps = s
	case o.pcie == "":
		q.SpeedBps = 1e9
	}
	if o.pcie != "" {
		l, err := ceiling.ParseLink(o.pcie)
		if err != nil {
			return q, usage.Errorf("--pcie: %w", err)
		}
		if err := ceiling.ValidateSize(o.mps); err != nil {
			return q, usage.Errorf("--mps %d: %w", o.mps, err)
		}
		if err := ceiling.ValidateSize(o.mrrs); err != nil {
			return q, usage.Errorf("--mrrs %d: %w", o.mrrs, err)
		}
		q.Bus = &ceiling.Bus{Link: l, MPS: o.mps, MRRS: o.mrrs, Addr32: o.addr32, ECRC: o.ecrc}
	}
	return q, nil
}

// queryFrame is the frame --frame, --payload or --mtu describe (the zero Frame
// when none is given), with the headers --proto, --ipv6, --timestamps and
// --vlan put around a payload.
func (o *ceilingOptions) queryFrame(fs *pflag.FlagSet) (ceiling.Frame, error) {
	h := ceiling.Headers{IPv6: o.ipv6, TCPTimestamps: o.timestamps, VLAN: o.vlan}
	if fs.Changed("payload") || fs.Changed("mtu") {
		p, err := ceiling.ParseProto(o.proto)
		if err != nil {
			return ceiling.Frame{}, usage.Errorf("--proto: %w", err)
		}
		if p != ceiling.TCP && o.timestamps {
			return ceiling.Frame{}, usage.Errorf("--timestamps adds a TCP option; it does not apply to --proto %s", p)
		}
		h.Proto = p
	}
	var (
		f   ceiling.Frame
		err error
	)
	switch {
	case fs.Changed("frame"):
		if f, err = ceiling.RawFrame(o.frame); err != nil {
			return f, usage.Errorf("--frame: %w", err)
		}
	case fs.Changed("payload"):
		if f, err = ceiling.PayloadFrame(o.payload, h); err != nil {
			return f, usage.Errorf("--payload: %w", err)
		}
	case fs.Changed("mtu"):
		if f, err = ceiling.MTUFrame(o.mtu, h); err != nil {
			return f, usage.Errorf("--mtu: %w", err)
		}
	}
	return f, nil
}

// box reports on the live box or the capture --root names.
func (o *ceilingOptions) box(cmd *cobra.Command) error {
	var (
		src source.Source
		err error
	)
	if o.root != "" {
		src, err = source.OpenCaptureContext(cmd.Context(), o.root)
	} else {
		src, err = source.NewLive()
	}
	if err != nil {
		return err
	}
	defer src.Close()
	b, err := box.Collect(cmd.Context(), src)
	if err != nil {
		return sourceErr(src, o.root, err)
	}
	r := ceiling.ForBox(b)
	if o.json {
		return report.CeilingJSON(cmd.OutOrStdout(), r)
	}
	if err := report.CeilingBox(cmd.OutOrStdout(), r); err != nil {
		return fmt.Errorf("write ceiling report: %w", err)
	}
	return nil
}
