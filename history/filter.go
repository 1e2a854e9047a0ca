package history

import (
	"slices"
	"strings"

	"linerate/internal/usage"
)

// Kinds are the kinds of run the history keeps, in the order a list of
// them is shown.
var Kinds = []string{KindBench, KindSearch, KindFlows, KindPlan, KindDiagnose, KindTuneAuto}

// Filter picks runs from a list, newest first as List gives them: those
// of any of Kinds and made on any of Hosts (none given: any), then the
// newest Last of those (0: all).
type Filter struct {
	Kinds []string
	Hosts []string
	Last  int
}

// Check says what is wrong with f, as a usage.FieldError on Last or
// Kinds: a negative count, a kind the history does not keep.
func (f Filter) Check() error {
	if f.Last < 0 {
		return usage.Field("Last", "%d: negative", f.Last)
	}
	for _, k := range f.Kinds {
		if !slices.Contains(Kinds, k) {
			return usage.Field("Kinds", "%q: want %s", k, strings.Join(Kinds, ", "))
		}
	}
	return nil
}

// Apply returns the entries f picks, in their order; never nil, so that
// no runs is an empty list in JSON.
func (f Filter) Apply(entries []Entry) []Entry {
	out := []Entry{}
	for _, e := range entries {
		if (len(f.Kinds) == 0 || slices.Contains(f.Kinds, e.Kind)) && (len(f.Hosts) == 0 || slices.Contains(f.Hosts, e.Host)) {
			out = append(out, e)
		}
	}
	if f.Last > 0 && len(out) > f.Last {
		out = out[:f.Last]
	}
	return out
}
