//go:build small

package main

import "github.com/spf13/cobra"

// The small build has no labs: lab, demo and tune auto build network
// namespaces (and virtual machines) a router never needs.

func newLabCmd() *cobra.Command  { return leftOutCmd("lab", "namespace labs") }
func newDemoCmd() *cobra.Command { return leftOutCmd("demo", "it builds a lab") }
func newTuneAutoCmd() *cobra.Command {
	return leftOutCmd("auto", "tune auto drives a lab or another host")
}
