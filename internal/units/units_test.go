package units

import (
	"math"
	"testing"
)

// The figures the five formatters this package replaced wrote, each
// column in the style that now writes it: traffic's siFormat (Sig(4)),
// tune auto's (Rate), the live view's (Short), the bench report's
// (Fixed.Unit with no space) and the report page's (Trim(2)).
func TestStyles(t *testing.T) {
	for _, c := range []struct {
		v                               float64
		sig4, rate, short, bench, trim2 string
	}{
		{0, "0", "0 pps", "0", "0b/s", "0"},
		{0.0012, "0.0012", "0 pps", "0", "0b/s", "0.0012"},
		{0.4, "0.4", "0 pps", "0", "0b/s", "0.4"},
		{0.5, "0.5", "0 pps", "0", "0b/s", "0.5"},
		{1, "1", "1 pps", "1", "1b/s", "1"},
		{12.5, "12.5", "12 pps", "12", "12b/s", "12.5"},
		{950, "950", "950 pps", "950", "950b/s", "950"},
		{999.4, "999.4", "999 pps", "999", "999b/s", "999.4"},
		{1000, "1k", "1.0 kpps", "1k", "1.0kb/s", "1k"},
		{12345, "12.35k", "12.3 kpps", "12.3k", "12.3kb/s", "12.35k"},
		{312400, "312.4k", "312.4 kpps", "312k", "312.4kb/s", "312.4k"},
		{1.5e6, "1.5M", "1.50 Mpps", "1.5M", "1.50Mb/s", "1.5M"},
		{1.488095e6, "1.488M", "1.49 Mpps", "1.49M", "1.49Mb/s", "1.49M"},
		{941.23e6, "941.2M", "941.23 Mpps", "941M", "941.23Mb/s", "941.23M"},
		{1e9, "1G", "1.00 Gpps", "1G", "1.00Gb/s", "1G"},
		{9.41e9, "9.41G", "9.41 Gpps", "9.41G", "9.41Gb/s", "9.41G"},
		{123.456e9, "123.5G", "123.46 Gpps", "123G", "123.46Gb/s", "123.46G"},
		{-4.2, "-4.2", "-4 pps", "-4", "-4b/s", "-4.2"},
	} {
		for _, got := range []struct{ style, got, want string }{
			{"Sig(4)", Sig(4).Format(c.v), c.sig4},
			{"Rate", Rate(c.v, "pps"), c.rate},
			{"Short", Short.Format(c.v), c.short},
			{"Fixed", Fixed.Unit(c.v, "b/s"), c.bench},
			{"Trim(2)", Trim(2).Format(c.v), c.trim2},
		} {
			if got.got != got.want {
				t.Errorf("%s(%v) = %q, want %q", got.style, c.v, got.got, got.want)
			}
		}
	}
}

// Where the old formatters were wrong: a figure that rounded up to 1000
// of a prefix kept it ("1000.0 kpps", "1000k"), a figure of a trillion
// or more had no T ("1500.00 Gpps", "1.5e+03G"), and the bench report
// scaled no negative figure ("-312400b/s").
func TestRollover(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Rate(999.6, "pps"), "1.0 kpps"},           // was "1000 pps"
		{Rate(999999, "pps"), "1.00 Mpps"},         // was "1000.0 kpps"
		{Rate(1.5e12, "pps"), "1.50 Tpps"},         // was "1500.00 Gpps"
		{Sig(4).Format(999.97), "1k"},              // was "1000"
		{Sig(4).Format(999999), "1M"},              // was "1000k"
		{Sig(4).Format(1.5e12), "1.5T"},            // was "1500G"
		{Short.Format(999.6), "1k"},                // as before
		{Short.Format(999.9e6), "1G"},              // as before
		{Short.Format(1.5e12), "1.5T"},             // was "1.5e+03G"
		{Trim(2).Format(999999), "1M"},             // was "1000k"
		{Trim(2).Format(1.5e12), "1.5T"},           // as before
		{Fixed.Unit(-312400, "b/s"), "-312.4kb/s"}, // was "-312400b/s"
		{Short.Format(-0.4), "0"},
		{Fixed.Format(2e15), "2000.00T"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestSplit(t *testing.T) {
	num, prefix := Fixed.Split(312400)
	if num != "312.4" || prefix != "k" {
		t.Errorf("Fixed.Split(312400) = %q, %q", num, prefix)
	}
	if got := Rate(312400, "pps"); got != "312.4 kpps" {
		t.Errorf("Rate = %q", got)
	}
}

func TestPercent(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Percent(0.04123, 2), "4.12 %"},
		{Percent(0.04123, 3), "4.123 %"},
		{Percent(0, 3), "0.000 %"},
		{Percent(1, 0), "100 %"},
		{Percent(0.005, -1), "0.5 %"},
		{SignedPercent(0.041, 1), "+4.1 %"},
		{SignedPercent(-0.003, 1), "-0.3 %"},
		{SignedPercent(0, 1), "+0.0 %"},
		{Percent(math.NaN(), 1), "NaN %"},
		{SignedPercent(math.Inf(1), 1), "+Inf %"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// The figures ceiling's FormatBps, FormatCount and FormatSpeed wrote
// before they moved here; Bps now carries a figure that rounds up to
// 1000 of a prefix to the next one.
func TestBpsCountSpeed(t *testing.T) {
	for v, want := range map[float64]string{
		1e9: "1 Gb/s", 2.5e9: "2.5 Gb/s", 3.3498e9: "3.35 Gb/s", 941_482_444.7: "941.5 Mb/s", 100e6: "100 Mb/s",
		1500: "1.5 kb/s", 12: "12 b/s", 3e12: "3 Tb/s", 0: "0 b/s", 999.96e6: "1 Gb/s",
	} {
		if got := Bps(v); got != want {
			t.Errorf("Bps(%g) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1_488_095.9: "1,488,095", 14_880_952: "14,880,952", -1: "-", math.NaN(): "-"} {
		if got := Count(v); got != want {
			t.Errorf("Count(%g) = %q, want %q", v, got, want)
		}
	}
	for bps, want := range map[int64]string{
		100_000_000: "100M", 1_000_000_000: "1G", 2_500_000_000: "2.5G", 10_000_000_000: "10G", 999: "999", 1500: "1.5K", 3e12: "3T",
	} {
		if got := Speed(bps); got != want {
			t.Errorf("Speed(%d) = %q, want %q", bps, got, want)
		}
	}
}
