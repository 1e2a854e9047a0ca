package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
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

// --prometheus-targets onto a device writes to the device and leaves it
// one (it used to rename a regular file over it): /dev/null's numbers take
// the list, /dev/full's fail with exit 1. The devices are made in a
// private mount namespace's tmpfs, never the host's /dev.
func TestRunPrometheusTargetsDevice(t *testing.T) {
	example := filepath.Join(repoRoot, "examples", "cm4-fan-in.yaml")
	err := testenv.InMountNS(t, func(dir string) error {
		null, full, err := testenv.NullAndFull(dir)
		if err != nil {
			return err
		}
		if out, err := execute("run", example, "--check", "--prometheus-targets", null); err != nil {
			return fmt.Errorf("onto a null device: %v\n%s", err, out)
		}
		out, err := execute("run", example, "--check", "--prometheus-targets", full)
		if code := exitCode(err); code != exitFailure || !strings.Contains(err.Error(), "--prometheus-targets "+full) {
			return fmt.Errorf("onto a full device: exit %d, %v\n%s", code, err, out)
		}
		return testenv.CharDevices(null, full)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// report -o onto a named pipe writes the page into the pipe, as it writes
// it to a file, and --prometheus-targets - writes to stdout.
func TestOutputToPipeAndStdout(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(repoRoot, "report", "page", "testdata", "bench-udp.json.gz")
	file := filepath.Join(dir, "page.html")
	if out, err := execute("report", run, "-o", file); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe")
	read := testenv.FIFO(t, fifo, string(want), 30*time.Second)
	if out, err := execute("report", run, "-o", fifo); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if page := read(); page != string(want) {
		t.Errorf("the pipe got %d bytes, the file %d", len(page), len(want))
	}
	if st, _ := os.Lstat(fifo); st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe is now %v", st.Mode())
	}
	out, err := execute("run", filepath.Join(repoRoot, "examples", "cm4-fan-in.yaml"), "--check", "--prometheus-targets", "-")
	if err != nil || !strings.Contains(out, `"targets"`) {
		t.Errorf("--prometheus-targets -: %v\n%s", err, out)
	}
}
