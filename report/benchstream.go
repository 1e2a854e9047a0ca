package report

import (
	"encoding/json"
	"io"
	"time"

	"linerate/internal/version"
	"linerate/results"
	"linerate/wire"
)

// BenchStream writes a bench run as JSON events, one object per line,
// shaped as iperf3's --json-stream (iperf3 3.17, esnet/iperf pull request
// 1098): {"event": "start"|"interval"|"end"|"error", "data": ...}. A nil
// *BenchStream writes nothing, so callers need not check.
type BenchStream struct {
	enc *json.Encoder
}

// NewBenchStream writes events to w.
func NewBenchStream(w io.Writer) *BenchStream { return &BenchStream{enc: json.NewEncoder(w)} }

// benchStart is the data of the start event: the test as asked (the
// servers may cap it; the end event has it as run).
type benchStart struct {
	Linerate  string    `json:"linerate_version"`
	Time      time.Time `json:"time"`
	Targets   []string  `json:"targets"`
	Engine    string    `json:"engine,omitempty"`
	FrameSize int       `json:"frame_size,omitempty"`
	Spec      wire.Spec `json:"spec"`
}

func (s *BenchStream) event(name string, data any) {
	if s == nil {
		return
	}
	_ = s.enc.Encode(struct {
		Event string `json:"event"`
		Data  any    `json:"data"`
	}{name, data})
}

// Start writes the start event: the targets, the UDP send engine and
// frame size asked for, and the test. No secret is written.
func (s *BenchStream) Start(targets []string, engine string, frameSize int, spec wire.Spec) {
	s.event("start", benchStart{Linerate: version.Version, Time: time.Now().UTC(), Targets: targets,
		Engine: engine, FrameSize: frameSize, Spec: spec})
}

// Interval writes one interval event.
func (s *BenchStream) Interval(iv results.IntervalStats) { s.event("interval", iv) }

// End writes the end event: the whole result (docs/bench.md).
func (s *BenchStream) End(r *results.Result) { s.event("end", r) }

// Error writes an error event with err's one line; nil writes nothing.
func (s *BenchStream) Error(err error) {
	if err != nil {
		s.event("error", err.Error())
	}
}
