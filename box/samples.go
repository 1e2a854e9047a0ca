package box

import (
	"context"
	"fmt"

	"linerate/source"
)

// CollectSampled models src (Collect) and reads the rates between its
// timed samples (SampledRates): the evidence a capture gives diagnose. The
// box is nil when it could not be modelled; with a box and an error, only
// the samples could not be read.
func CollectSampled(ctx context.Context, src source.Source) (*Box, []Rates, error) {
	b, err := Collect(ctx, src)
	if err != nil {
		return nil, nil, err
	}
	rates, err := SampledRates(src)
	if err != nil {
		return b, nil, err
	}
	return b, rates, nil
}

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
