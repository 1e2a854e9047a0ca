package results

// Soak is what bench --soak saw of the box that ran it: once a second its
// thermal zones, each CPU's clock, the Raspberry Pi firmware's throttle
// bits and the run's rate, and the first throttle with the figures around
// it (package soak fills it).
type Soak struct {
	// Samples are the seconds of the run, oldest first.
	Samples []SoakSample `json:"samples"`
	// Throttle is the first throttle seen; nil when the box held.
	Throttle *SoakThrottle `json:"throttle,omitempty"`
	// Limit is the longest the soak would have run (--duration).
	Limit float64 `json:"limit"`
}

// SoakSample is one second of a soak.
type SoakSample struct {
	// T is the end of the second, in seconds since the load started;
	// Warmup says it was before the measured window.
	T      float64 `json:"t"`
	Warmup bool    `json:"warmup,omitempty"`
	// BPS is the run's rate in the second, bits per second (what arrived,
	// else what was sent); RateUnknown says no end reported it.
	BPS         float64 `json:"bps"`
	RateUnknown bool    `json:"rate_unknown,omitempty"`
	// Zones are the thermal zones that had a temperature.
	Zones []SoakZone `json:"zones,omitempty"`
	// KHz is each CPU's clock (scaling_cur_freq), by CPU id; 0 where the
	// CPU has no cpufreq.
	KHz []int64 `json:"khz,omitempty"`
	// Throttled is the Pi firmware's get_throttled value; nil when the box
	// is not a Pi.
	Throttled *uint32 `json:"throttled,omitempty"`
}

// SoakZone is a thermal zone's temperature.
type SoakZone struct {
	Name    string  `json:"name"`
	Type    string  `json:"type,omitempty"`
	Celsius float64 `json:"celsius"`
}

// Hottest is the zone with the highest temperature; ok is false when the
// sample has none.
func (s SoakSample) Hottest() (z SoakZone, ok bool) {
	for i, c := range s.Zones {
		if i == 0 || c.Celsius > z.Celsius {
			z = c
		}
	}
	return z, len(s.Zones) > 0
}

// SoakThrottle is the first throttle of a soak and the rate around it.
type SoakThrottle struct {
	// At is the second it was first seen, since the load started.
	At float64 `json:"at"`
	// Why says what showed it: the firmware's bits, or a CPU's clock.
	Why string `json:"why"`
	// Zone and Celsius are the hottest zone then ("" when none).
	Zone    string  `json:"zone,omitempty"`
	Celsius float64 `json:"celsius,omitempty"`
	// KHzBefore and KHzAfter are the slowest CPU's clock in the second
	// before and the slowest seen after.
	KHzBefore int64 `json:"khz_before,omitempty"`
	KHzAfter  int64 `json:"khz_after,omitempty"`
	// BPSBefore is the mean rate from the end of the warmup to the
	// throttle, BPSAfter after it to the end of the soak (0 and
	// AfterUnknown when no second after it was measured).
	BPSBefore    float64 `json:"bps_before"`
	BPSAfter     float64 `json:"bps_after"`
	AfterUnknown bool    `json:"after_unknown,omitempty"`
	// Recovered says the rate came back: the last seconds of the soak ran
	// at RecoveredShare of BPSBefore or more.
	Recovered bool `json:"recovered"`
}

// RecoveredShare is the share of the rate before a throttle that the last
// seconds of a soak must reach for the rate to count as recovered.
const RecoveredShare = 0.95
