//go:build !small

package main

import (
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"linerate/internal/usage"
	"linerate/iperf3"
	"linerate/traffic"
	"linerate/wire"
)

// rrulDefaults are bench rrul's own defaults for bench's shared flags,
// used when the user did not give them: flent's rrul probes about every
// 200 ms and lets them run 5 s before the load.
var rrulDefaults = struct {
	duration, probe, idle time.Duration
	marks                 string
}{30 * time.Second, 200 * time.Millisecond, 5 * time.Second, "BE,BK,CS5,EF"}

// rrulCmd builds `bench rrul`: TCP streams both ways at once, stream i of
// each direction marked with the i-th of --marks, latency probes idle
// before the load and throughout it.
func (o *benchOptions) rrulCmd() *cobra.Command {
	var marks string
	c := &cobra.Command{
		Use:   "rrul --to HOST[:PORT]",
		Short: "Realtime Response Under Load: 4 TCP streams up and 4 down, diffserv-marked, latency idle and under load",
		Long: `rrul runs flent's RRUL test against one 'linerate serve': TCP streams
both ways at once, by default four each way marked BE, BK (CS1), CS5 and
EF (stream i of each direction with the i-th mark, on both ends), with
latency probes every 200 ms from 5 s before the load (idle) to its end.
It reports the round trip idle and under load (p50, p95) and the latency
the load induced (their difference: the queues on the path, bufferbloat),
the goodput up, down and per stream, and keeps every probe and each
stream's goodput and TCP_INFO once a second for the page (--out, then
'linerate report', or the history's run: docs/rrul.md).

bench's flags apply (--duration, --warmup, --idle, --probe-interval,
--rate, --json, --out, --web...), with defaults of its own here: --duration
30s, --idle 5s, --probe-interval 200ms. --streams, --reverse, --bidir and
--dscp do not: the marks say how many streams run each way.`,
		Example: `  linerate bench rrul --to 10.0.0.2                       # 30 s, 4 up and 4 down, probes every 200 ms after 5 s idle
  linerate bench rrul --to 10.0.0.2 -t 60 --idle 10s --json > rrul.json
  linerate bench rrul --to 10.0.0.2 --marks BE,EF -C bbr   # 2 streams each way, BBR on both ends
  linerate bench rrul --to 10.0.0.2 -o rrul.json && linerate report rrul.json -o rrul.html`,
		Args: argsWith(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.rrulFlags(cmd, marks); err != nil {
				return err
			}
			return o.run(cmd, wire.TCP)
		},
	}
	f := c.Flags()
	f.StringVar(&marks, "marks", rrulDefaults.marks, "the DSCP mark of each stream, one stream each way per mark: names (BE, BK, CS0-CS7, AF11-AF43, EF, LE) or numbers 0-63")
	f.StringVarP(&o.congestion, "congestion", "C", "", "TCP congestion control on both ends (TCP_CONGESTION): cubic, bbr, reno...")
	f.StringVarP(&o.window, "window", "w", "", "SO_SNDBUF and SO_RCVBUF of every data socket on both ends: 416K, 4M (default: the kernel's autotuning)")
	return c
}

// rrulFlags checks the flags of bench rrul and sets bench's options from
// them: both ways, a stream per mark, rrul's defaults where the user gave
// nothing, and the marks and the RRUL figures in the run.
func (o *benchOptions) rrulFlags(cmd *cobra.Command, marks string) error {
	changed := cmd.Flags().Changed
	for _, name := range []string{"streams", "reverse", "bidir", "dscp", "from", "sample"} {
		if changed(name) {
			return usage.Errorf("--%s: not for bench rrul (it runs a stream per --marks each way, marked on its own, from this host)", name)
		}
	}
	if len(o.to) > 1 {
		return usage.Errorf("--to %s: bench rrul tests one host", strings.Join(o.to, " --to "))
	}
	if slices.ContainsFunc(o.to, iperf3.IsTarget) {
		return usage.Errorf("--to %s: bench rrul needs 'linerate serve' at the far end (an iperf3 server neither marks its streams nor answers probes)", o.to[0])
	}
	var dscp []int
	for _, m := range strings.Split(marks, ",") {
		d, err := wire.ParseDSCP(m)
		if err != nil {
			return usage.Errorf("--marks %q: %w", marks, err)
		}
		dscp = append(dscp, d)
	}
	if !changed("duration") {
		o.duration = rrulDefaults.duration
	}
	if !changed("probe-interval") {
		o.probe = rrulDefaults.probe
	}
	if !changed("idle") {
		o.idle = rrulDefaults.idle
	}
	if o.probe == 0 {
		return usage.Errorf("--probe-interval 0: bench rrul measures latency with its probes")
	}
	o.bidir, o.streams = true, len(dscp)
	o.extra = func(cfg *traffic.Config) {
		cfg.Spec.StreamDSCP, cfg.RRUL = dscp, true
	}
	return nil
}
