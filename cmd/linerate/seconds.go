package main

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// secondsValue is a duration flag that also takes bare seconds, as
// iperf3's -t and -i do: "5" and "5s" are the same, "0.5" is 500ms.
type secondsValue time.Duration

var _ pflag.Value = (*secondsValue)(nil)

func (s *secondsValue) String() string { return time.Duration(*s).String() }
func (s *secondsValue) Type() string   { return "duration" }

func (s *secondsValue) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e9 {
			return fmt.Errorf("%q: want seconds, like 10 or 1.5, or a duration like 500ms", v)
		}
		*s = secondsValue(f * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q: want seconds, like 10 or 1.5, or a duration like 500ms", v)
	}
	*s = secondsValue(d)
	return nil
}

// secondsVarP defines a duration flag that takes bare seconds too.
func secondsVarP(f *pflag.FlagSet, p *time.Duration, name, short string, value time.Duration, usage string) {
	*p = value
	f.VarP((*secondsValue)(p), name, short, usage)
}
