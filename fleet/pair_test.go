package fleet

import (
	"errors"
	"io"
	"strings"
	"testing"

	"linerate/internal/usage"
)

func TestPairFlows(t *testing.T) {
	for _, c := range []struct {
		from, to []string
		want     string // each pair as FROM>TO,TO; ...
	}{
		{[]string{"a", "b"}, []string{"x", "y"}, "a:7557>x; b:7557>y"},
		{[]string{"a"}, []string{"x", "y"}, "a:7557>x,y"},
		{[]string{"a", "b"}, []string{"x"}, "a:7557>x; b:7557>x"},
	} {
		ps, err := PairFlows(c.from, c.to)
		if err != nil {
			t.Fatalf("PairFlows(%q, %q): %v", c.from, c.to, err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.From.String()+">"+strings.Join(p.To, ","))
		}
		if strings.Join(got, "; ") != c.want {
			t.Errorf("PairFlows(%q, %q) = %q, want %q", c.from, c.to, strings.Join(got, "; "), c.want)
		}
	}
}

// Bad input names the field, which a command maps to its flag.
func TestPairFlowsBadInput(t *testing.T) {
	flags := map[string]string{"From": "--from", "To": "--to", "Sample": "--sample"}
	for _, c := range []struct {
		from, to []string
		want     string
	}{
		{[]string{"ssh://"}, []string{"x"}, `--from "ssh://": `},
		{[]string{"a"}, []string{"ssh://b"}, `--to "ssh://b": a flow's target must be an agent the sender can reach`},
		{[]string{"a", "b", "c"}, []string{"x", "y"}, "--to gives 2 targets for 3 senders: give as many of each"},
	} {
		_, err := PairFlows(c.from, c.to)
		if err = usage.Flags(err, flags); !usage.Is(err) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("PairFlows(%q, %q): %v, want bad input starting %q", c.from, c.to, err, c.want)
		}
	}
	_, err := ParseSample([]string{"ssh://"}, io.Discard)
	var fe *usage.FieldError
	if !errors.As(err, &fe) || fe.Field != "Sample" {
		t.Errorf("ParseSample(ssh://): %v, want a field error on Sample", err)
	}
}
