package ceiling

// Measurement is a throughput someone measured on real hardware, to hold
// the bus model against.
type Measurement struct {
	// Source names where the figure comes from.
	Source string `json:"source"`
	Bus    Bus    `json:"bus"`
	MTU    int    `json:"mtu"`
	// GoodputBps is what iperf reported (TCP payload bits per second).
	GoodputBps float64 `json:"goodput_bps"`
}

// Measured are the seed figures: Jeff Geerling, "Getting faster 10 Gbps
// Ethernet on the Raspberry Pi" (seeds/001): a Compute Module 4 (PCIe Gen2
// x1) running iperf TCP at MTU 1500 went from 3.02 Gb/s with MPS 128 to
// 3.42 Gb/s after pci=pcie_bus_perf set MPS 512. The article does not give
// the direction; the model takes it as traffic into the Pi (iperf client on
// the Mac), and MRRS as the 512-byte default (it barely matters when
// receiving). The NIC in that article is an ASUS XG-C100C (Aquantia
// AQC107, a Gen3 x4 card running at Gen2 x1), not the I340-T4 of seeds/000;
// DefaultDMA follows igb, whose descriptor habits differ from the AQC107's
// by some tens of bytes per frame, about 1% of the figure.
var Measured = []Measurement{
	{Source: "CM4 Gen2 x1, MPS 128, iperf TCP, MTU 1500 (seeds/001)", Bus: Bus{Link: Link{Gen: 2, Lanes: 1}, MPS: 128, MRRS: DefaultMRRS}, MTU: 1500, GoodputBps: 3.02e9},
	{Source: "CM4 Gen2 x1, MPS 512, iperf TCP, MTU 1500 (seeds/001)", Bus: Bus{Link: Link{Gen: 2, Lanes: 1}, MPS: 512, MRRS: DefaultMRRS}, MTU: 1500, GoodputBps: 3.42e9},
}

// Calibration is the model's figure beside a measured one.
type Calibration struct {
	Measurement
	ModelBps float64 `json:"model_bps"`
	// Error is (model - measured) / measured.
	Error float64 `json:"error"`
}

// Calibrate runs TCPReceive with DefaultDMA for each Measured figure.
func Calibrate() ([]Calibration, error) {
	out := make([]Calibration, 0, len(Measured))
	for _, m := range Measured {
		f, err := m.Bus.TCPReceive(DefaultDMA, m.MTU)
		if err != nil {
			return nil, err
		}
		out = append(out, Calibration{Measurement: m, ModelBps: f.GoodputBps, Error: (f.GoodputBps - m.GoodputBps) / m.GoodputBps})
	}
	return out, nil
}
