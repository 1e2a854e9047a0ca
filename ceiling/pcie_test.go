package ceiling

import (
	"math"
	"strings"
	"testing"
)

func TestParseLink(t *testing.T) {
	for in, want := range map[string]Link{
		"gen2x1":   {2, 1},
		"Gen3 x4":  {3, 4},
		"GEN5X16":  {5, 16},
		"gen1x32":  {1, 32},
		" gen4x8 ": {4, 8},
	} {
		got, err := ParseLink(in)
		if err != nil || got != want {
			t.Errorf("ParseLink(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, frag := range map[string]string{
		"gen6x1": "FLIT",
		"gen0x1": "generation",
		"gen7x4": "Gen6",
		"gen2x3": "width",
		"gen2x0": "width",
		"pcie2":  "genNxM",
		"":       "genNxM",
		"gen2":   "genNxM",
	} {
		_, err := ParseLink(in)
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("ParseLink(%q) error %v, want one mentioning %q", in, err, frag)
		}
	}
}

func TestLinkFromGTs(t *testing.T) {
	for _, c := range []struct {
		gts   float64
		lanes int
		gen   int
	}{{2.5, 1, 1}, {5, 1, 2}, {8, 4, 3}, {16, 4, 4}, {32, 16, 5}} {
		l, err := LinkFromGTs(c.gts, c.lanes)
		if err != nil || l.Gen != c.gen || l.Lanes != c.lanes {
			t.Errorf("LinkFromGTs(%g, %d) = %v, %v", c.gts, c.lanes, l, err)
		}
	}
	if _, err := LinkFromGTs(64, 1); err == nil || !strings.Contains(err.Error(), "Gen6") {
		t.Errorf("64 GT/s: %v", err)
	}
	if _, err := LinkFromGTs(3, 1); err == nil {
		t.Error("3 GT/s: no error")
	}
	if _, err := LinkFromGTs(5, 3); err == nil {
		t.Error("x3: no error")
	}
}

func TestRawBps(t *testing.T) {
	for _, c := range []struct {
		l    Link
		want float64
	}{
		{Link{1, 1}, 2e9},                    // 2.5 GT/s × 8/10
		{Link{2, 1}, 4e9},                    // the "500 MB/s" of a Gen2 lane
		{Link{2, 4}, 16e9},                   //
		{Link{3, 1}, 8e9 * 128 / 130},        // 7.877 Gb/s
		{Link{4, 4}, 4 * 16e9 * 128 / 130},   //
		{Link{5, 16}, 16 * 32e9 * 128 / 130}, //
		{Link{1, 32}, 32 * 2e9},              //
		{Link{2, 12}, 12 * 4e9},              //
	} {
		if got := c.l.RawBps(); math.Abs(got-c.want) > 1 {
			t.Errorf("%v RawBps = %g, want %g", c.l, got, c.want)
		}
	}
	// SKP ordered sets take 4 of every 1184 symbols at Gen2: 498.3 MB/s.
	b := Bus{Link: Link{2, 1}, MPS: 128, MRRS: 512}
	if got, want := b.BytesPerSec(), 500e6*(1-4.0/1184); math.Abs(got-want) > 1e-3 {
		t.Errorf("Gen2 x1 BytesPerSec = %f, want %f", got, want)
	}
	if got, want := (Bus{Link: Link{3, 1}, MPS: 128, MRRS: 512}).BytesPerSec(), 1e9*128/130*(1-1.0/371); math.Abs(got-want) > 1e-3 {
		t.Errorf("Gen3 x1 BytesPerSec = %f, want %f", got, want)
	}
}

func TestTLPBytes(t *testing.T) {
	for _, c := range []struct {
		b            Bus
		header, data int
		want         int
	}{
		// Gen2: STP 1 + seq 2 + header + data + LCRC 4 + END 1.
		{Bus{Link: Link{2, 1}}, hdr4DW, 128, 1 + 2 + 16 + 128 + 4 + 1},
		{Bus{Link: Link{2, 1}, Addr32: true}, hdr3DW, 128, 1 + 2 + 12 + 128 + 4 + 1},
		{Bus{Link: Link{2, 1}, ECRC: true}, hdr4DW, 256, 1 + 2 + 16 + 256 + 4 + 4 + 1},
		// Gen3: STP token 4 + header + data + LCRC 4.
		{Bus{Link: Link{3, 4}}, hdr4DW, 512, 4 + 16 + 512 + 4},
		{Bus{Link: Link{3, 4}}, hdr3DW, 0, 4 + 12 + 4},
	} {
		if got := c.b.tlpBytes(c.header, c.data); got != c.want {
			t.Errorf("%v: tlpBytes(%d, %d) = %d, want %d", c.b.Link, c.header, c.data, got, c.want)
		}
	}
	if (Bus{}).memHeader() != hdr4DW || (Bus{Addr32: true}).memHeader() != hdr3DW {
		t.Error("memHeader: 4 DW by default, 3 DW with Addr32")
	}
}

func TestAckFactor(t *testing.T) {
	for _, c := range []struct {
		mps, lanes int
		want       float64
	}{{128, 1, 1.4}, {256, 4, 1.4}, {512, 1, 1.0}, {4096, 2, 1.0}, {128, 8, 2.5}, {1024, 8, 1.0}, {128, 16, 3.0}, {512, 16, 2.0}} {
		if got := AckFactor(c.mps, c.lanes); got != c.want {
			t.Errorf("AckFactor(%d, x%d) = %g, want %g", c.mps, c.lanes, got, c.want)
		}
	}
}

func TestBusValidate(t *testing.T) {
	ok := Bus{Link: Link{2, 1}, MPS: 128, MRRS: 512}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, b := range []Bus{
		{Link: Link{2, 1}, MPS: 100, MRRS: 512},
		{Link: Link{2, 1}, MPS: 128, MRRS: 0},
		{Link: Link{2, 1}, MPS: 8192, MRRS: 512},
		{Link: Link{6, 1}, MPS: 128, MRRS: 512},
		{Link: Link{2, 5}, MPS: 128, MRRS: 512},
	} {
		if err := b.Validate(); err == nil {
			t.Errorf("%+v: no error", b)
		}
		if _, err := b.Ceiling(DefaultDMA, Frame{Bytes: 1518}); err == nil {
			t.Errorf("%+v: Ceiling without error", b)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

// TestCarryReceive checks the bookkeeping of one received 1518-byte frame
// on Gen2 x1, MPS 128, 64-bit addresses, term by term.
func TestCarryReceive(t *testing.T) {
	b := Bus{Link: Link{2, 1}, MPS: 128, MRRS: 512}
	f, _ := RawFrame(1518)
	l, err := b.Carry(DefaultDMA, Flow{Dir: Receive, Frame: f, PerUnit: 1})
	if err != nil {
		t.Fatal(err)
	}
	const tlp4 = 8 + 16 // framing + 4 DW header
	const tlp3 = 8 + 12
	dl := 8 / 1.4 // one DLLP per 1.4 TLPs at x1, MPS 128
	want := map[string][2]float64{
		// 1514 bytes (FCS stripped) in ceil(1514/128) = 12 writes.
		CostFrames: {1514, 0},
		CostTLP:    {12 * tlp4, 0},
		// write-back of 4 descriptors (64 bytes) per 4 frames; a 24-byte
		// read request per 8 descriptors, answered by one 128-byte completion.
		CostDesc: {(64+tlp4)/4.0 + tlp4/8.0, (128 + tlp3) / 8.0},
		// one 4-byte tail write per 16 buffers.
		CostDoorbell: {0, (4 + tlp3) / 16.0},
		// The root complex Acks and credits the 12 + 1/4 writes and 1/8
		// read request; the NIC Acks the 1/8 completion and credits the
		// 1/16 doorbell.
		CostDLLP: {dl/8 + 2*dl/16, 2 * dl * (12 + 0.25 + 0.125)},
	}
	var up, down float64
	for _, c := range l.Costs {
		w, ok := want[c.What]
		if !ok {
			t.Errorf("unexpected cost %q", c.What)
			continue
		}
		if !near(c.UpBytes, w[0]) || !near(c.DownBytes, w[1]) {
			t.Errorf("%s: up %g down %g, want %g %g", c.What, c.UpBytes, c.DownBytes, w[0], w[1])
		}
		up += w[0]
		down += w[1]
		delete(want, c.What)
	}
	for w := range want {
		t.Errorf("missing cost %q", w)
	}
	if !near(l.UpBytes, up) || !near(l.DownBytes, down) || l.Binding != "up" {
		t.Errorf("totals up %g down %g binding %s; want %g %g up", l.UpBytes, l.DownBytes, l.Binding, up, down)
	}
	if !near(l.UnitsPerSec, b.BytesPerSec()/up) {
		t.Errorf("UnitsPerSec %g, want %g", l.UnitsPerSec, b.BytesPerSec()/up)
	}
}

// TestCarryTransmit does the same for a sent 1518-byte frame: reads split
// at MRRS 512, completions at MPS 128.
func TestCarryTransmit(t *testing.T) {
	b := Bus{Link: Link{2, 1}, MPS: 128, MRRS: 512}
	f, _ := RawFrame(1518)
	l, err := b.Carry(DefaultDMA, Flow{Dir: Transmit, Frame: f, PerUnit: 1})
	if err != nil {
		t.Fatal(err)
	}
	const tlp4, tlp3 = 24, 20
	dl := 8 / 1.4
	// 1514 bytes: requests of 512, 512, 490; completions 4 + 4 + 4.
	wantUp := 3*tlp4 + 12*dl + // requests; Acks for completions
		0.25*tlp4 + 0.25*dl + // 2 descriptors per frame fetched 8 at a time
		0.125*(256+2*tlp4) + // written back 16 at a time: 256 bytes in 2 TLPs
		2*dl // the NIC Acks and credits the doorbell
	wantDown := 1514 + 12*tlp3 + 3*2*dl +
		0.25*(128+tlp3) + 0.25*2*dl +
		0.125*2*2*dl +
		(4 + tlp3)
	if !near(l.UpBytes, wantUp) || !near(l.DownBytes, wantDown) || l.Binding != "down" {
		t.Errorf("up %g down %g binding %s; want %g %g down", l.UpBytes, l.DownBytes, l.Binding, wantUp, wantDown)
	}
}

func TestCarryErrors(t *testing.T) {
	b := Bus{Link: Link{2, 1}, MPS: 128, MRRS: 512}
	f, _ := RawFrame(64)
	if _, err := b.Carry(DefaultDMA); err == nil {
		t.Error("no flows: no error")
	}
	if _, err := b.Carry(DefaultDMA, Flow{Dir: "sideways", Frame: f, PerUnit: 1}); err == nil {
		t.Error("bad direction: no error")
	}
	if _, err := b.Carry(DefaultDMA, Flow{Dir: Receive, Frame: Frame{Bytes: 10}, PerUnit: 1}); err == nil {
		t.Error("runt frame: no error")
	}
	if _, err := b.Carry(DefaultDMA, Flow{Dir: Receive, Frame: f, PerUnit: -1}); err == nil {
		t.Error("negative share: no error")
	}
}

// TestCalibration holds the model against the seed measurements: each
// within 5%, and the MPS 128 → 512 gain close to the measured 13%.
func TestCalibration(t *testing.T) {
	cal, err := Calibrate()
	if err != nil {
		t.Fatal(err)
	}
	if len(cal) != 2 {
		t.Fatalf("%d calibration points, want 2", len(cal))
	}
	for _, c := range cal {
		t.Logf("%s: measured %.2f Gb/s, model %.3f Gb/s (%+.1f%%)", c.Source, c.GoodputBps/1e9, c.ModelBps/1e9, 100*c.Error)
		if math.Abs(c.Error) > 0.05 {
			t.Errorf("%s: model %.3f Gb/s is %+.1f%% off the measured %.2f", c.Source, c.ModelBps/1e9, 100*c.Error, c.GoodputBps/1e9)
		}
	}
	measured := cal[1].GoodputBps/cal[0].GoodputBps - 1
	model := cal[1].ModelBps/cal[0].ModelBps - 1
	t.Logf("MPS 128 → 512 gain: measured %.1f%%, model %.1f%%", 100*measured, 100*model)
	if math.Abs(model-measured) > 0.015 {
		t.Errorf("MPS 128 → 512 gain: model %.1f%%, measured %.1f%%", 100*model, 100*measured)
	}
}

func TestCeilingShape(t *testing.T) {
	f, _ := MTUFrame(1500, Headers{Proto: TCP, TCPTimestamps: true})
	at := func(b Bus) BusCeiling {
		t.Helper()
		c, err := b.Ceiling(DefaultDMA, f)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	base := at(Bus{Link: Link{2, 1}, MPS: 128, MRRS: 512})
	// The CM4 case: more than three 1 Gb/s ports' worth, less than four.
	if r := base.Receive.LineBps; r < 3e9 || r > 4e9 {
		t.Errorf("Gen2 x1 MPS 128 receive ceiling %.3g b/s, want between 3 and 4 Gb/s", r)
	}
	if base.Forward.FPS > base.Receive.FPS || base.Forward.FPS > base.Transmit.FPS {
		t.Errorf("forwarding (%g fps) beats one-way traffic (%g, %g)", base.Forward.FPS, base.Receive.FPS, base.Transmit.FPS)
	}
	if base.Receive.GoodputBps >= base.Receive.L2Bps || base.Receive.L2Bps >= base.Receive.LineBps {
		t.Error("goodput < L2 < line rate does not hold")
	}
	for _, c := range []struct {
		name string
		b    Bus
	}{
		{"MPS 256", Bus{Link: Link{2, 1}, MPS: 256, MRRS: 512}},
		{"MPS 512", Bus{Link: Link{2, 1}, MPS: 512, MRRS: 512}},
		{"x2", Bus{Link: Link{2, 2}, MPS: 128, MRRS: 512}},
		{"Gen3", Bus{Link: Link{3, 1}, MPS: 128, MRRS: 512}},
		{"3 DW headers", Bus{Link: Link{2, 1}, MPS: 128, MRRS: 512, Addr32: true}},
	} {
		if got := at(c.b); got.Receive.FPS <= base.Receive.FPS {
			t.Errorf("%s: receive %g fps, not above the base %g", c.name, got.Receive.FPS, base.Receive.FPS)
		}
	}
	if got := at(Bus{Link: Link{2, 1}, MPS: 128, MRRS: 512, ECRC: true}); got.Receive.FPS >= base.Receive.FPS {
		t.Error("ECRC costs nothing")
	}
	// Larger read requests help sending.
	if got := at(Bus{Link: Link{2, 1}, MPS: 128, MRRS: 128}); got.Transmit.FPS >= base.Transmit.FPS {
		t.Error("MRRS 128 sends as fast as MRRS 512")
	}
	// Jumbo frames waste less on descriptors.
	j, _ := MTUFrame(9000, Headers{Proto: TCP, TCPTimestamps: true})
	jc, err := (Bus{Link: Link{2, 1}, MPS: 128, MRRS: 512}).Ceiling(DefaultDMA, j)
	if err != nil {
		t.Fatal(err)
	}
	if jc.Receive.GoodputBps <= base.Receive.GoodputBps {
		t.Errorf("jumbo goodput %g not above %g", jc.Receive.GoodputBps, base.Receive.GoodputBps)
	}
	// Even with no overhead beyond encoding, no figure may exceed the link.
	if jc.Receive.L2Bps >= (Link{2, 1}).RawBps() {
		t.Errorf("L2 %g exceeds the raw link", jc.Receive.L2Bps)
	}
}
