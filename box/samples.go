package box

import (
	"fmt"

	"linerate/source"
)

// SampledRates reads a capture's timed samples and returns the rates
// between consecutive ones. A source without samples gives none.
func SampledRates(src source.Source) ([]Rates, error) {
	samples, err := src.Samples()
	if err != nil {
		return nil, err
	}
	var rates []Rates
	var prev *Counters
	for i, s := range samples {
		c, err := ReadCounters(s.Proc, s.Ethtool, nil)
		if err != nil {
			return nil, fmt.Errorf("sample %03d: %w", i, err)
		}
		c.Time = s.Time
		if prev != nil {
			if !c.Time.After(prev.Time) {
				return nil, fmt.Errorf("sample %03d: time %s is not after the previous sample's", i, c.Time)
			}
			rates = append(rates, Delta(*prev, c))
		}
		prev = &c
	}
	return rates, nil
}
