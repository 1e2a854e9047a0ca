//go:build small

package main

import "github.com/spf13/cobra"

// The small build has no report: the HTML page (html/template, charts) is
// made where the results are read, not on the router.
func newReportCmd() *cobra.Command { return leftOutCmd("report", "the HTML report") }
