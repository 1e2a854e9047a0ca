package cpuset

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseMask(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"", []int{}},
		{"0", []int{}},
		{"00000000,00000000", []int{}},
		{"1", []int{0}},
		{"3\n", []int{0, 1}},
		{"f", []int{0, 1, 2, 3}},
		{"c", []int{2, 3}},
		{"8", []int{3}}, // seed 002: echo 8 > rps_cpus
		{"00000000,00000003", []int{0, 1}},
		{"1,00000000", []int{32}},
		{"80000000,00000001", []int{0, 63}},
		{"1,3", []int{0, 1, 32}}, // a short low word is still a whole 32-bit word
		{"ff,ffffffff", seq(0, 39)},
		{"0xa", []int{1, 3}},
	}
	for _, tt := range tests {
		got, err := ParseMask(tt.in)
		if err != nil {
			t.Errorf("ParseMask(%q): %v", tt.in, err)
			continue
		}
		if !slices.Equal(got, tt.want) || got == nil {
			t.Errorf("ParseMask(%q) = %#v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseMaskErrors(t *testing.T) {
	for _, in := range []string{"g", "1,,2", "123456789", ",1", "1,", "-1", "f f"} {
		if got, err := ParseMask(in); err == nil {
			t.Errorf("ParseMask(%q) = %v, want an error", in, got)
		} else if !strings.Contains(err.Error(), "cpu mask") {
			t.Errorf("ParseMask(%q) error %q does not say what it parsed", in, err)
		}
	}
}

func TestFormatMask(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{nil, "0"},
		{[]int{}, "0"},
		{[]int{0}, "1"},
		{[]int{2, 3}, "c"},
		{[]int{3, 2, 2}, "c"},
		{[]int{32}, "1,00000000"},
		{[]int{0, 63}, "80000000,00000001"},
		{[]int{0, 64}, "1,00000000,00000001"},
		{[]int{-1, 1}, "2"},
	}
	for _, tt := range tests {
		if got := FormatMask(tt.in); got != tt.want {
			t.Errorf("FormatMask(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"", []int{}},
		{"\n", []int{}},
		{"0", []int{0}},
		{"0-1\n", []int{0, 1}},
		{"0-3,5", []int{0, 1, 2, 3, 5}},
		{"0-3,5,7-8", []int{0, 1, 2, 3, 5, 7, 8}},
		{"5,0-1,1", []int{0, 1, 5}},
		{"63", []int{63}},
	}
	for _, tt := range tests {
		got, err := ParseList(tt.in)
		if err != nil {
			t.Errorf("ParseList(%q): %v", tt.in, err)
			continue
		}
		if !slices.Equal(got, tt.want) || got == nil {
			t.Errorf("ParseList(%q) = %#v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseListErrors(t *testing.T) {
	for _, in := range []string{"a", "3-1", "1,,2", "-1", "0-", "1-2-3", "0-99999999", "1 2"} {
		if got, err := ParseList(in); err == nil {
			t.Errorf("ParseList(%q) = %v, want an error", in, got)
		} else if !strings.Contains(err.Error(), "cpu list") {
			t.Errorf("ParseList(%q) error %q does not say what it parsed", in, err)
		}
	}
}

func TestFormatList(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1, 2, 3, 5}, "0-3,5"},
		{[]int{5, 3, 2, 1, 0, 0}, "0-3,5"},
		{[]int{1, 3, 5}, "1,3,5"},
		{[]int{0, 1, 7, 8, 9, 31, 32}, "0-1,7-9,31-32"},
		{[]int{-2, 4}, "4"},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		if got := FormatList(in); got != tt.want {
			t.Errorf("FormatList(%v) = %q, want %q", tt.in, got, tt.want)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("FormatList changed its argument: %v, was %v", in, tt.in)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	sets := [][]int{{}, {0}, {1}, {0, 1}, {3}, {0, 2, 4, 6}, seq(0, 31), seq(0, 32), {31, 32}, {0, 63, 64, 100}, seq(5, 70)}
	for _, s := range sets {
		m := FormatMask(s)
		back, err := ParseMask(m)
		if err != nil || !slices.Equal(back, s) {
			t.Errorf("mask round trip %v → %q → %v, %v", s, m, back, err)
		}
		l := FormatList(s)
		back, err = ParseList(l)
		if err != nil || !slices.Equal(back, s) {
			t.Errorf("list round trip %v → %q → %v, %v", s, l, back, err)
		}
	}
	for _, m := range []string{"1", "c", "1,00000000", "80000000,00000001", "ff,ffffffff"} {
		s, err := ParseMask(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatMask(s); got != m {
			t.Errorf("mask %q → %v → %q", m, s, got)
		}
	}
}

// TestLiveIRQAffinity checks that the two files the kernel keeps for each
// IRQ describe the same set on this machine.
func TestLiveIRQAffinity(t *testing.T) {
	masks, _ := filepath.Glob("/proc/irq/*/smp_affinity")
	if len(masks) == 0 {
		t.Skip("no /proc/irq/*/smp_affinity on this machine")
	}
	for _, mf := range masks {
		m, err1 := os.ReadFile(mf)
		l, err2 := os.ReadFile(mf + "_list")
		if err1 != nil || err2 != nil {
			continue // an IRQ can vanish between glob and read
		}
		fromMask, err := ParseMask(string(m))
		if err != nil {
			t.Errorf("%s: %v", mf, err)
			continue
		}
		fromList, err := ParseList(string(l))
		if err != nil {
			t.Errorf("%s_list: %v", mf, err)
			continue
		}
		if !slices.Equal(fromMask, fromList) {
			t.Errorf("%s = %q → %v but _list = %q → %v", mf, m, fromMask, l, fromList)
		}
	}
}

func seq(a, b int) []int {
	var s []int
	for i := a; i <= b; i++ {
		s = append(s, i)
	}
	return s
}
