//go:build small

package main

import "github.com/spf13/cobra"

// The small build has no run: a plan drives many hosts from a controller.
func newRunCmd() *cobra.Command { return leftOutCmd("run", "plans across hosts") }
