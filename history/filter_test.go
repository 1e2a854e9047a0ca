package history

import (
	"strings"
	"testing"

	"linerate/internal/usage"
)

func TestFilter(t *testing.T) {
	all := []Entry{
		{ID: "4", Kind: KindBench, Host: "a"},
		{ID: "3", Kind: KindPlan, Host: "b"},
		{ID: "2", Kind: KindBench, Host: "b"},
		{ID: "1", Kind: KindDiagnose, Host: "a"},
	}
	ids := func(es []Entry) string {
		var s []string
		for _, e := range es {
			s = append(s, e.ID)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		f    Filter
		want string
	}{
		{Filter{}, "4,3,2,1"},
		{Filter{Kinds: []string{KindBench}}, "4,2"},
		{Filter{Hosts: []string{"b"}}, "3,2"},
		{Filter{Kinds: []string{KindBench, KindDiagnose}, Hosts: []string{"a"}}, "4,1"},
		{Filter{Last: 2}, "4,3"},
		{Filter{Kinds: []string{KindBench}, Last: 1}, "4"},
		{Filter{Hosts: []string{"c"}}, ""},
	} {
		got := c.f.Apply(all)
		if got == nil || ids(got) != c.want {
			t.Errorf("%+v: %q (nil %v), want %q", c.f, ids(got), got == nil, c.want)
		}
	}
}

func TestFilterCheck(t *testing.T) {
	flags := map[string]string{"Last": "--last", "Kinds": "--kind"}
	for f, want := range map[*Filter]string{
		{Last: -1}:                      "--last -1: negative",
		{Kinds: []string{"bench", "x"}}: `--kind "x": want bench, search, flows, plan, diagnose, tune-auto`,
	} {
		err := usage.Flags(f.Check(), flags)
		if !usage.Is(err) || err.Error() != want {
			t.Errorf("%+v: %v, want bad input %q", *f, err, want)
		}
	}
	if err := (Filter{Kinds: Kinds, Last: 3}).Check(); err != nil {
		t.Errorf("every kind: %v", err)
	}
}
