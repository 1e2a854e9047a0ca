//go:build !small

package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"linerate/box"
	"linerate/ceiling"
	"linerate/diagnose"
	"linerate/fleet"
	"linerate/history"
	"linerate/internal/usage"
	"linerate/report"
	"linerate/results"
	"linerate/traffic"
	"linerate/wire"
)

// rrOptions are the flags of `linerate bench rr` besides bench's own.
type rrOptions struct {
	udp     bool
	connect bool
	size    string
	timeout time.Duration
}

// rrCmd builds `bench rr`, its flags bound to o and ro.
func (o *benchOptions) rrCmd() *cobra.Command {
	ro := &rrOptions{}
	c := &cobra.Command{
		Use:   "rr --to HOST[:PORT]",
		Short: "Transactions: request/response round trips per second and their latency (netperf's TCP_RR, TCP_CRR, UDP_RR)",
		Long: `bench rr measures transactions instead of bulk traffic: each stream sends a
request and waits for the whole response before the next, over one TCP
connection (netperf's TCP_RR), over UDP (--udp, UDP_RR), or over a new TCP
connection per transaction (--connect, TCP_CRR: connect, request, response,
close; the server closes first). It reports transactions per second in total
and per stream, each transaction's round trip as percentiles (microseconds,
connect included with --connect), what the server answered, and what failed:
a transaction whose response does not come within --timeout counts as lost
and its stream moves on.

A NAT router's limit is often its connection rate through conntrack, not
its packet rate: --sample HOST samples the device in the middle (its agent,
'linerate serve') once a second, and the result gives its conntrack entries
at the start, peak and end, nf_conntrack_max, and what it dropped
(drop, insert_failed, early_drop). A table that filled is named, with the
sysctls that fix it (docs/rr.md).`,
		Example: `  linerate bench rr --to 10.0.0.2                        # TCP_RR: 1-byte request, 1-byte response
  linerate bench rr --to 10.0.0.2 --udp --streams 4       # UDP_RR over 4 sockets
  linerate bench rr --to 10.0.0.2 --size 64,1448 --json   # 64-byte requests, 1448-byte responses
  linerate bench rr --to wan --connect --streams 8 --sample router   # TCP_CRR through a NAT router, its conntrack sampled
  linerate lab exec demo lan -- linerate bench rr --to wan --connect --sample router`,
		Args: argsWith(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.runRR(cmd, ro) },
	}
	f := c.Flags()
	f.BoolVar(&ro.udp, "udp", false, "transactions over UDP (UDP_RR): a request datagram, a response datagram")
	f.BoolVar(&ro.connect, "connect", false, "a new TCP connection per transaction (TCP_CRR): connect, request, response, close")
	f.StringVar(&ro.size, "size", "1", "request and response bytes: REQ[,RESP] (one number: both; at most 65507)")
	secondsVarP(f, &ro.timeout, "timeout", "", wire.DefaultRRTimeout, "longest a transaction may take (connect included): one slower counts as lost")
	return c
}

// rrNotFlags are bench's flags that a transaction test has no use for.
var rrNotFlags = []string{"from", "warmup", "probe-interval", "idle", "rate", "reverse", "bidir", "json-stream", "web", "threads"}

// parseRRSize reads --size REQ[,RESP].
func parseRRSize(s string) (req, resp int, err error) {
	if req, resp, err = wire.ParseRRSize(s); err != nil {
		return 0, 0, usage.Errorf("--size %v", err)
	}
	return req, resp, nil
}

// rrConfig checks the flags and builds the transaction test.
func (o *benchOptions) rrConfig(cmd *cobra.Command, ro *rrOptions) (traffic.Config, error) {
	changed := cmd.Flags().Changed
	for _, name := range rrNotFlags {
		if changed(name) {
			return traffic.Config{}, usage.Errorf("--%s: not for bench rr (docs/rr.md)", name)
		}
	}
	if ro.udp && ro.connect {
		return traffic.Config{}, usage.Errorf("--udp and --connect: a connection per transaction is TCP's")
	}
	req, resp, err := parseRRSize(ro.size)
	if err != nil {
		return traffic.Config{}, err
	}
	proto := wire.TCP
	if ro.udp {
		proto = wire.UDP
	}
	o.engine, o.size, o.payload, o.ports = "socket", "", 0, 1
	cfg, err := o.config(proto, func(name string) bool { return name != "size" && changed(name) })
	if err != nil {
		return cfg, err
	}
	sp := &cfg.Spec
	sp.Warmup, sp.ProbeInterval, sp.Payload, sp.Ports, sp.ZeroCopy = 0, 0, 0, 1, false
	sp.RR = &wire.RR{Request: req, Response: resp, Connect: ro.connect, Timeout: wire.Seconds(ro.timeout)}
	cfg.FrameSize, cfg.Mix, cfg.Idle, cfg.Engine = 0, ceiling.Mix{}, 0, ""
	return cfg, nil
}

func (o *benchOptions) runRR(cmd *cobra.Command, ro *rrOptions) error {
	cfg, err := o.rrConfig(cmd, ro)
	if err != nil {
		return err
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	warn(stderr, o.warnings)
	hosts, err := fleet.ParseSample(o.sample, stderr)
	if err != nil {
		return usage.Flags(err, benchFlags)
	}
	cfg.Sampling = liveSampling()
	ends := openEndCounters()
	defer ends.close()
	cfg.Drops, cfg.Machine = ends.drops(), ends.machine
	show, live := o.intervals(cmd, nil)
	if show != nil && o.interval > 0 {
		lines := func(iv results.IntervalStats) { report.RRInterval(stdout, iv, live) }
		if o.json || o.csv {
			lines = func(iv results.IntervalStats) { report.RRInterval(stderr, iv, live) }
		}
		cfg.OnInterval = results.GroupIntervals(o.interval, lines)
	}
	stopMiddle := func() ([]results.Sample, []string) { return nil, nil }
	if len(hosts) > 0 {
		if stopMiddle, err = fleet.SampleHosts(cmd.Context(), hosts, cfg.Token, 0); err != nil {
			return err
		}
	}
	res, runErr := traffic.Run(cmd.Context(), cfg)
	middle, notes := stopMiddle()
	runErr = usage.Flags(runErr, benchFlags)
	if live && cfg.OnInterval != nil {
		report.BenchEndLive(stderr)
		if !o.json && !o.csv {
			report.BenchEndLive(stdout)
		}
	}
	if res == nil {
		return runErr
	}
	addMiddle(res, hosts, middle, notes)
	return o.finishRR(cmd, res, runErr)
}

// finishRR keeps an rr result (--out, the history), prints it as asked
// with what diagnose finds of the devices in the middle; the error is for
// the exit code.
func (o *benchOptions) finishRR(cmd *cobra.Command, res *results.Result, runErr error) error {
	if o.out != "" {
		if err := saveResult(o.out, res); err != nil {
			return err
		}
	}
	o.history.save(cmd, history.KindBench, res)
	stdout := cmd.OutOrStdout()
	var err error
	switch {
	case o.json:
		err = report.BenchJSON(stdout, res)
	case o.csv:
		err = report.RRCSV(stdout, res)
	default:
		report.RRText(stdout, res)
	}
	if err != nil {
		return err
	}
	if fs := middleFindings(res); len(fs) > 0 && !o.json && !o.csv {
		fmt.Fprintln(stdout)
		report.Findings(stdout, fs, 1, res.RR.Seconds)
	}
	if res.Interrupted {
		return errInterrupted
	}
	return failure(runErr, res.Problems(), !(o.json || o.csv))
}

// addMiddle files the samples of the devices in the middle in the result
// (side dut) and each one's connection tracker in its rr figures.
func addMiddle(res *results.Result, hosts []fleet.Host, samples []results.Sample, notes []string) {
	res.Samples = append(res.Samples, samples...)
	res.Notes = append(res.Notes, notes...)
	if res.RR == nil {
		return
	}
	for _, h := range hosts {
		var rates []box.Rates
		for _, s := range samples {
			if s.Host == h.Name {
				rates = append(rates, s.Rates)
			}
		}
		if use, ok := results.Conntrack(h.Name, rates); ok {
			res.RR.Middle = append(res.RR.Middle, use)
		} else {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: no conntrack in its samples (nf_conntrack not loaded there?)", h.Name))
		}
	}
}

// middleFindings is what diagnose's conntrack rule finds in each sampled
// device in the middle whose table filled.
func middleFindings(res *results.Result) []diagnose.Finding {
	var out []diagnose.Finding
	if res.RR == nil {
		return nil
	}
	for _, m := range res.RR.Middle {
		if !m.Full() {
			continue
		}
		ev := diagnose.FromResultHost(res, m.Host)
		fs, err := diagnose.Run(ev, "conntrack-drop")
		if err == nil {
			out = append(out, fs...)
		}
	}
	return out
}
