//go:build !small

package main

import (
	"encoding/json"
	"io"

	"linerate/plan"
)

// writeTargets writes pl's agents as a Prometheus file_sd target list to
// file, replacing a regular file at once (Prometheus rereads the file
// when it changes, and never sees half of it); "-" is stdout.
func writeTargets(stdout io.Writer, file string, pl *plan.Plan) error {
	return writeOutput(stdout, "--prometheus-targets", file, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(pl.PrometheusTargets())
	})
}
