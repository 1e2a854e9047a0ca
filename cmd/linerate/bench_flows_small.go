//go:build small

package main

import (
	"github.com/spf13/cobra"

	"linerate/wire"
)

// The small build does not drive other hosts: bench --from sends from
// other agents, which a controller does, not a router.
func (o *benchOptions) runFlows(*cobra.Command, wire.Proto) error {
	return notBuilt("bench --from")
}
