package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"linerate/box"
	"linerate/ceiling"
	"linerate/results"
	"linerate/wire"
)

// benchSchema is the schema number of `linerate bench --json` this package
// reads (docs/bench.md): fields are only added under one number.
const benchSchema = 1

// benchResult is the part of `linerate bench --json` (docs/bench.md,
// schema 1) the demo reads. The demo talks to bench across a process
// boundary, the same way a user's script would, so it decodes the
// documented JSON rather than sharing bench's Go types.
type benchResult struct {
	Schema int `json:"schema"`
	Spec   struct {
		Proto     wire.Proto     `json:"proto"`
		Direction wire.Direction `json:"direction"`
		Duration  float64        `json:"duration"`
		Payload   int            `json:"payload"`
	} `json:"spec"`
	FrameSize   int          `json:"frame_size"`
	Interrupted bool         `json:"interrupted"`
	Summary     benchSummary `json:"summary"`
	Targets     []struct {
		Forward *benchTotals `json:"forward"`
		Reverse *benchTotals `json:"reverse"`
		Errors  []string     `json:"errors"`
	} `json:"targets"`
	Streams []struct {
		Direction wire.Direction `json:"direction"`
		TCP       *struct {
			SndMSS int `json:"snd_mss"`
		} `json:"tcp"`
	} `json:"streams"`
	Samples []benchSample `json:"samples"`
	Errors  []string      `json:"errors"`
}

// benchSample is one second of one end's counters, as far as the demo
// reads it.
type benchSample struct {
	Side    results.Side `json:"side"`
	Target  int          `json:"target"`
	Seconds float64      `json:"seconds"`
	CPU     []box.CPUUse `json:"cpu"`
}

// flowSet is the part of `linerate bench --from --json` (docs/bench.md:
// a set of third-party flows) the demo reads: each flow's result, and the
// samples of the host that ran bench (side "dut", the router).
type flowSet struct {
	Schema int `json:"schema"`
	Flows  []struct {
		From   string          `json:"from"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	} `json:"flows"`
	Samples []benchSample `json:"samples"`
}

// parseFlowSet decodes the output of `linerate bench --from --json` with
// one flow: its result, with the router's samples added to it.
func parseFlowSet(b []byte) (*benchResult, error) {
	var fs flowSet
	if err := decodeResult(b, &fs, &fs.Schema); err != nil {
		return nil, err
	}
	if len(fs.Flows) != 1 {
		return nil, fmt.Errorf("its JSON result has %d flows; want one", len(fs.Flows))
	}
	f := fs.Flows[0]
	if len(f.Result) == 0 || string(f.Result) == "null" {
		if f.Error == "" {
			f.Error = "no reason given"
		}
		return nil, fmt.Errorf("the flow from %s has no result: %s", f.From, f.Error)
	}
	r, err := parseBench(f.Result)
	if err != nil {
		return nil, err
	}
	r.Samples = append(fs.Samples, r.Samples...)
	if f.Error != "" {
		r.Errors = append(r.Errors, f.Error)
	}
	return r, nil
}

type benchTotals struct {
	Seconds         float64 `json:"seconds"`
	SentPackets     uint64  `json:"sent_packets"`
	ReceivedPackets uint64  `json:"received_packets"`
	LossRatio       float64 `json:"loss_ratio"`
	ReceivedBytes   uint64  `json:"received_bytes"`
	ReceivedPPS     float64 `json:"received_pps"`
	ReceivedBPS     float64 `json:"received_bps"`
	Retransmits     uint64  `json:"retransmits"`
}

type benchSummary struct {
	benchTotals
	LimitedBy  string `json:"limited_by"`
	LimitedWhy string `json:"limited_why"`
}

// decodeResult decodes the JSON a `linerate bench --json` printed into v,
// whose schema field is schema, and checks that this demo reads it.
func decodeResult(b []byte, v any, schema *int) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return fmt.Errorf("no JSON result on its output")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("its JSON result: %w", err)
	}
	if *schema != benchSchema {
		return fmt.Errorf("its JSON result has schema %d; this demo reads schema %d", *schema, benchSchema)
	}
	return nil
}

// parseBench decodes the output of `linerate bench --json`.
func parseBench(b []byte) (*benchResult, error) {
	var r benchResult
	if err := decodeResult(b, &r, &r.Schema); err != nil {
		return nil, err
	}
	if r.Spec.Proto != wire.TCP && r.Spec.Proto != wire.UDP {
		return nil, fmt.Errorf("its JSON result has proto %q; want tcp or udp", r.Spec.Proto)
	}
	return &r, nil
}

// Direction names, as the lab sees them: bench runs in the client node and
// sends to the server node (forward); reverse comes back.
const (
	Forward = wire.Forward
	Reverse = wire.Reverse
)

// Flow is what one direction of an experiment carried through the router,
// beside what an Ethernet port of the lab's speed could carry in frames of
// the same size.
type Flow struct {
	// Direction is Forward or Reverse; From and To name the nodes.
	Direction wire.Direction `json:"direction"`
	From      string         `json:"from"`
	To        string         `json:"to"`
	// PPS is packets per second received: UDP datagrams, or TCP segments
	// (goodput divided by the segment payload, see summarise).
	PPS float64 `json:"pps"`
	// Bps is bits per second received: TCP goodput, or UDP Ethernet frames
	// FCS included (as bench counts them).
	Bps float64 `json:"bps"`
	// LossRatio is UDP datagrams lost over sent; Retransmits TCP segments
	// sent again.
	LossRatio   float64 `json:"loss_ratio"`
	Retransmits uint64  `json:"retransmits,omitempty"`
	// Frame is the Ethernet frame the packets travel in.
	Frame ceiling.Frame `json:"frame"`
	// Ceiling is what a port of the lab's speed carries in such frames;
	// nil when the links were left uncapped.
	Ceiling *ceiling.Rate `json:"ceiling,omitempty"`
	// Share is PPS over the ceiling's frame rate (0 without a ceiling).
	Share float64 `json:"share,omitempty"`
}

// tcpHeaders are the headers around a TCP segment in the lab: IPv4 with
// the timestamps option, which Linux turns on by default
// (net.ipv4.tcp_timestamps=1, per network namespace, so every lab node
// starts with it).
var tcpHeaders = ceiling.Headers{Proto: ceiling.TCP, TCPTimestamps: true}

// summarise turns a bench result into a flow per direction that carried
// traffic, each set beside the ceiling of a speedBps port (none when
// speedBps is 0), and the CPU use per core averaged over the run.
//
// TCP packet rates are worked out from the goodput and the segment payload
// (snd_mss of the sending end's TCP_INFO) rather than read from
// received_pps: bench takes its TCP packet counts from TCP_INFO, which
// counts the whole connection, warmup included, while its byte counts are
// split at the measured window. With --mss every write is one full
// segment, and a bulk stream's segments are full but for a few, so
// goodput ÷ payload is the segment rate.
func summarise(r *benchResult, from, to string, speedBps int64) ([]Flow, []box.CPUUse, error) {
	if len(r.Targets) == 0 {
		return nil, nil, fmt.Errorf("the result has no target")
	}
	t := r.Targets[0]
	var flows []Flow
	for _, d := range []struct {
		name     wire.Direction
		tot      *benchTotals
		from, to string
	}{{Forward, t.Forward, from, to}, {Reverse, t.Reverse, to, from}} {
		if d.tot == nil {
			continue
		}
		f := Flow{Direction: d.name, From: d.from, To: d.to, Bps: d.tot.ReceivedBPS, LossRatio: d.tot.LossRatio, Retransmits: d.tot.Retransmits}
		var err error
		if r.Spec.Proto == wire.UDP {
			f.PPS = d.tot.ReceivedPPS
			f.Frame, err = udpFrame(r)
		} else {
			mss := r.sndMSS(d.name)
			if mss <= 0 {
				return nil, nil, fmt.Errorf("the %s TCP stream has no snd_mss in its TCP_INFO", d.name)
			}
			f.Frame, err = ceiling.PayloadFrame(mss, tcpHeaders)
			f.PPS = d.tot.ReceivedBPS / 8 / float64(mss)
		}
		if err != nil {
			return nil, nil, err
		}
		if speedBps > 0 {
			c := ceiling.LineRate(speedBps, f.Frame)
			f.Ceiling = &c
			if fps := c.FramesPerSecond(); fps > 0 {
				f.Share = f.PPS / fps
			}
		}
		flows = append(flows, f)
	}
	if len(flows) == 0 {
		return nil, nil, fmt.Errorf("the result has neither a forward nor a reverse direction")
	}
	return flows, r.cpuUse(), nil
}

// udpFrame is the frame of the result's datagrams: frame_size when bench
// says it, else the IPv4 frame around the payload.
func udpFrame(r *benchResult) (ceiling.Frame, error) {
	if r.FrameSize > 0 {
		return ceiling.RawFrame(r.FrameSize)
	}
	if r.Spec.Payload > 0 {
		return ceiling.PayloadFrame(r.Spec.Payload, ceiling.Headers{Proto: ceiling.UDP})
	}
	return ceiling.Frame{}, fmt.Errorf("the UDP result has neither frame_size nor a payload")
}

// sndMSS is the largest segment payload of the streams in direction dir.
func (r *benchResult) sndMSS(dir wire.Direction) int {
	mss := 0
	for _, s := range r.Streams {
		if s.Direction == dir && s.TCP != nil {
			mss = max(mss, s.TCP.SndMSS)
		}
	}
	return mss
}

// cpuUse averages each CPU's use over the result's samples, weighted by
// each sample's length. It takes the router's samples (side "dut"), else
// the client's, else the server's: in a lab they all read the same
// /proc/stat (CPU time is not per network namespace), so each is the
// whole machine.
func (r *benchResult) cpuUse() []box.CPUUse {
	for _, side := range []results.Side{results.SideDUT, results.SideClient, results.SideServer} {
		sum := map[int]*box.CPUUse{}
		weight := map[int]float64{}
		for _, s := range r.Samples {
			if s.Side != side || s.Seconds <= 0 || (side == results.SideServer && s.Target != 0) {
				continue
			}
			for _, c := range s.CPU {
				a := sum[c.ID]
				if a == nil {
					a = &box.CPUUse{ID: c.ID}
					sum[c.ID] = a
				}
				w := s.Seconds
				a.User += c.User * w
				a.System += c.System * w
				a.IRQ += c.IRQ * w
				a.SoftIRQ += c.SoftIRQ * w
				a.Idle += c.Idle * w
				a.IOWait += c.IOWait * w
				a.Steal += c.Steal * w
				a.Busy += c.Busy * w
				weight[c.ID] += w
			}
		}
		if len(sum) == 0 {
			continue
		}
		out := make([]box.CPUUse, 0, len(sum))
		for id, a := range sum {
			w := weight[id]
			out = append(out, box.CPUUse{ID: id, User: a.User / w, System: a.System / w, IRQ: a.IRQ / w,
				SoftIRQ: a.SoftIRQ / w, Idle: a.Idle / w, IOWait: a.IOWait / w, Steal: a.Steal / w, Busy: a.Busy / w})
		}
		slices.SortFunc(out, func(a, b box.CPUUse) int { return a.ID - b.ID })
		return out
	}
	return nil
}
