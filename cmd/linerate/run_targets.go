//go:build !small

package main

import (
	"io"

	"linerate/plan"
	"linerate/report"
)

// writeTargets writes pl's agents as a Prometheus file_sd target list to
// file, replacing a regular file at once (Prometheus rereads the file
// when it changes, and never sees half of it); "-" is stdout.
func writeTargets(stdout io.Writer, file string, pl *plan.Plan) error {
	return writeOutput(stdout, "--prometheus-targets", file, func(w io.Writer) error {
		return report.JSON(w, pl.PrometheusTargets())
	})
}
