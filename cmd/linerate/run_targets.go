package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"linerate/plan"
)

// writeTargets writes pl's agents as a Prometheus file_sd target list to
// file, replacing it at once (Prometheus rereads the file when it
// changes, and never sees half of it).
func writeTargets(file string, pl *plan.Plan) error {
	b, err := json.MarshalIndent(pl.PrometheusTargets(), "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".linerate-targets-*")
	if err != nil {
		return fmt.Errorf("--prometheus-targets: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("--prometheus-targets %s: %w", file, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("--prometheus-targets %s: %w", file, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--prometheus-targets %s: %w", file, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("--prometheus-targets: %w", err)
	}
	return nil
}
