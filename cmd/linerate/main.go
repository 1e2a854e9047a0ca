// Command linerate gets a Linux box to the throughput its hardware allows,
// and proves it. This package is wiring only: flags, help text and calls
// into the domain packages. Each subcommand lives in its own file, built by
// a constructor (newXCmd) with its flags bound to an options struct of its
// own; newRootCmd puts them together.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"linerate/internal/usage"
	"linerate/internal/version"
)

// Exit codes, documented in README.md.
const (
	exitOK          = 0
	exitFailure     = 1   // the machine or the network failed us
	exitBadInput    = 2   // bad flags, names, files or captures
	exitInterrupted = 130 // Ctrl-C / SIGTERM: partial results were printed
	exitBrokenPipe  = 141 // whoever read the output went away (`| head`), as a SIGPIPE death reads in a shell
)

// errInterrupted is returned by commands stopped by a signal after they
// printed what they had.
var errInterrupted = errors.New("interrupted")

// shown is an error the command already printed with its result (the
// result's error lines): it exits 1 without printing it a second time.
type shown struct{ error }

// failure is the error of a run whose result carries problems (errors,
// a stop before its end), for the exit code: err itself when the run
// returned one, else the first problem. printed says the result printed
// them already.
func failure(err error, problems []string, printed bool) error {
	if err == nil && len(problems) > 0 {
		err = errors.New(problems[0])
	}
	if err == nil || !printed || usage.Is(err) {
		return err
	}
	return shown{err}
}

// newRootCmd builds linerate: the root command and every subcommand, with
// flag state of their own (a second call shares nothing with the first).
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "linerate",
		Short: "Get a Linux box to the throughput its hardware allows, and prove it",
		Long: `linerate inspects a Linux box's NICs, queues, IRQs, PCIe links and CPUs,
measures throughput, packet rate, loss and latency, names the bottleneck
with evidence, and tunes it as one reversible transaction.`,
		Example: `  linerate inspect                  # every NIC, queue, IRQ and PCIe link
  linerate inspect eth0 --json      # one NIC, as JSON
  linerate capture -o box.tar.gz    # everything inspect reads, to send to someone
  linerate inspect --root box.tar.gz
  linerate ceiling --speed 1G --frame 64`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Without subcommand: --version, else the help. Not cobra's own
		// --version: it prints through a text/template, and a program that
		// executes one keeps every exported method of every type it links
		// (the linker cannot tell which a template calls).
		RunE: func(cmd *cobra.Command, _ []string) error {
			if v, _ := cmd.Flags().GetBool("version"); v {
				fmt.Fprintln(cmd.OutOrStdout(), "linerate", version.Version)
				return nil
			}
			return cmd.Help()
		},
	}
	root.Flags().BoolP("version", "v", false, "print linerate's version")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage.Wrap(err) })
	root.AddCommand(
		newBenchCmd(),
		newCaptureCmd(),
		newCeilingCmd(),
		newCompareCmd(),
		newDemoCmd(),
		newDiagnoseCmd(),
		newInspectCmd(),
		newLabCmd(),
		newReportCmd(),
		newRunCmd(),
		newRunsCmd(),
		newServeCmd(),
		newTuneCmd(),
		newVersionCmd(),
		newWatchCmd(),
		newPackageFilesCmd(),
	)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print linerate's version",
		Example: "  linerate version",
		Args:    cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "linerate", version.Version)
			if len(leftOut) > 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "small build, without:", strings.Join(leftOut, ", "))
			}
		},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// A write to a closed pipe (`linerate inspect --root x.tar.gz | head`)
	// fails with EPIPE rather than killing the process, so that deferred
	// clean-ups run (a capture's extraction directory). Notify rather than
	// Ignore: children must not inherit an ignored SIGPIPE.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	os.Exit(exitCode(err))
}

// exitCode prints err as one line and maps it to linerate's exit codes.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, syscall.EPIPE) {
		return exitBrokenPipe // nobody is left to read a message
	}
	if errors.As(err, new(shown)) {
		return exitFailure
	}
	fmt.Fprintln(os.Stderr, "linerate:", err)
	switch {
	case errors.Is(err, errInterrupted) || errors.Is(err, context.Canceled):
		return exitInterrupted
	case usage.Is(err) || isCobraUsage(err):
		return exitBadInput
	default:
		return exitFailure
	}
}
