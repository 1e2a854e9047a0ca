package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"linerate/history"
	"linerate/internal/usage"
	"linerate/report"
)

// historyFlags are --no-save and --history-dir, on every command whose
// result the history keeps.
type historyFlags struct {
	noSave bool
	dir    string
}

func (h *historyFlags) add(f *pflag.FlagSet, saves bool) {
	if saves {
		f.BoolVar(&h.noSave, "no-save", false, "do not keep this result in the run history (docs/history.md)")
	}
	f.StringVar(&h.dir, "history-dir", "", "run history directory (default $LINERATE_HISTORY_DIR, else /var/lib/linerate/runs as root, else $XDG_STATE_HOME/linerate/runs)")
}

func (h *historyFlags) store(cmd *cobra.Command) *history.Store {
	s := history.Open(h.dir)
	s.Warn = func(m string) { fmt.Fprintln(cmd.ErrOrStderr(), "linerate: warning:", m) }
	return s
}

// save keeps a result in the history and says where on stderr. A result
// that cannot be saved is a warning: the measurement was printed.
func (h *historyFlags) save(cmd *cobra.Command, kind string, result any) {
	if h.noSave {
		return
	}
	r, err := report.NewRun(kind, os.Args, result)
	if err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), "linerate: warning: history:", err)
		return
	}
	s := h.store(cmd)
	id, err := s.Save(r)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "linerate: warning: result not saved to the history: %v (--no-save skips it)\n", err)
		return
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "saved as run %s ('linerate report %s' makes its page)\n", id, id)
}

// runsOptions are the flags of `linerate runs`.
type runsOptions struct {
	h      historyFlags
	asJSON bool
	asCSV  bool
	filter history.Filter
}

func newRunsCmd() *cobra.Command {
	o := &runsOptions{}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the run history: every bench, search, diagnose and tune auto result kept",
		Long: `runs lists the results kept in the run history, newest first: id, time,
kind, host, command and the headline figure. Every bench, zero-loss search,
diagnose and tune auto saves its result there unless --no-save; 'linerate
report ID' makes a page of one or several, 'linerate compare A B' puts two
side by side. An id can be shortened to any prefix only one run has.`,
		Example: `  linerate runs                      # every run kept, newest first
  linerate runs --last 5 --kind bench
  linerate runs --host routerpi --json
  linerate runs --kind plan --csv > runs.csv
  linerate runs rm 20261125-140312-a1b2
  linerate runs prune --keep 100`,
		Args: argsWith(cobra.NoArgs),
		RunE: o.run,
	}
	f := cmd.Flags()
	o.h.add(cmd.PersistentFlags(), false)
	f.BoolVar(&o.asJSON, "json", false, "print the list as JSON (one object per run, without the results)")
	f.BoolVar(&o.asCSV, "csv", false, "print the list as CSV: a header row, then one row per run (id, time, kind, host, kernel, version, command, headline)")
	f.IntVar(&o.filter.Last, "last", 0, "only the newest N runs (0: all)")
	f.StringSliceVar(&o.filter.Kinds, "kind", nil, "only runs of this kind: "+strings.Join(history.Kinds, ", ")+" (repeatable)")
	f.StringSliceVar(&o.filter.Hosts, "host", nil, "only runs made on this host (repeatable)")
	cmd.AddCommand(newRunsRmCmd(&o.h), newRunsPruneCmd(&o.h))
	return cmd
}

// runsFlags names the flag behind each field of history.Filter.
var runsFlags = map[string]string{"Last": "--last", "Kinds": "--kind"}

func (o *runsOptions) run(cmd *cobra.Command, _ []string) error {
	if err := o.filter.Check(); err != nil {
		return usage.Flags(err, runsFlags)
	}
	all, err := o.h.store(cmd).List()
	if err != nil {
		return err
	}
	out := o.filter.Apply(all)
	switch {
	case o.asCSV:
		return report.RunsCSV(cmd.OutOrStdout(), out)
	case o.asJSON:
		return report.JSON(cmd.OutOrStdout(), out)
	case len(out) == 0:
		fmt.Fprintf(cmd.ErrOrStderr(), "no runs in %s\n", o.h.store(cmd).Dir)
		return nil
	}
	return report.Runs(cmd.OutOrStdout(), out)
}

func newRunsRmCmd(h *historyFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID...",
		Short:   "Remove runs from the history",
		Example: "  linerate runs rm 20261125-140312-a1b2 20261125-1403",
		Args:    argsWith(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			gone, err := h.store(cmd).Remove(args...)
			if err != nil {
				var nf *history.NotFoundError
				if errors.As(err, &nf) {
					return usage.Wrap(fmt.Errorf("%w; nothing was removed", err))
				}
				return err
			}
			for _, id := range gone {
				fmt.Fprintln(cmd.OutOrStdout(), "removed", id)
			}
			return nil
		},
	}
}

func newRunsPruneCmd(h *historyFlags) *cobra.Command {
	var keep int
	prune := &cobra.Command{
		Use:     "prune --keep N",
		Short:   "Remove all but the newest N runs",
		Example: "  linerate runs prune --keep 100",
		Args:    argsWith(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("keep") {
				return usage.Errorf("prune needs --keep N: how many of the newest runs to keep")
			}
			if keep < 0 {
				return usage.Errorf("--keep %d: negative", keep)
			}
			gone, err := h.store(cmd).Prune(keep)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %d runs, kept the newest %d\n", len(gone), keep)
			return nil
		},
	}
	prune.Flags().IntVar(&keep, "keep", 0, "how many of the newest runs to keep")
	return prune
}

func newCompareCmd() *cobra.Command {
	var h historyFlags
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Put two runs side by side: headline figures, their change, and whether it is beyond the noise",
		Long: `compare prints the headline figures of two runs (history ids, id prefixes or
result files), the change from A to B, and whether each change is beyond the
runs' own noise: the spread of each run's per-second figures (10th to 90th
percentile, over the median), the larger of the two. A change inside that
band is what two identical runs could show.`,
		Example: `  linerate compare 20261125-1403 20261125-1411     # before and after a change
  linerate compare before.json after.json          # two 'bench --json' results
  linerate compare matrix-a.json matrix-b.json     # two plans with a matrix: cell by cell`,
		Args: argsWith(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s := h.store(cmd)
			a, err := loadRun(s, args[0])
			if err != nil {
				return err
			}
			b, err := loadRun(s, args[1])
			if err != nil {
				return err
			}
			if err := report.Compare(cmd.OutOrStdout(), a, b); err != nil {
				return usage.Wrap(err)
			}
			return nil
		},
	}
	h.add(cmd.Flags(), false)
	return cmd
}

// loadRun reads a run from a file when arg names one (or looks like a
// path), else from the history by id or id prefix. A missing id, an
// unreadable or foreign file, or a result that would not decode within
// its budget (jsonbudget) are bad input.
func loadRun(store *history.Store, arg string) (*history.Run, error) {
	st, err := os.Stat(arg)
	switch {
	case err == nil && st.Mode().IsRegular():
		r, err := history.ReadFile(arg)
		if err != nil {
			return nil, usage.Wrap(err)
		}
		if err := report.CheckRun(r); err != nil {
			return nil, usage.Errorf("%s: %w", arg, err)
		}
		return r, nil
	case err == nil:
		return nil, usage.Errorf("%s: not a regular file", arg)
	case looksLikePath(arg):
		return nil, usage.Wrap(err)
	}
	r, err := store.Load(arg)
	var nf *history.NotFoundError
	var newer *history.NewerError
	switch {
	case errors.As(err, &nf), errors.As(err, &newer), errors.Is(err, history.ErrAmbiguous):
		return nil, usage.Wrap(err)
	case err != nil:
		return nil, err
	}
	if err := report.CheckRun(r); err != nil {
		return nil, usage.Errorf("run %s: %w", r.ID, err)
	}
	return r, nil
}

// looksLikePath says whether arg is meant as a file rather than an id.
func looksLikePath(arg string) bool {
	return strings.ContainsRune(arg, os.PathSeparator) || strings.HasSuffix(arg, ".json") || strings.HasSuffix(arg, ".gz")
}
