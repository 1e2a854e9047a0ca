package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	if len(args) > 0 {
		names, err := src.Sys().NetDevices()
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for _, n := range names {
			have[n] = true
		}
		for _, a := range args {
			if !have[a] {
				return usage.Errorf("no interface %s (have: %s)", a, strings.Join(names, ", "))
			}
		}
	}
	meta := src.Meta()
	out := o.out
	if out == "" {
		host := meta.Host
		if host == "" {
			host = "box"
		}
		out = fmt.Sprintf("linerate-capture-%s-%s.tar.gz", host, meta.Time.UTC().Format("20060102T150405Z"))
	}
	opts := source.CaptureOptions{
		Samples: o.samples, Interval: o.interval, Ifaces: args,
		Progress: cmd.ErrOrStderr(), Sysctls: box.Sysctls,
	}
	if o.render {
		opts.EthtoolCmd, opts.IPCmd = "-", "-"
	}

	tarball := strings.HasSuffix(out, ".tar.gz") || strings.HasSuffix(out, ".tgz")
	var sink source.Sink
	var file *os.File
	if tarball {
		file, err = os.Create(out)
		if err != nil {
			return usage.Errorf("-o %s: %w", out, unwrapPathErr(err))
		}
		top := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(out), ".tar.gz"), ".tgz")
		sink = source.TarSink(file, top)
	} else {
		sink, err = source.DirSink(out)
		if err != nil {
			return usage.Errorf("-o %s: %w", out, unwrapPathErr(err))
		}
	}
	werr := source.WriteCapture(cmd.Context(), src, sink, opts)
	cerr := sink.Close()
	if file != nil {
		if err := file.Close(); cerr == nil {
			cerr = err
		}
	}
	if werr != nil || cerr != nil {
		if tarball {
			os.Remove(out) // half a tarball is worse than none
		}
		if werr != nil {
			return fmt.Errorf("capture to %s: %w", out, werr)
		}
		return fmt.Errorf("capture to %s: %w", out, cerr)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", out)
	return nil
}

// unwrapPathErr keeps the reason of an *os.PathError, whose path the
// message already names.
func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
