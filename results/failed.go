package results

import "fmt"

// FlowsError is a FlowSet whose flows failed: how many of how many, and
// the first failed flow's error as it was recorded. A caller tests for it
// with errors.As.
type FlowsError struct {
	Failed, Of int
	First      string
}

func (e *FlowsError) Error() string {
	if e.Failed == e.Of {
		return "every flow failed: " + e.First
	}
	return fmt.Sprintf("%d of %d flows failed: %s", e.Failed, e.Of, e.First)
}

// Err is the set's failure, a *FlowsError, or nil when no flow failed. A
// flow failed when it has an error, or its result carries one (a
// target's included) or stopped early (Result.Problems).
func (s *FlowSet) Err() error {
	var first string
	n := 0
	for _, f := range s.Flows {
		errs := []string{f.Error}
		if f.Error == "" && f.Result != nil {
			errs = f.Result.Problems()
		}
		if len(errs) == 0 || errs[0] == "" {
			continue
		}
		if n == 0 {
			first = errs[0]
		}
		n++
	}
	if n == 0 {
		return nil
	}
	return &FlowsError{Failed: n, Of: len(s.Flows), First: first}
}
