package main

import (
	"strings"

	"github.com/spf13/cobra"

	"linerate/internal/usage"
)

// isCobraUsage recognises cobra's own errors for unknown commands and
// wrong argument counts, which are bad input.
func isCobraUsage(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") ||
		strings.HasPrefix(msg, "accepts ") ||
		strings.HasPrefix(msg, "requires ") ||
		strings.Contains(msg, "arg(s)")
}

// argsWith wraps a cobra argument validator so its error is bad input.
func argsWith(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return usage.Wrap(v(cmd, args))
	}
}
