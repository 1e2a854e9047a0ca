package wire

import (
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want Rate
		err  string
	}{
		{"0", Rate{}, ""},
		{"100kpps", Rate{PPS: 100e3}, ""},
		{"1.5Mpps", Rate{PPS: 1.5e6}, ""},
		{"250000pps", Rate{PPS: 250000}, ""},
		{"940Mbps", Rate{BPS: 940e6}, ""},
		{"1Gbit", Rate{BPS: 1e9}, ""},
		{"880m", Rate{BPS: 880e6}, ""},
		{"1G", Rate{BPS: 1e9}, ""},
		{"10 kpps", Rate{PPS: 10e3}, ""},
		{"100000", Rate{}, "give a unit"},
		{"0pps", Rate{}, "sends nothing"},
		{"-5kpps", Rate{}, "negative"},
		{"fastpps", Rate{}, "not a number"},
		{"NaNpps", Rate{}, "not a number"},
		{"1x", Rate{}, "not a number"},
		{"1e30pps", Rate{}, "faster than any Ethernet link"},
		{"Infbps", Rate{}, "not a number"},
		{"2Tbps", Rate{}, "faster than any Ethernet link (1.6 Tb/s)"},
		{"1.6Tbps", Rate{BPS: 1.6e12}, ""},
		{"2.3Gpps", Rate{PPS: 2.3e9}, ""},
	}
	for _, tc := range tests {
		got, err := ParseRate(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRate(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRate(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestRatePackets(t *testing.T) {
	if got := (Rate{BPS: 1e9}).PacketsPerSecond(125); got != 1e6 {
		t.Errorf("1 Gbit/s of 125-byte frames = %v pps", got)
	}
	if got := (Rate{PPS: 5}).PacketsPerSecond(64); got != 5 {
		t.Errorf("5 pps = %v", got)
	}
	if !(Rate{}).Unlimited() || (Rate{PPS: 1}).Unlimited() {
		t.Error("Unlimited")
	}
}

func TestSpecCheck(t *testing.T) {
	ok := Spec{Proto: "udp", Direction: Forward, Duration: Seconds(time.Second), Payload: 18, Streams: 1, Ports: 1, Threads: 1}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		mod  func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Proto = "sctp" }, "proto"},
		{func(s *Spec) { s.Direction = "up" }, "direction"},
		{func(s *Spec) { s.Duration = 0 }, "duration"},
		{func(s *Spec) { s.Payload = 15 }, "payload 15"},
		{func(s *Spec) { s.Payload = 70000 }, "payload 70000"},
		{func(s *Spec) { s.Streams = 0 }, "streams"},
		{func(s *Spec) { s.Ports = 300 }, "ports"},
		{func(s *Spec) { s.Threads = 0 }, "threads"},
		{func(s *Spec) { s.Rate = Rate{PPS: -1} }, "negative"},
		{func(s *Spec) { s.Direction = Reverse }, "client ports"},
		{func(s *Spec) { s.Proto = "tcp"; s.MSS = 40 }, "mss 40"},
		{func(s *Spec) { s.ProbeInterval = Seconds(time.Microsecond) }, "under 1ms"},
		{func(s *Spec) { s.Proto = "tcp"; s.StreamDSCP = []int{0, 8} }, "2 marks for 1 streams"},
		{func(s *Spec) { s.Proto = "tcp"; s.StreamDSCP = []int{64} }, "stream 0: 64"},
		{func(s *Spec) { s.Proto = "tcp"; s.StreamDSCP = []int{46}; s.DSCP = 8 }, "goes without dscp"},
		{func(s *Spec) { s.StreamDSCP = []int{46} }, "is for tcp, not udp"},
	}
	for _, b := range bad {
		s := ok
		b.mod(&s)
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("Check() = %v, want %q", err, b.want)
		}
	}
}

func TestSecondsJSON(t *testing.T) {
	var s Seconds
	if err := s.UnmarshalJSON([]byte("2.5")); err != nil || s.D() != 2500*time.Millisecond {
		t.Fatalf("%v %v", s.D(), err)
	}
	b, _ := s.MarshalJSON()
	if string(b) != "2.5" {
		t.Fatalf("%s", b)
	}
	for _, in := range []string{"-1", "\"x\"", "1e300"} {
		if err := s.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("accepted %s", in)
		}
	}
}

// A spec from the wire with a rate no link carries is refused by the
// server too (the client's flags are not the only way in).
func TestSpecRefusesImpossibleRate(t *testing.T) {
	for _, r := range []Rate{{PPS: 1e30}, {BPS: 1e15}, {PPS: -1}} {
		sp := Spec{Proto: "udp", Direction: Forward, Duration: Seconds(time.Second), Rate: r, Payload: 18, Streams: 1, Ports: 1, Threads: 1}
		if err := sp.Check(); err == nil {
			t.Errorf("rate %+v accepted", r)
		}
	}
}

func TestMixPattern(t *testing.T) {
	sizes := []SizePart{{Payload: 22, Weight: 7}, {Payload: 528, Weight: 4}, {Payload: 1476, Weight: 1}}
	p := MixPattern(sizes)
	if len(p) != 12 {
		t.Fatalf("pattern of %d, want 12: %v", len(p), p)
	}
	n := make([]int, 3)
	run, longest := 0, 0
	for i, k := range p {
		n[k]++
		if i > 0 && p[i-1] == k {
			run++
		} else {
			run = 1
		}
		longest = max(longest, run)
	}
	if n[0] != 7 || n[1] != 4 || n[2] != 1 {
		t.Errorf("pattern %v counts %v, want 7 4 1", p, n)
	}
	if longest > 2 {
		t.Errorf("pattern %v has %d of a part in a row: not spread", p, longest)
	}
	if MixPattern(sizes[:1]) != nil {
		t.Error("a single size has a pattern")
	}
}

func TestSpecSizes(t *testing.T) {
	base := Spec{Proto: UDP, Direction: Forward, Duration: Seconds(time.Second), Streams: 1, Ports: 1, Threads: 1}
	mix := []SizePart{{22, 7}, {528, 4}, {1476, 1}}
	tests := []struct {
		sizes   []SizePart
		payload int
		err     string
	}{
		{mix, 1476, ""},
		{mix, 528, "largest part's, 1476"},
		{[]SizePart{{22, 0}, {100, 1}}, 100, "weight 0"},
		{[]SizePart{{4, 1}, {100, 1}}, 100, "payload 4 bytes"},
		{[]SizePart{{22, 4000}, {100, 1000}}, 100, "add up to 5000"},
	}
	for _, tc := range tests {
		s := base
		s.Sizes, s.Payload = tc.sizes, tc.payload
		err := s.Check()
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("sizes %v payload %d: %v, want %q", tc.sizes, tc.payload, err, tc.err)
		}
	}
	s := base
	s.Sizes, s.Payload, s.Rate = mix, 1476, Rate{BPS: 1e9}
	// The mean frame of simple IMIX is 353.83 bytes; with 42 of overhead
	// (IPv4) the payloads mean 311.83.
	if got, want := s.UDPPacketsPerSecond(42), 1e9/(353.8333333*8); got < want*0.9999 || got > want*1.0001 {
		t.Errorf("1 Gb/s of imix: %.1f pps, want %.1f", got, want)
	}
}

func TestStreamDSCP(t *testing.T) {
	s := Spec{Proto: TCP, Direction: Bidir, Duration: Seconds(time.Second), Streams: 4, Ports: 1, Threads: 1,
		StreamDSCP: []int{0, 8, 40, 46}}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{0, 8, 40, 46, 0} {
		if got := s.DSCPOf(i); got != want {
			t.Errorf("DSCPOf(%d) = %d, want %d", i, got, want)
		}
	}
	one := Spec{DSCP: 34}
	if one.DSCPOf(3) != 34 {
		t.Errorf("DSCPOf without marks per stream = %d, want the test's 34", one.DSCPOf(3))
	}
	for d, want := range map[int]string{0: "BE", 8: "CS1", 40: "CS5", 46: "EF", 34: "AF41", 1: "LE", 5: "5"} {
		if got := DSCPName(d); got != want {
			t.Errorf("DSCPName(%d) = %q, want %q", d, got, want)
		}
	}
	if v, err := ParseDSCP("bk"); err != nil || v != 8 {
		t.Errorf("ParseDSCP(bk) = %d, %v; want 8 (CS1)", v, err)
	}
}
