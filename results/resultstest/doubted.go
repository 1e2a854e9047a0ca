// Package resultstest holds checks of results that tests of several
// packages share: what a client made of a stand-in peer's figures.
// It is apart from internal/testenv, which packages below results use.
package resultstest

import (
	"errors"
	"strings"
	"testing"

	"linerate/results"
)

// CheckDoubted checks a run against a stand-in peer: with want "", that
// its figures were believed (no error, nothing marked); else that target
// 0 is marked not credible with a reason holding want, that the run's
// error wraps results.ErrNotCredible and says it, and that the result's
// problems (what bench exits 1 on) say it too.
func CheckDoubted(t testing.TB, res *results.Result, err error, want string) {
	t.Helper()
	tr := res.Targets[0]
	t.Logf("error %v; not credible %q", err, tr.NotCredible)
	if want == "" {
		if err != nil || len(tr.NotCredible) > 0 {
			t.Errorf("the peer's own figures: error %v, not credible %q", err, tr.NotCredible)
		}
		return
	}
	if !errors.Is(err, results.ErrNotCredible) || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want results.ErrNotCredible with %q", err, want)
	}
	if !strings.Contains(strings.Join(tr.NotCredible, "\n"), want) {
		t.Errorf("not credible %q, want %q", tr.NotCredible, want)
	}
	if !strings.Contains(strings.Join(res.Problems(), "\n"), want) {
		t.Errorf("the result's problems (what bench exits 1 on) %q lack %q", res.Problems(), want)
	}
}
