package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// runArgs runs linerate ARGS in process, on commands built afresh for the
// run (no flag of an earlier run carries over).
func runArgs(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := execute(args...)
	return dropSavedLines(out), err
}

// execute runs a new root command with args, stdout and stderr together.
func execute(args ...string) (string, error) {
	var out bytes.Buffer
	err := executeTo(&out, &out, args...)
	return out.String(), err
}

// executeTo runs a new root command with args, its output to stdout and
// stderr.
func executeTo(stdout, stderr io.Writer, args ...string) error {
	root := newRootCmd()
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	return root.ExecuteContext(context.Background())
}

// findCmd is the command at path (e.g. "tune", "auto") of a new root
// command.
func findCmd(t *testing.T, path ...string) *cobra.Command {
	t.Helper()
	c, _, err := newRootCmd().Find(path)
	if err != nil || c.Name() != path[len(path)-1] {
		t.Fatalf("%v: %v", path, err)
	}
	return c
}

// dropSavedLines takes out the history's "saved as run" notice (stderr),
// which the tests that read JSON from the combined output do not expect;
// the history's own tests read it with runSaved.
func dropSavedLines(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "saved as run ") {
			b.WriteString(l)
		}
	}
	return b.String()
}
