//go:build !small

package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"linerate/ceiling"
	"linerate/history"
	"linerate/internal/usage"
	"linerate/report"
	"linerate/search"
	"linerate/traffic"
	"linerate/wire"
)

// searchOptions are the flags of `bench udp --search`.
type searchOptions struct {
	goals     string
	sizes     string
	loss      string
	precision string
	trial     time.Duration
	maxTrial  time.Duration
}

const searchExample = `  linerate bench udp --to 10.0.0.2 --search ndr,pdr       # RFC 2544 throughput per frame size
  linerate bench udp --to 10.0.0.2 --search ndr --sizes 64,1518 --precision 0.5% --trial 5s`

func (o *searchOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&o.goals, "search", "", "search the zero-loss rate per frame size instead of one test: ndr (no loss), pdr (loss ≤ --loss) or ndr,pdr (docs/search.md)")
	f.StringVar(&o.sizes, "sizes", "64,128,256,512,1024,1280,1518", "frame sizes to search, FCS included, imix, or mixes SIZE:WEIGHT,... (64:7,570:4,1518:1; a ; ends a mix); RFC 2544's sizes by default")
	f.StringVar(&o.loss, "loss", "0.5%", "loss ratio the PDR allows")
	f.StringVar(&o.precision, "precision", "1%", "the search's final precision: the rate found is within this below the slowest failing one")
	secondsVarP(f, &o.trial, "trial", "", 2*time.Second, "duration of the search's final trials (the first ones are shorter)")
	secondsVarP(f, &o.maxTrial, "max-trial", "", 0, "longest a final trial over the path's ceiling runs, so that the path's queues cannot hide its loss; 0: 10 × --trial (docs/bench.md)")
}

func (o *searchOptions) asked() bool { return o.goals != "" }

// config reads the search flags.
func (o *searchOptions) config() (traffic.SearchConfig, error) {
	var sc traffic.SearchConfig
	loss, err := percent("--loss", o.loss)
	if err != nil {
		return sc, err
	}
	for _, g := range strings.Split(o.goals, ",") {
		switch strings.TrimSpace(strings.ToLower(g)) {
		case "ndr":
			sc.Goals = append(sc.Goals, search.NDR)
		case "pdr":
			sc.Goals = append(sc.Goals, search.PDR(loss))
		default:
			return sc, usage.Errorf("--search %q: want ndr, pdr or ndr,pdr", o.goals)
		}
	}
	if len(sc.Goals) == 2 && sc.Goals[0].Name == sc.Goals[1].Name {
		return sc, usage.Errorf("--search %q: %s given twice", o.goals, sc.Goals[0].Name)
	}
	if sc.Sizes, err = ceiling.ParseMixes(o.sizes); err != nil {
		return sc, usage.Errorf("--sizes %q: %w", o.sizes, err)
	}
	if sc.Precision, err = percent("--precision", o.precision); err != nil {
		return sc, err
	}
	sc.Trial, sc.MaxTrial = o.trial, o.maxTrial
	return sc, usage.Flags(sc.Check(), benchFlags)
}

// percent reads a flag given as a percentage ("0.5%") as a ratio.
func percent(flag, s string) (float64, error) {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || v < 0 || v >= 100 {
		return 0, usage.Errorf("%s %q: want a percentage such as 0.5%%", flag, s)
	}
	return v / 100, nil
}

// searchConfig checks the flags of a search and reads its settings.
func (o *benchOptions) searchConfig(cmd *cobra.Command, proto wire.Proto) (traffic.SearchConfig, error) {
	changed := cmd.Flags().Changed
	switch {
	case proto != wire.UDP:
		return traffic.SearchConfig{}, usage.Errorf("--search: UDP only")
	case o.jsonStream:
		return traffic.SearchConfig{}, usage.Errorf("--search and --json-stream: give one (--json prints the search)")
	case changed("size") || changed("payload"):
		return traffic.SearchConfig{}, usage.Errorf("--search takes its frame sizes from --sizes, not --size or --payload")
	case changed("rate"):
		return traffic.SearchConfig{}, usage.Errorf("--search chooses the rates: drop --rate")
	case changed("duration") || changed("warmup"):
		return traffic.SearchConfig{}, usage.Errorf("--search runs trials of --trial without warmup: drop --duration and --warmup")
	}
	return o.search.config()
}

// runSearch runs `bench udp --search`: the zero-loss search per frame
// size, progress on stderr, the table (or JSON) on stdout.
func (o *benchOptions) runSearch(cmd *cobra.Command, proto wire.Proto) error {
	sc, err := o.searchConfig(cmd, proto)
	if err != nil {
		return err
	}
	cfg, err := o.config(proto, cmd.Flags().Changed)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	warn(stderr, o.warnings)
	sc.Latency = cfg.Spec.ProbeInterval > 0
	sc.Progress = func(line string) { fmt.Fprintln(stderr, "search:", line) }
	ends := openEndCounters()
	defer ends.close()
	cfg.Drops, cfg.Machine = ends.drops(), ends.machine
	res, runErr := traffic.RunSearch(cmd.Context(), cfg, sc)
	runErr = usage.Flags(runErr, benchFlags)
	if res == nil {
		return runErr
	}
	if o.out != "" {
		if err := saveResult(o.out, res); err != nil {
			return err
		}
	}
	o.history.save(cmd, history.KindSearch, res)
	stdout := cmd.OutOrStdout()
	if o.json {
		err = report.BenchJSON(stdout, res)
	} else {
		err = report.BenchSearch(stdout, res)
	}
	if err != nil {
		return err
	}
	if res.Interrupted {
		return errInterrupted
	}
	return runErr
}
