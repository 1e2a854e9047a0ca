package diagnose

import (
	"fmt"

	"linerate/internal/units"
	"linerate/results"
)

// generatorLimited: the measurement was the bottleneck, not the device
// under test: the sender could not reach the asked rate, a sender thread sat
// at 100 % of a CPU, or nothing was lost and the receiver had room.
type generatorLimited struct{}

func (generatorLimited) ID() string { return "generator-limited" }
func (generatorLimited) Explain() string {
	return "the load generator, not the box, limited the result"
}

func (generatorLimited) Check(ev *Evidence) []Finding {
	l := ev.Load
	if l == nil || l.SentPPS <= 0 {
		return nil
	}
	var why []string
	if l.AskedPPS > 0 && l.SentPPS < results.MetRate*l.AskedPPS {
		why = append(why, fmt.Sprintf("sent %s of the %s asked", rate(l.SentPPS), rate(l.AskedPPS)))
	}
	if l.SenderBusy >= results.BusyThread*100 {
		why = append(why, fmt.Sprintf("busiest sender thread at %s of a CPU", pct(l.SenderBusy)))
	}
	if l.SenderLimited && len(why) == 0 {
		why = append(why, "the run's verdict named the sender as its limit")
	}
	if len(why) == 0 {
		return nil
	}
	if l.LossRatio > results.Lossy {
		// The path dropped packets too; the box is (also) a limit.
		return nil
	}
	f := Finding{Severity: Warning, Subject: "generator",
		Summary:  fmt.Sprintf("the load generator limited this run: %s received with %s loss", rate(l.ReceivedPPS), units.Percent(l.LossRatio, 2)),
		Evidence: why,
		Fixes: []Fix{{Kind: FixBench, Target: "generator", Value: "more --threads, --engine ring, or a second sending host",
			Note: "the box under test has headroom this run could not show"}}}
	if l.Local {
		f.Evidence = append(f.Evidence, "the generator ran on the box under test and competes with it for CPU")
	}
	return []Finding{f}
}
