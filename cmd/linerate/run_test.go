package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runArgs runs linerate ARGS in process with the flags of the commands it
// names, and of their subcommands, reset to their defaults first (cobra
// keeps flag state between runs).
func runArgs(t *testing.T, cmds []*cobra.Command, args ...string) (string, error) {
	t.Helper()
	resetFlags(t, cmds)
	out, err := execute(args...)
	return dropSavedLines(out), err
}

// resetFlags sets every flag of cmds and their subcommands back to its
// default, as if never given.
func resetFlags(t *testing.T, cmds []*cobra.Command) {
	t.Helper()
	var reset func(c *cobra.Command)
	reset = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags(), c.InheritedFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if sv, ok := f.Value.(pflag.SliceValue); ok {
					_ = sv.Replace(nil)
				} else if err := f.Value.Set(f.DefValue); err != nil {
					t.Fatalf("reset --%s: %v", f.Name, err)
				}
				f.Changed = false
			})
		}
		for _, sub := range c.Commands() {
			reset(sub)
		}
	}
	for _, c := range cmds {
		reset(c)
	}
}

// execute runs the root command with args, stdout and stderr together.
func execute(args ...string) (string, error) {
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&out)
	rootCmd.SetArgs(args)
	rootCmd.SetContext(context.Background())
	err := rootCmd.Execute()
	return out.String(), err
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
