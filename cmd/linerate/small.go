//go:build small

package main

import (
	"github.com/spf13/cobra"

	"linerate/internal/usage"
)

// The small build (go build -tags small): the one OpenWrt's packages
// carry for routers whose flash is counted in megabytes. It leaves out
// what a router never runs, each in a file pair (X.go with !small,
// X_small.go with the stand-in that says so): the lab, demo and tune auto
// (namespace labs), report (the HTML page), run (plans across hosts),
// bench --from and --sample and the client side of rr, rrul and --search
// (driving other hosts), the iperf3 door, --web (net/http and the TLS it
// links) and the eBPF counters (--xdp, drop reasons). docs/openwrt.md
// weighs each.
var leftOut = []string{"lab", "demo", "tune auto", "report", "run", "bench --from/--sample",
	"bench rr/rrul/--search", "iperf3 (bench --to iperf3://, serve --iperf3)", "--web", "eBPF (--xdp, drop reasons)"}

// notBuilt is the error of asking the small build for what it leaves out.
func notBuilt(what string) error {
	return usage.Errorf("%s: not in this build of linerate (the small build for routers leaves it out: docs/openwrt.md); use a full build", what)
}

// leftOutCmd stands in for a command the small build leaves out: it takes
// any arguments and flags, and says so.
func leftOutCmd(use, what string) *cobra.Command {
	return &cobra.Command{
		Use:                use,
		Short:              "(not in this build: " + what + ")",
		Example:            "  linerate " + use + "   # says it is not in this build",
		DisableFlagParsing: true,
		RunE:               func(*cobra.Command, []string) error { return notBuilt("linerate " + use) },
	}
}
