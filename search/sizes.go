package search

import (
	"context"
	"fmt"
	"time"

	"linerate/ceiling"
	"linerate/internal/units"
)

// SizeResult is the search of one frame size, as a bench result holds it
// (docs/bench.md, "search").
type SizeResult struct {
	// Size is the frame size in bytes ("64") or "imix".
	Size string `json:"size"`
	// FrameBytes is the (mean) frame size, FCS included.
	FrameBytes float64 `json:"frame_bytes"`
	NDRPPS     float64 `json:"ndr_pps"`
	PDRPPS     float64 `json:"pdr_pps,omitempty"`
	// NDRBps and PDRBps count whole frames (destination MAC through FCS),
	// as --size does.
	NDRBps float64 `json:"ndr_bps"`
	PDRBps float64 `json:"pdr_bps,omitempty"`
	// PDRLoss is the loss ratio the PDR allows.
	PDRLoss float64 `json:"pdr_loss,omitempty"`
	// LossBeginsPPS is the slowest final-duration rate that lost frames:
	// where a drop ledger shows why. 0 when the maximum lost nothing.
	LossBeginsPPS float64 `json:"loss_begins_pps,omitempty"`
	// CeilingPPS is the path's ceiling for this size when known: NDR over
	// it is the share of line rate.
	CeilingPPS float64 `json:"ceiling_pps,omitempty"`
	// FinalTrial is the final trials' duration; a final trial over the
	// ceiling ran up to LongestTrial, so that the path's Buffering (nil:
	// not known) could not hide its loss. NDRTrial and PDRTrial are the
	// longest final trials each rate passed; NDRCapped and PDRCapped say
	// that trial was cut to LongestTrial short of what the buffering
	// asked.
	FinalTrial   time.Duration `json:"final_trial_ns"`
	LongestTrial time.Duration `json:"longest_trial_ns,omitempty"`
	Buffering    *Buffering    `json:"buffering,omitempty"`
	NDRTrial     time.Duration `json:"ndr_trial_ns,omitempty"`
	PDRTrial     time.Duration `json:"pdr_trial_ns,omitempty"`
	NDRCapped    bool          `json:"ndr_capped,omitempty"`
	PDRCapped    bool          `json:"pdr_capped,omitempty"`
	Trials       []Record      `json:"trials"`
	// Latency holds the latency steps at 10, 50 and 90 % of the PDR, when
	// run.
	Latency []Record `json:"latency,omitempty"`
}

// Summarize turns a search of frames like mix into a SizeResult.
func Summarize(mix ceiling.Mix, res Result) SizeResult {
	s := SizeResult{Size: mix.Name, FrameBytes: mix.MeanBytes(), Trials: res.Trials,
		FinalTrial: res.FinalTrial, LongestTrial: res.LongestTrial, Buffering: res.Buffering}
	bits := mix.MeanBytes() * 8
	if g, ok := res.Goal(NDR.Name); ok {
		s.NDRPPS, s.NDRBps, s.LossBeginsPPS = g.Rate, g.Rate*bits, g.Upper
		s.NDRTrial, s.NDRCapped = g.Trial, g.Capped
	}
	if g, ok := res.Goal("pdr"); ok {
		s.PDRPPS, s.PDRBps, s.PDRLoss = g.Rate, g.Rate*bits, g.Goal.LossRatio
		s.PDRTrial, s.PDRCapped = g.Trial, g.Capped
		if s.LossBeginsPPS == 0 {
			s.LossBeginsPPS = g.Upper
		}
	}
	return s
}

// LatencyShares are the loads of the latency steps, as shares of the PDR
// (CSIT measures latency at 10, 50 and 90 % of its PDR).
var LatencyShares = []float64{0.1, 0.5, 0.9}

// LatencySteps runs one trial of duration d at each LatencyShares of pdr
// frames per second; trial should fill TrialResult.Latency. The caller runs
// it after the search, when it wants latency.
func LatencySteps(ctx context.Context, trial Trial, pdr float64, d time.Duration) ([]Record, error) {
	if pdr <= 0 {
		return nil, fmt.Errorf("latency steps: no PDR to take shares of")
	}
	var out []Record
	for _, share := range LatencyShares {
		spec := TrialSpec{Rate: pdr * share, Duration: d}
		r, err := trial(ctx, spec)
		if err != nil {
			return out, fmt.Errorf("latency step at %s of the PDR: %w", units.Percent(share, 0), err)
		}
		out = append(out, Record{Purpose: PurposeLatency, Spec: spec, Result: r, Loss: r.LossRatio()})
	}
	return out, nil
}
