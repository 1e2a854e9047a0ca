package ceiling

import (
	"math"
	"testing"
)

func TestAsk(t *testing.T) {
	if _, err := Ask(Query{}); err == nil {
		t.Error("empty query: no error")
	}
	a, err := Ask(Query{SpeedBps: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Rates) != len(StandardFrames) || a.Rates[0].PPS != 1_488_095 || len(a.Bus) != 0 || a.TCP != nil {
		t.Errorf("speed only: %d rates, first %d pps, %d bus", len(a.Rates), a.Rates[0].PPS, len(a.Bus))
	}
	bus := Bus{Link: Link{2, 1}, MPS: 128, MRRS: 512}
	a, err = Ask(Query{SpeedBps: 1e9, Bus: &bus})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Bus) != 2 || a.Bus[0].Frame.Bytes != 1518 || a.Bus[1].Frame.Bytes != 64 || len(a.Ports) != 2 {
		t.Fatalf("bus: %d ceilings, %d ports", len(a.Bus), len(a.Ports))
	}
	// The CM4: between three and four 1 Gb/s ports of full-size frames.
	if p := a.Ports[0].Receive; p < 3 || p > 4 {
		t.Errorf("ports fit receiving: %g", p)
	}
	if math.Abs(a.Ports[0].Receive-a.Bus[0].Receive.LineBps/1e9) > 1e-9 {
		t.Error("ports fit is not the line rate over the port speed")
	}
	if a.TCP == nil || len(a.Calibration) != len(Measured) {
		t.Error("no TCP figure or calibration with a bus")
	}
	bad := Bus{Link: Link{2, 1}, MPS: 100, MRRS: 512}
	if _, err := Ask(Query{Bus: &bad}); err == nil {
		t.Error("bad MPS: no error")
	}
}
