//go:build !small

package main

import (
	"context"
	"slices"
	"strings"

	"linerate/internal/usage"
	"linerate/iperf3"
	"linerate/results"
	"linerate/traffic"
	"linerate/wire"
)

// runBench runs the test: against a plain iperf3 server when the target
// says iperf3://, else against linerate agents.
func runBench(ctx context.Context, cfg traffic.Config, changed func(string) bool) (*results.Result, error) {
	if !slices.ContainsFunc(cfg.Targets, iperf3.IsTarget) {
		return traffic.Run(ctx, cfg)
	}
	if len(cfg.Targets) > 1 {
		return nil, usage.Errorf("--to %s: an iperf3:// server is tested alone, with one --to", strings.Join(cfg.Targets, " --to "))
	}
	sp := cfg.Spec
	if !changed("warmup") {
		sp.Warmup = 0 // iperf3 counts from the first byte
	}
	if sp.Proto == wire.UDP && cfg.FrameSize > 0 {
		sp.Payload = cfg.FrameSize - wire.UDPOverhead(true)
	}
	return iperf3.Run(ctx, iperf3.Config{Target: cfg.Targets[0], Spec: sp, Bind: cfg.Bind,
		Sampling: iperf3.Sampling(cfg.Sampling), OnInterval: cfg.OnInterval})
}
