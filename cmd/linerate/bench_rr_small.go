//go:build small

package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"linerate/wire"
)

// The small build has the client side of neither bench rr, bench rrul nor
// bench udp --search: they measure through a router from the hosts around
// it, whose agents (serve, kept) answer them.

func (o *benchOptions) rrCmd() *cobra.Command {
	return leftOutCmd("rr", "bench rr runs from the hosts around a router")
}
func (o *benchOptions) rrulCmd() *cobra.Command {
	return leftOutCmd("rrul", "bench rrul runs from the hosts around a router")
}

// searchOptions keeps --search, which says so.
type searchOptions struct{ goals string }

const searchExample = ""

func (o *searchOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&o.goals, "search", "", "(not in this build) search the zero-loss rate")
}

func (o *searchOptions) asked() bool { return o.goals != "" }

func (o *benchOptions) runSearch(*cobra.Command, wire.Proto) error { return notBuilt("bench --search") }
