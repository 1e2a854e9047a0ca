//go:build small

package main

import "github.com/spf13/cobra"

// The small build writes no man pages or completions: OpenWrt's packages
// carry neither.
func newPackageFilesCmd() *cobra.Command {
	c := leftOutCmd("package-files", "man pages and completions")
	c.Hidden = true
	return c
}
