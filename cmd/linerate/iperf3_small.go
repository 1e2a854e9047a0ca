//go:build small

package main

import (
	"context"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"linerate/iperf3"
	"linerate/results"
	"linerate/traffic"
)

// The small build has no iperf3 door: it neither tests a plain iperf3
// server nor answers iperf3 clients (OpenWrt has its own iperf3 package).

func runBench(ctx context.Context, cfg traffic.Config, _ func(string) bool) (*results.Result, error) {
	if slices.ContainsFunc(cfg.Targets, iperf3.IsTarget) {
		return nil, notBuilt("--to iperf3://")
	}
	return traffic.Run(ctx, cfg)
}

// iperf3ServeOptions keeps serve's --iperf3 flag, which says so.
type iperf3ServeOptions struct{ on bool }

func (o *iperf3ServeOptions) add(f *pflag.FlagSet) {
	f.BoolVar(&o.on, "iperf3", false, "(not in this build) answer iperf3 clients")
}

func (o *iperf3ServeOptions) start(*cobra.Command, *traffic.Server, []string, bool) (func(), error) {
	if o.on {
		return nil, notBuilt("serve --iperf3")
	}
	return func() {}, nil
}
