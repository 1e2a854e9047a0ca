package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"linerate/plan"
)

// run --check --prometheus-targets writes the plan's agents as a file_sd
// target list, without reaching any of them.
func TestRunPrometheusTargets(t *testing.T) {
	file := filepath.Join(t.TempDir(), "targets.json")
	out, err := execute("run", filepath.Join(repoRoot, "examples", "cm4-fan-in.yaml"), "--check", "--prometheus-targets", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var got []plan.TargetGroup
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	pl, err := plan.Load(filepath.Join(repoRoot, "examples", "cm4-fan-in.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(pl.Hosts) || !reflect.DeepEqual(got, pl.PrometheusTargets()) {
		t.Errorf("targets file:\n%s\nwant one group per host of %d", b, len(pl.Hosts))
	}
	if _, err := execute("run", filepath.Join(repoRoot, "examples", "cm4-fan-in.yaml"), "--check", "--prometheus-targets", filepath.Join(t.TempDir(), "no", "such", "dir.json")); err == nil {
		t.Error("a targets file in a missing directory: no error")
	}
}
