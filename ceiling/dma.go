package ceiling

import (
	"fmt"
	"math"
)

// DMA is how a NIC moves frames between the wire and RAM across PCIe: the
// frame itself plus the descriptor traffic around it. Counts are per
// descriptor ring; a value of 0 is taken as 1.
type DMA struct {
	// DescBytes is the size of one descriptor: 16 bytes for the advanced
	// descriptors of igb, ixgbe and i40e (Intel 82580 datasheet sections
	// 7.1.5 and 7.2.2) and for most other NICs.
	DescBytes int `json:"desc_bytes"`
	// RXFetch is how many receive descriptors one read fetches: igb's
	// IGB_RX_HTHRESH 8 (the NIC prefetches only when 8 are ready).
	RXFetch int `json:"rx_fetch"`
	// RXWriteback is how many receive descriptors one write returns: igb's
	// IGB_RX_WTHRESH 4 on the 82580.
	RXWriteback int `json:"rx_writeback"`
	// RXDoorbell is how many buffers the driver refills per tail-register
	// write: igb's IGB_RX_BUFFER_WRITE 16.
	RXDoorbell int `json:"rx_doorbell"`
	// TXDescPerFrame is descriptors per transmitted frame: igb writes a
	// context descriptor before the data descriptor of every checksum- or
	// VLAN-offloaded packet (igb_tx_csum), so 2.
	TXDescPerFrame int `json:"tx_desc_per_frame"`
	// TXFetch is transmit descriptors per fetch: igb's IGB_TX_PTHRESH 8.
	TXFetch int `json:"tx_fetch"`
	// TXWriteback is transmit descriptors per write-back: IGB_TX_WTHRESH 16.
	TXWriteback int `json:"tx_writeback"`
	// TXDoorbell is frames per tail-register write: 1, as igb writes the
	// tail for every packet unless the stack says more follow.
	TXDoorbell int `json:"tx_doorbell"`
	// KeepFCS says the NIC writes the 4-byte FCS to RAM with each received
	// frame; igb strips it (RCTL.SECRC), as most drivers do by default.
	KeepFCS bool `json:"keep_fcs,omitempty"`
}

// DefaultDMA is modelled on Intel's igb driver (Linux
// drivers/net/ethernet/intel/igb/igb.h) and the 82580 controller of the
// I340-T4. Other NICs differ in the details, by a few bytes per frame.
//
// Left out: MSI interrupt writes (one 4-byte write per interrupt; at the
// moderated rates drivers use, ~20k/s per queue, under 0.2% of a Gen2 x1
// link) and the driver's MMIO reads.
var DefaultDMA = DMA{
	DescBytes:      16,
	RXFetch:        8,
	RXWriteback:    4,
	RXDoorbell:     16,
	TXDescPerFrame: 2,
	TXFetch:        8,
	TXWriteback:    16,
	TXDoorbell:     1,
}

func atLeast1(n int) float64 {
	if n < 1 {
		return 1
	}
	return float64(n)
}

// Direction is which way frames cross the NIC.
type Direction string

// Receive frames arrive on the wire and the NIC writes them to RAM;
// Transmit frames are read from RAM and sent.
const (
	Receive  Direction = "receive"
	Transmit Direction = "transmit"
)

// Flow is frames of one kind crossing the bus: PerUnit of them in every
// unit of work whose rate Carry finds.
type Flow struct {
	Dir     Direction `json:"dir"`
	Frame   Frame     `json:"frame"`
	PerUnit float64   `json:"per_unit"`
}

// Cost is the bytes one part of the work puts on each direction of the
// link, per unit of work.
type Cost struct {
	What      string  `json:"what"`
	UpBytes   float64 `json:"up_bytes"`
	DownBytes float64 `json:"down_bytes"`
}

// The parts of a Load's cost, in print order.
const (
	CostFrames   = "frame data"
	CostTLP      = "TLP headers and framing around frame data"
	CostReadReq  = "read requests for frame data"
	CostDesc     = "descriptor fetch and write-back"
	CostDoorbell = "doorbell (tail register) writes"
	CostDLLP     = "DLLPs (Ack, UpdateFC)"
)

// The directions of a PCIe link, as Load.Binding names them.
const (
	Up   = "up"   // device to root complex: received frames on their way to RAM
	Down = "down" // root complex to device: frames to send, completions
)

var costOrder = []string{CostFrames, CostTLP, CostReadReq, CostDesc, CostDoorbell, CostDLLP}

// Load is the result of Carry: what one unit of work costs on the link and
// how many units per second the link can take.
type Load struct {
	Flows []Flow `json:"flows"`
	Costs []Cost `json:"costs"`
	// UpBytes and DownBytes are the totals per unit.
	UpBytes   float64 `json:"up_bytes"`
	DownBytes float64 `json:"down_bytes"`
	// BytesPerSec is the capacity of each direction (Bus.BytesPerSec).
	BytesPerSec float64 `json:"bytes_per_sec"`
	// UnitsPerSec is the most units per second both directions can carry.
	UnitsPerSec float64 `json:"units_per_sec"`
	// Binding is the direction that runs out first: "up" or "down".
	Binding string `json:"binding"`
}

type ledger struct {
	b     Bus
	costs map[string]*Cost
}

func (g *ledger) add(what string, up bool, n float64) {
	c := g.costs[what]
	if c == nil {
		c = &Cost{What: what}
		g.costs[what] = c
	}
	if up {
		c.UpBytes += n
	} else {
		c.DownBytes += n
	}
}

// write is a memory write of n bytes (split at MPS) done times per unit,
// by the device (up) or by the CPU into the device (down); header is the
// request header size. The receiver returns Acks and UpdateFCs for the
// posted credits the writes used.
func (g *ledger) write(up bool, n, header int, times float64, data, overhead string) {
	tlps := max(1, (n+g.b.MPS-1)/g.b.MPS)
	total := n + tlps*g.b.tlpBytes(header, 0)
	g.add(data, up, float64(n)*times)
	g.add(overhead, up, float64(total-n)*times)
	g.add(CostDLLP, !up, float64(tlps)*g.b.dllpPerTLP(true)*times)
}

// read is the device reading n bytes of RAM, times per unit: read requests
// of at most MRRS go up (each a header-only TLP; the root complex returns
// Acks and non-posted UpdateFCs), completions of at most MPS with 3 DW
// headers come down (the device Acks them; endpoints advertise infinite
// completion credits, r3.0 section 2.6.1, so no UpdateFC).
func (g *ledger) read(n int, times float64, data, overhead, request string) {
	reqs, cpls := 0, 0
	for left := n; left > 0; left -= g.b.MRRS {
		reqs++
		cpls += (min(left, g.b.MRRS) + g.b.MPS - 1) / g.b.MPS
	}
	cplBytes := n + cpls*g.b.tlpBytes(hdr3DW, 0)
	g.add(request, true, float64(reqs*g.b.tlpBytes(g.b.memHeader(), 0))*times)
	g.add(CostDLLP, false, float64(reqs)*g.b.dllpPerTLP(true)*times)
	g.add(data, false, float64(n)*times)
	g.add(overhead, false, float64(cplBytes-n)*times)
	g.add(CostDLLP, true, float64(cpls)*g.b.dllpPerTLP(false)*times)
}

// doorbellBytes is a 32-bit MMIO write of a tail register. NIC registers
// (BARs) sit below 4 GB of bus address space on the small boxes linerate
// targets (the CM4 maps them at 0xC000_0000), so the write has a 3 DW header.
const doorbellBytes = 4

// Carry works out what the flows cost on the bus and how many units of
// them per second it carries, given how the NIC does its DMA.
func (b Bus) Carry(d DMA, flows ...Flow) (Load, error) {
	if err := b.Validate(); err != nil {
		return Load{}, err
	}
	if len(flows) == 0 {
		return Load{}, fmt.Errorf("no traffic to carry")
	}
	desc := d.DescBytes
	if desc <= 0 {
		desc = 16
	}
	g := &ledger{b: b, costs: map[string]*Cost{}}
	for _, f := range flows {
		if f.PerUnit < 0 || math.IsNaN(f.PerUnit) {
			return Load{}, fmt.Errorf("flow of %v: negative share", f.Frame)
		}
		if f.Frame.Bytes < MinFrameBytes {
			return Load{}, fmt.Errorf("flow of %d-byte frames: under the %d-byte minimum", f.Frame.Bytes, MinFrameBytes)
		}
		mem := f.Frame.Bytes - FCSBytes // what crosses the bus: no FCS
		k := f.PerUnit
		switch f.Dir {
		case Receive:
			if d.KeepFCS {
				mem += FCSBytes
			}
			g.write(true, mem, b.memHeader(), k, CostFrames, CostTLP)
			wb := atLeast1(d.RXWriteback)
			g.write(true, desc*int(wb), b.memHeader(), k/wb, CostDesc, CostDesc)
			fe := atLeast1(d.RXFetch)
			g.read(desc*int(fe), k/fe, CostDesc, CostDesc, CostDesc)
			g.write(false, doorbellBytes, hdr3DW, k/atLeast1(d.RXDoorbell), CostDoorbell, CostDoorbell)
		case Transmit:
			g.read(mem, k, CostFrames, CostTLP, CostReadReq)
			per := atLeast1(d.TXDescPerFrame)
			fe := atLeast1(d.TXFetch)
			g.read(desc*int(fe), k*per/fe, CostDesc, CostDesc, CostDesc)
			wb := atLeast1(d.TXWriteback)
			g.write(true, desc*int(wb), b.memHeader(), k*per/wb, CostDesc, CostDesc)
			g.write(false, doorbellBytes, hdr3DW, k/atLeast1(d.TXDoorbell), CostDoorbell, CostDoorbell)
		default:
			return Load{}, fmt.Errorf("flow direction %q: want receive or transmit", f.Dir)
		}
	}
	l := Load{Flows: flows, BytesPerSec: b.BytesPerSec()}
	for _, w := range costOrder {
		if c := g.costs[w]; c != nil {
			l.Costs = append(l.Costs, *c)
			l.UpBytes += c.UpBytes
			l.DownBytes += c.DownBytes
		}
	}
	l.Binding = Up
	worst := l.UpBytes
	if l.DownBytes > l.UpBytes {
		l.Binding, worst = Down, l.DownBytes
	}
	if worst > 0 {
		l.UnitsPerSec = l.BytesPerSec / worst
	}
	return l, nil
}

// Figure is one traffic pattern's ceiling on a bus.
type Figure struct {
	Pattern string `json:"pattern"`
	// FPS is frames per second (for forward: frames in, and as many out).
	FPS float64 `json:"fps"`
	// LineBps is the Ethernet line rate those frames fill (preamble, SFD
	// and gap counted): compare it with port speeds.
	LineBps float64 `json:"line_bps"`
	// L2Bps counts the frames themselves; GoodputBps their L4 payload, 0
	// when the frame has none known.
	L2Bps      float64 `json:"l2_bps"`
	GoodputBps float64 `json:"goodput_bps,omitempty"`
	// Binding is the link direction that runs out first.
	Binding string `json:"binding"`
	Load    Load   `json:"load"`
}

func figure(pattern string, f Frame, l Load) Figure {
	fps := l.UnitsPerSec
	return Figure{
		Pattern:    pattern,
		FPS:        fps,
		LineBps:    LineBps(fps, f),
		L2Bps:      fps * float64(f.Bytes*8),
		GoodputBps: fps * float64(f.Payload*8),
		Binding:    l.Binding,
		Load:       l,
	}
}

// BusCeiling is what a bus carries in frames of one size, three ways.
type BusCeiling struct {
	Bus   Bus   `json:"bus"`
	DMA   DMA   `json:"dma"`
	Frame Frame `json:"frame"`
	// BytesPerSec is each direction's capacity for packets.
	BytesPerSec float64 `json:"bytes_per_sec"`
	// Receive: every frame comes in from the wire and goes to RAM.
	Receive Figure `json:"receive"`
	// Transmit: every frame goes from RAM out to the wire.
	Transmit Figure `json:"transmit"`
	// Forward: every frame comes in and goes out again through NICs on the
	// same bus (a router whose ports share the link).
	Forward Figure `json:"forward"`
}

// Ceiling is what the bus carries in frames like f.
func (b Bus) Ceiling(d DMA, f Frame) (BusCeiling, error) {
	c := BusCeiling{Bus: b, DMA: d, Frame: f, BytesPerSec: b.BytesPerSec()}
	rx, err := b.Carry(d, Flow{Dir: Receive, Frame: f, PerUnit: 1})
	if err != nil {
		return BusCeiling{}, err
	}
	tx, err := b.Carry(d, Flow{Dir: Transmit, Frame: f, PerUnit: 1})
	if err != nil {
		return BusCeiling{}, err
	}
	fw, err := b.Carry(d, Flow{Dir: Receive, Frame: f, PerUnit: 1}, Flow{Dir: Transmit, Frame: f, PerUnit: 1})
	if err != nil {
		return BusCeiling{}, err
	}
	c.Receive = figure(string(Receive), f, rx)
	c.Transmit = figure(string(Transmit), f, tx)
	c.Forward = figure("forward", f, fw)
	return c, nil
}

// TCPAckEvery is how many full segments a Linux receiver takes per ACK it
// sends in a bulk transfer (delayed ACK, RFC 1122 section 4.2.3.2).
const TCPAckEvery = 2

// TCPReceive is an iperf-style bulk TCP stream into the box over IPv4 at
// this MTU: full segments with timestamps (the Linux default) come in, one
// pure ACK goes out for every TCPAckEvery of them. The figure's frames are
// the incoming segments; GoodputBps is what iperf would report.
func (b Bus) TCPReceive(d DMA, mtu int) (Figure, error) {
	h := Headers{Proto: TCP, TCPTimestamps: true}
	seg, err := MTUFrame(mtu, h)
	if err != nil {
		return Figure{}, err
	}
	ack, err := PayloadFrame(0, h)
	if err != nil {
		return Figure{}, err
	}
	l, err := b.Carry(d,
		Flow{Dir: Receive, Frame: seg, PerUnit: 1},
		Flow{Dir: Transmit, Frame: ack, PerUnit: 1.0 / TCPAckEvery})
	if err != nil {
		return Figure{}, err
	}
	return figure("tcp receive", seg, l), nil
}
