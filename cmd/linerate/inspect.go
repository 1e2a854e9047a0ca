package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"linerate/box"
	"linerate/internal/usage"
	"linerate/report"
	"linerate/source"
)

// inspectOptions are the flags of inspect.
type inspectOptions struct {
	root  string
	netns string
	lab   string
	node  string
	json  bool
}

func newInspectCmd() *cobra.Command {
	o := &inspectOptions{}
	c := &cobra.Command{
		Use:   "inspect [IFACE...]",
		Short: "Show the NICs, queues, IRQs, PCIe path, CPUs and sysctls that bound throughput",
		Long: `inspect reads everything that decides how fast this box can move packets and
prints it per NIC: driver and firmware, link, MTU, channels, rings, interrupt
coalescing, offloads, the RSS table and hash, rx-flow-hash fields, every
queue with its RPS/XPS CPUs and packet counters, the IRQs with their
affinity and per-CPU counts, and the PCIe path up to the root port with link
speed, width, Max Payload Size and Max Read Request Size. Then the box: CPU
frequencies, temperatures, Raspberry Pi throttling, irqbalance and the
network sysctls.

It reads the live machine, a network namespace (--netns) or a capture made
by 'linerate capture' (--root). Anything that cannot be read says
"unsupported: <why>" or "unknown: <why>". --json prints the model with the
schema documented in docs/inspect-json.md.`,
		Example: `  linerate inspect                        # every interface of this machine
  linerate inspect eth1 eth2              # only these
  linerate inspect --json > box.json      # the model, for scripts
  linerate inspect --root box.tar.gz      # a capture made elsewhere
  linerate inspect --netns lab-r1         # inside a network namespace
  linerate inspect --lab demo --node router  # a node of a running lab`,
		Args: cobra.ArbitraryArgs,
		RunE: o.run,
	}
	f := c.Flags()
	f.StringVar(&o.root, "root", "", "read a capture (directory or .tar.gz made by 'linerate capture') instead of this machine")
	f.StringVar(&o.netns, "netns", "", "read inside the named network namespace (/var/run/netns/NAME)")
	f.StringVar(&o.lab, "lab", "", "read a node of a running lab (with --node)")
	f.StringVar(&o.node, "node", "", "the lab node to read (with --lab)")
	f.BoolVar(&o.json, "json", false, "print the model as JSON (docs/inspect-json.md)")
	return c
}

func (o *inspectOptions) run(cmd *cobra.Command, args []string) error {
	if o.lab != "" || o.node != "" {
		if o.lab == "" || o.node == "" {
			return usage.Errorf("--lab and --node go together")
		}
		if o.root != "" || o.netns != "" {
			return usage.Errorf("--lab goes with neither --root nor --netns")
		}
		ns, err := labNodeNetns(o.lab, o.node)
		if err != nil {
			return usage.Wrap(err)
		}
		o.netns = ns
	}
	src, err := inspectSource(cmd.Context(), o.root, o.netns)
	if err != nil {
		return err
	}
	defer src.Close()
	b, err := box.Collect(cmd.Context(), src, args...)
	if err != nil {
		return sourceErr(src, o.root, err)
	}
	if n := len(b.Warnings); n > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "linerate: warning: %d thing(s) in capture %s could not be read and are unknown (see \"warnings\" in the output)\n", n, o.root)
	}
	if o.json {
		return report.JSON(cmd.OutOrStdout(), b)
	}
	if err := report.Inspect(cmd.OutOrStdout(), b); err != nil {
		return err
	}
	inspectKernel(cmd.OutOrStdout(), b)
	return nil
}

// inspectKernel lists what stops a NIC from existing at all: Ethernet PCI
// functions with no driver (and the module that would bind them) and the
// kernel log's BAR and link failures.
func inspectKernel(w io.Writer, b *box.Box) {
	for _, u := range b.Unbound {
		mods := "no module of this kernel matches it"
		switch {
		case !u.ModulesChecked:
			mods = "modules.alias unread"
		case len(u.Modules) > 0:
			mods = "module " + strings.Join(u.Modules, ", ") + " would bind it"
		}
		fmt.Fprintf(w, "unbound Ethernet function %s (%s:%s): no driver, no interface; %s\n",
			u.Addr, strings.TrimPrefix(u.Vendor, "0x"), strings.TrimPrefix(u.Device, "0x"), mods)
	}
	for _, e := range b.KernelLog {
		fmt.Fprintf(w, "kernel log, %s failure: %s\n", e.Kind, e.Line)
	}
}

// inspectSource opens the source the --root and --netns flags name: a
// capture, a network namespace, or this machine. ctx ends the unpacking of
// a tarball (Ctrl-C, SIGTERM).
func inspectSource(ctx context.Context, root, netns string) (source.Source, error) {
	switch {
	case root != "" && netns != "":
		return nil, usage.Errorf("--root and --netns exclude each other: a capture has no namespaces to enter")
	case root != "":
		return source.OpenCaptureContext(ctx, root)
	case netns != "":
		return source.NewLiveNetns(netns)
	}
	return source.NewLive()
}

// sourceErr words an error met while reading src. Everything wrong inside
// a capture is bad input; its message names files relative to the capture,
// not the temporary directory a tarball was unpacked to.
func sourceErr(src source.Source, root string, err error) error {
	if root == "" || usage.Is(err) || errors.Is(err, context.Canceled) {
		return err
	}
	msg := err.Error()
	if c, ok := src.(*source.Capture); ok {
		msg = strings.ReplaceAll(msg, c.Dir()+"/", "")
	}
	return usage.Wrap(fmt.Errorf("capture %s: %s", root, msg))
}
