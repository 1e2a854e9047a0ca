package main

import (
	"cmp"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"linerate/box"
	"linerate/internal/usage"
	"linerate/source"
)

// captureOptions are the flags of capture.
type captureOptions struct {
	out      string
	samples  int
	interval time.Duration
	netns    string
	render   bool
}

func newCaptureCmd() *cobra.Command {
	o := &captureOptions{}
	c := &cobra.Command{
		Use:   "capture [IFACE...]",
		Short: "Save everything inspect reads from this box, to inspect or diagnose elsewhere",
		Long: `capture copies the /proc and /sys files linerate reads, the output of the
ethtool commands for each interface, the PCI config space of every device on
each NIC's PCIe path and, with --samples, timed snapshots of the counters,
into a .tar.gz (or a directory). 'linerate inspect --root FILE' then shows
the same box on any machine. The format is in docs/capture.md.

The ethtool text is what the ethtool command prints; when it is not
installed (or with --render), linerate prints the same text itself.`,
		Example: `  linerate capture                          # linerate-capture-HOST-TIME.tar.gz
  linerate capture -o routerpi.tar.gz --samples 10 --interval 1s
  linerate capture -o ./box-dir eth1        # a directory, one interface
  linerate capture --netns lab-r1 -o r1.tar.gz`,
		Args: cobra.ArbitraryArgs,
		RunE: o.run,
	}
	f := c.Flags()
	f.StringVarP(&o.out, "output", "o", "", "where to write: FILE.tar.gz, or a directory (default linerate-capture-HOST-TIME.tar.gz)")
	f.IntVar(&o.samples, "samples", 0, "timed snapshots of the counters to add (0 for none)")
	f.DurationVar(&o.interval, "interval", time.Second, "time between samples")
	f.StringVar(&o.netns, "netns", "", "capture inside the named network namespace (/var/run/netns/NAME)")
	f.BoolVar(&o.render, "render", false, "print the ethtool and ip text with linerate even when the commands are installed")
	return c
}

func (o *captureOptions) run(cmd *cobra.Command, args []string) error {
	if o.samples < 0 {
		return usage.Errorf("--samples %d: want 0 or more", o.samples)
	}
	if o.samples > 1 && o.interval <= 0 {
		return usage.Errorf("--interval %s: want a positive duration", o.interval)
	}
	src, err := inspectSource(cmd.Context(), "", o.netns)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := source.CheckIfaces(src, args); err != nil {
		return err
	}
	out := cmp.Or(o.out, source.CaptureName(src.Meta()))
	opts := source.CaptureOptions{
		Samples: o.samples, Interval: o.interval, Ifaces: args,
		Progress: cmd.ErrOrStderr(), Sysctls: box.Sysctls,
	}
	if o.render {
		opts.EthtoolCmd, opts.IPCmd = "-", "-"
	}
	if err := source.WriteCaptureFile(cmd.Context(), src, out, opts); err != nil {
		return usage.Flags(err, map[string]string{"Path": "-o"})
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", out)
	return nil
}
