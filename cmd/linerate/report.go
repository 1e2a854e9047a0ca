//go:build !small

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"linerate/history"
	"linerate/internal/outfile"
	"linerate/internal/usage"
	"linerate/report/page"
)

// reportOptions are the flags and arguments of `linerate report`.
type reportOptions struct {
	historyDir string
	out        string
}

func newReportCmd() *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report ID|FILE... [-o report.html]",
		Short: "Write saved runs as one self-contained HTML page with charts",
		Long: `report writes one HTML page of one or more runs: runs of the history, named by
their id or the start of it ('linerate runs' lists them), or result files
(a history .json.gz, or the output of bench --json, diagnose --json or
tune auto --json).

For a bench or a zero-loss search the page shows the headline figures
(against the path's ceiling when known), packets and bits per second each
second, loss, latency idle and under load, each end's per-CPU use (usr,
sys, irq, softirq), interrupts and NET_RX softirqs per CPU, drop counters
and the drop ledger, and the search's table. For a diagnosis: the findings
with their evidence and fixes. For tune auto: each trial's rounds against
the noise band, what was kept and rolled back, before and after. Two or
more runs are first set side by side with the changes of their headline
figures: the before and after of a tuning session on one page.

The page holds its style and charts (inline SVG, no script) and refers to
nothing outside itself: it opens offline from a file and can be mailed.
docs/report.md says what each part shows.`,
		Example: `  linerate report 20261125-1405                    # one run of the history, by the start of its id
  linerate report before.json after.json -o tuning.html
  linerate bench udp --to 10.0.0.2 --json > run.json && linerate report run.json
  linerate report 20261125-1405 20261125-1431       # before and after, side by side`,
		Args: argsWith(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	f := cmd.Flags()
	f.StringVar(&o.historyDir, "history-dir", "", "the run history to read ids from (default $LINERATE_HISTORY_DIR, else /var/lib/linerate/runs as root, else $XDG_STATE_HOME/linerate/runs)")
	f.StringVarP(&o.out, "output", "o", "", "write the page to `FILE` (default report-<first id or file name>.html here; - for stdout)")
	return cmd
}

func (o *reportOptions) run(cmd *cobra.Command, args []string) error {
	store := history.Open(o.historyDir)
	var runs []*history.Run
	for _, arg := range args {
		r, err := loadRun(store, arg)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	out := o.out
	if out == "" {
		out = "report-" + reportBase(args[0], runs[0]) + ".html"
	}
	if err := writeOutput(cmd.OutOrStdout(), "-o", out, func(w io.Writer) error { return page.Write(w, runs) }); err != nil || out == "-" {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), out)
	return nil
}

// reportBase names the default output after the first run: its id, else
// the file's name without its extensions.
func reportBase(arg string, r *history.Run) string {
	if _, err := os.Stat(arg); err != nil && r.ID != "" {
		return r.ID
	}
	base := filepath.Base(arg)
	for _, ext := range []string{".gz", ".json"} {
		base = strings.TrimSuffix(base, ext)
	}
	if base == "" || base == "." {
		base = "run"
	}
	return base
}

// writeOutput writes the output write produces to the file a flag named:
// "-" is stdout; a regular file (or none) is replaced whole, a device, a
// pipe or a link is written to as it is (outfile). A path that cannot take
// it is bad input; a failed write (a full device) is a failure.
func writeOutput(stdout io.Writer, flag, path string, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	err := outfile.Write(path, write)
	switch {
	case err == nil:
		return nil
	case usage.Is(err):
		return usage.Errorf("%s %s: %w", flag, path, err)
	default:
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
}
