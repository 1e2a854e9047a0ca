package ceiling

import "fmt"

// Query is one question for the arithmetic: line rates at a speed, a PCIe
// bus's ceiling, or both, for some frames.
type Query struct {
	// SpeedBps is the Ethernet link speed; 0 asks nothing about the wire.
	SpeedBps int64 `json:"speed_bps,omitempty"`
	// Frames to work out; none means StandardFrames for a speed alone, and
	// a full-size MTU 1500 frame and a 64-byte one for a bus.
	Frames []Frame `json:"frames"`
	// Bus is the PCIe link to work out; nil asks nothing about a bus.
	Bus *Bus `json:"bus,omitempty"`
}

// Answer holds the figures a Query asked for.
type Answer struct {
	Query Query `json:"query"`
	// Rates holds the line rate for each frame when a speed was given.
	Rates []Rate `json:"rates,omitempty"`
	// Bus holds the bus ceiling for each frame when a bus was given.
	Bus []BusCeiling `json:"bus,omitempty"`
	// Ports holds, with both a speed and a bus, how many ports at that
	// speed the bus can keep at line rate for each frame, receiving and
	// sending.
	Ports []PortsFit `json:"ports,omitempty"`
	// TCP is an iperf-style TCP stream into the box at MTU 1500 over the
	// bus, and Calibration the model beside the seeds' measurements.
	TCP         *Figure       `json:"tcp_receive,omitempty"`
	Calibration []Calibration `json:"calibration,omitempty"`
}

// PortsFit is how many line-rate ports of one speed a bus can serve.
type PortsFit struct {
	FrameBytes int     `json:"frame_bytes"`
	Receive    float64 `json:"receive"`
	Transmit   float64 `json:"transmit"`
}

// Ask works out a Query with DefaultDMA.
func Ask(q Query) (Answer, error) {
	if q.SpeedBps <= 0 && q.Bus == nil {
		return Answer{}, fmt.Errorf("nothing to work out: give a link speed, a PCIe bus, or both")
	}
	if len(q.Frames) == 0 {
		if q.Bus == nil {
			for _, n := range StandardFrames {
				f, _ := RawFrame(n)
				q.Frames = append(q.Frames, f)
			}
		} else {
			full, _ := MTUFrame(1500, goodputHeaders)
			small, _ := RawFrame(MinFrameBytes)
			q.Frames = []Frame{full, small}
		}
	}
	a := Answer{Query: q}
	for _, f := range q.Frames {
		if q.SpeedBps > 0 {
			a.Rates = append(a.Rates, LineRate(q.SpeedBps, f))
		}
		if q.Bus == nil {
			continue
		}
		c, err := q.Bus.Ceiling(DefaultDMA, f)
		if err != nil {
			return Answer{}, err
		}
		a.Bus = append(a.Bus, c)
		if q.SpeedBps > 0 {
			port := float64(q.SpeedBps)
			a.Ports = append(a.Ports, PortsFit{FrameBytes: f.Bytes, Receive: c.Receive.LineBps / port, Transmit: c.Transmit.LineBps / port})
		}
	}
	if q.Bus != nil {
		tcp, err := q.Bus.TCPReceive(DefaultDMA, 1500)
		if err != nil {
			return Answer{}, err
		}
		a.TCP = &tcp
		cal, err := Calibrate()
		if err != nil {
			return Answer{}, err
		}
		a.Calibration = cal
	}
	return a, nil
}
