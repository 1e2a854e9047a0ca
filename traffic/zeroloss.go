package traffic

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"linerate/ceiling"
	"linerate/internal/units"
	"linerate/internal/usage"
	"linerate/internal/version"
	"linerate/ledger"
	"linerate/results"
	"linerate/search"
	"linerate/wire"
)

// RunSearch runs the zero-loss search of sc against cfg's targets: cfg is
// the test of every trial (its rate, duration, warmup and probes are the
// search's). The result holds the search per size in Search; a result
// with what was found so far comes back with an error or an interruption.
func RunSearch(ctx context.Context, cfg Config, sc SearchConfig) (*results.Result, error) {
	if err := sc.Check(); err != nil {
		return nil, err
	}
	if cfg.Spec.Proto != wire.UDP {
		return nil, usage.Errorf("a zero-loss search runs over UDP, not %s", cfg.Spec.Proto)
	}
	cfg.OnInterval, cfg.Idle = nil, 0
	cfg.Spec.Warmup = 0
	probe := cfg.Spec.ProbeInterval
	cfg.Spec.ProbeInterval = 0
	res := &results.Result{Schema: results.ResultSchema, Linerate: version.Version, Time: time.Now().UTC(), Spec: cfg.Spec, Engine: cfg.Engine}
	for _, m := range sc.Sizes {
		s := sizeSearch{cfg: cfg, sc: &sc, mix: m, probe: probe}
		out, err := s.run(ctx, m)
		if out != nil {
			res.Search = append(res.Search, *out)
		}
		// What the trials' engine said (auto's choice, a bypassed
		// qdisc), once.
		if s.first != nil {
			res.Engine = s.first.Engine
			for _, n := range s.first.Notes {
				if !slices.Contains(res.Notes, n) {
					res.Notes = append(res.Notes, n)
				}
			}
		}
		if ctx.Err() != nil {
			res.Interrupted = true
			return res, nil
		}
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
			return res, fmt.Errorf("search at %s bytes: %w", m.Name, err)
		}
	}
	return res, nil
}

// senderShort is the share of a trial's frames below which the sender
// fell short of the rate asked: a paced sender that keeps up sends what
// its pacer allowed, give or take the batch under way at the end
// (docs/benchmarks.md, "Rate accuracy"), so one 2 % short could not keep
// up.
const senderShort = 0.98

// sizeSearch is the search of one frame size.
type sizeSearch struct {
	cfg    Config
	sc     *SearchConfig
	mix    ceiling.Mix
	probe  wire.Seconds
	trials int
	last   *results.Result // the latest trial's result
	first  *results.Result // the first trial's: the path's ceiling, the engine's notes
	// lossy are the ledgers of the final-duration trials that lost
	// frames, by rate.
	lossy map[float64]*ledger.Ledger
	// cuts say which trials ran again because a link went down in them.
	cuts []string
}

// run finds the path's ceiling and the sender's maximum with one short
// trial at full speed, searches below it, then measures latency and the
// ledger where the loss begins.
func (s *sizeSearch) run(ctx context.Context, m ceiling.Mix) (*results.SizeSearch, error) {
	first := max(s.sc.Trial/10, 100*time.Millisecond)
	if _, err := s.trial(ctx, search.TrialSpec{Duration: first}); err != nil {
		return nil, err
	}
	s.first = s.last
	sum := s.last.Summary
	maxRate := sum.SentPPS
	var ceil float64
	var buf *search.Buffering
	if lim := sum.PathCeiling; lim != nil {
		// A little over the ceiling, so that the search sees it fail
		// (the sender permitting).
		ceil = lim.FPS
		maxRate = min(maxRate, 1.1*ceil)
		// What the path holds ahead of the ceiling sets how long a final
		// trial over it runs.
		buf = results.SearchBuffering(s.first, *lim, m)
	}
	if maxRate <= 0 {
		return nil, fmt.Errorf("nothing was sent at full speed")
	}
	sr, err := search.Run(ctx, search.Config{Goals: s.sc.Goals, MinRate: maxRate / 1000, MaxRate: maxRate,
		Precision: s.sc.Precision, FinalTrial: s.sc.Trial, Buffering: buf, LongestTrial: s.sc.longest()}, s.trial)
	out := &results.SizeSearch{SizeResult: search.Summarize(m, sr)}
	out.CeilingPPS = ceil
	if lim := sum.PathCeiling; lim != nil {
		out.Notes = overCeiling(out, *lim, s.cfg.Spec.Proto)
	}
	defer func() { out.Notes = append(out.Notes, s.cuts...) }()
	if err != nil {
		return out, err
	}
	if s.sc.Latency && s.probe > 0 {
		rate := out.PDRPPS
		if rate == 0 {
			rate = out.NDRPPS
		}
		if rate > 0 {
			out.Latency, err = search.LatencySteps(ctx, s.latencyTrial, rate, s.sc.Trial)
			if err != nil {
				return out, err
			}
		}
	}
	out.Ledger = s.lossBegins(out.LossBeginsPPS)
	return out, nil
}

// overCeiling flags an NDR or PDR over what the path's ceiling lim
// carries (a PDR: the ceiling plus the loss it allows) and says why the
// trials did not show the loss: no rate the path cannot carry is
// reported as if it did.
func overCeiling(out *results.SizeSearch, lim ceiling.PathLimit, proto wire.Proto) []string {
	var notes []string
	for _, g := range []struct {
		name   string
		pps    float64
		loss   float64
		trial  time.Duration
		capped bool
	}{{"NDR", out.NDRPPS, 0, out.NDRTrial, out.NDRCapped}, {"PDR", out.PDRPPS, out.PDRLoss, out.PDRTrial, out.PDRCapped}} {
		if lim.FPS <= 0 || g.pps <= lim.FPS/(1-g.loss) {
			continue
		}
		notes = append(notes, fmt.Sprintf("the %s of %s is %s of the path's ceiling of %s (%s on %s %s): %s",
			g.name, units.Rate(g.pps, "fps"), units.Percent(g.pps/lim.FPS, 1), units.Rate(lim.FPS, "fps"), lim.What, lim.Host, lim.Iface,
			overCeilingWhy(out, lim, proto, g.pps, g.loss, g.trial, g.capped)))
	}
	return notes
}

// overCeilingWhy says why a rate of pps over the ceiling lim passed its
// final trial of d losing at most loss (capped: d was cut to the longest
// allowed).
func overCeilingWhy(out *results.SizeSearch, lim ceiling.PathLimit, proto wire.Proto, pps, loss float64, d time.Duration, capped bool) string {
	wrong := "more than the path can carry, so its model or the path is not what linerate thinks; " + results.OverCeilingSuspects(proto, lim)
	b := out.Buffering
	trial := d.Round(time.Millisecond).String()
	switch {
	case pps > results.OverCeiling*lim.FPS:
		return wrong
	case b == nil:
		return fmt.Sprintf("the path's buffering ahead of the ceiling is not known (the queue of its root qdisc was not read), so its final trials of %s could not be made long enough to overflow it: a queue takes the excess of a short trial, and the path may carry less than this", trial)
	case pps > b.Hides(d, loss):
		return fmt.Sprintf("its trial of %s should have overflowed the path's buffering of %s frames (%s): %s",
			trial, units.Count(b.Frames), b.What, wrong)
	}
	held := fmt.Sprintf("the path's buffering of %s frames (%s) takes that much of the excess, so a trial of %s passes rates up to %s",
		units.Count(b.Frames), b.What, trial, units.Rate(b.Hides(d, loss), "fps"))
	if capped {
		return fmt.Sprintf("its trial of %s, the longest allowed (--max-trial), could not show the loss: %s; a longer --max-trial would tell", trial, held)
	}
	return fmt.Sprintf("its trial of %s lost less than the path does once its queues are full: %s, losing at most %s of what it sends", trial, held, units.Percent(loss, -1))
}

// trial runs one test at spec's rate (0: as fast as possible) for its
// duration, without warmup.
func (s *sizeSearch) trial(ctx context.Context, spec search.TrialSpec) (search.TrialResult, error) {
	return s.runTrial(ctx, spec, 0)
}

// latencyTrial is a trial with latency probes.
func (s *sizeSearch) latencyTrial(ctx context.Context, spec search.TrialSpec) (search.TrialResult, error) {
	return s.runTrial(ctx, spec, s.probe)
}

func (s *sizeSearch) runTrial(ctx context.Context, spec search.TrialSpec, probe wire.Seconds) (search.TrialResult, error) {
	c := s.cfg
	c.FrameSize, c.Mix = 0, s.mix
	if len(s.mix.Parts) == 1 {
		c.FrameSize, c.Mix = s.mix.Parts[0].Bytes, ceiling.Mix{}
	}
	c.Spec.Payload = 0
	c.Spec.Rate = wire.Rate{PPS: spec.Rate}
	c.Spec.Duration = wire.Seconds(spec.Duration)
	c.Spec.ProbeInterval = probe
	var res *results.Result
	for try := 1; ; try++ {
		r, err := Run(ctx, c)
		if err != nil {
			return search.TrialResult{}, err
		}
		if r.Interrupted {
			return search.TrialResult{}, ctx.Err()
		}
		res = r
		if len(r.LinkEvents) == 0 {
			break
		}
		// A link of the path went down: the trial's loss is the cut's,
		// not the device's at this rate. It runs again.
		var evs []string
		for _, e := range r.LinkEvents {
			evs = append(evs, e.Describe(len(r.Targets) > 1))
		}
		what := fmt.Sprintf("the trial at %s for %s (try %d of %d): %s", trialRate(spec.Rate), spec.Duration.Round(time.Millisecond),
			try, linkTries, strings.Join(evs, "; "))
		if try == linkTries {
			return search.TrialResult{}, fmt.Errorf("%s: a link of the path went down in every try, so the search cannot tell the device's loss from the cuts", what)
		}
		s.cuts = append(s.cuts, what+": its loss was the cut's, so it ran again")
		if s.sc.Progress != nil {
			s.sc.Progress(fmt.Sprintf("%s B: %s: run again", s.mix.Name, what))
		}
	}
	s.last = res
	s.trials++
	sum := res.Summary
	if sum.LostPackets > 0 && spec.Duration >= s.sc.Trial && res.Ledger != nil {
		if s.lossy == nil {
			s.lossy = map[float64]*ledger.Ledger{}
		}
		s.lossy[spec.Rate] = res.Ledger
	}
	tr := search.TrialResult{Sent: sum.SentPackets, Received: sum.SentPackets - min(sum.LostPackets, sum.SentPackets), Seconds: sum.Seconds}
	short := ""
	if asked := spec.Rate * sum.Seconds; spec.Rate > 0 && float64(tr.Sent) < senderShort*asked {
		// The sender could not keep the rate: the frames it did not send
		// count as lost, so that the search never reports a rate that was
		// not sent.
		tr.Sent = uint64(math.Ceil(asked))
		short = fmt.Sprintf(" (the sender sent %d of %.0f: the rest counts as lost)", sum.SentPackets, asked)
	}
	if l := sum.LatencyLoad; l != nil && l.Received > 0 {
		ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
		tr.Latency = &search.Latency{P50: ms(l.P50), P90: ms(l.P90), P99: ms(l.P99), Max: ms(l.Max)}
	}
	if s.sc.Progress != nil {
		s.sc.Progress(fmt.Sprintf("%s B: trial %d at %s for %s: sent %d, lost %d (%s)%s",
			s.mix.Name, s.trials, trialRate(spec.Rate), spec.Duration.Round(time.Millisecond), tr.Sent, tr.Sent-tr.Received, units.Percent(tr.LossRatio(), 3), short))
	}
	return tr, nil
}

// linkTries is how many times a trial runs while a link of the path goes
// down during it, before the search gives up.
const linkTries = 3

// trialRate names a trial's rate: packets per second, or full speed for 0.
func trialRate(pps float64) string {
	if pps > 0 {
		return units.Rate(pps, "pps")
	}
	return "full speed"
}

// lossBegins is the ledger of the final-duration trial that lost frames
// at the rate closest to rate (the slowest that lost): where the loss
// begins. nil when no such trial lost any.
func (s *sizeSearch) lossBegins(rate float64) *ledger.Ledger {
	var best *ledger.Ledger
	dist := math.Inf(1)
	for r, l := range s.lossy {
		if d := math.Abs(r - rate); d < dist {
			best, dist = l, d
		}
	}
	return best
}
