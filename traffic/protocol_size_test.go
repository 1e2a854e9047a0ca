package traffic

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"linerate/box"
	"linerate/results"
	"linerate/wire"
)

// hostile is a message of type typ whose field holds n empty objects: 3
// bytes each on the wire, a struct or a map each once decoded.
func hostile(typ, field string, n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"` + typ + `","` + field + `":[`)
	b.WriteString(strings.Repeat("{},", n-1))
	b.WriteString("{}]}\n")
	return b.Bytes()
}

// allocated is how many bytes fn allocates.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// A 4 MB message of empty objects, of any type and in any field, is
// refused within a small memory bound (four times the line, which is
// read whole when a long test allows it), on either end, even an hour into a
// test of 65535 flows. Before each type had its own size, such a bye took
// serve to 725 MB and such an accept took bench to 1.5 GB.
func TestHostileMessageRefused(t *testing.T) {
	const n = 4 << 20 / 3
	types := make([]string, 0, len(wire.Sizes))
	for typ := range wire.Sizes {
		types = append(types, typ)
	}
	slices.Sort(types)
	for _, peer := range []wire.Role{wire.RoleClient, wire.RoleServer} {
		for _, typ := range types {
			fields := []string{"samples"}
			if f := wire.Sizes[typ].Fields; len(f) > 0 {
				fields = append(fields, f[0])
			}
			for _, field := range fields {
				in := hostile(typ, field, n)
				c := newCtl(fuzzConn{bytes.NewReader(in)})
				c.peer, c.asked, c.flows = peer, time.Now().Add(-time.Hour), 65535
				var err error
				got := allocated(func() { _, err = c.read(time.Second) })
				if err == nil {
					t.Errorf("from a %s: a %d-byte %q with %d objects in %q was taken", peer, len(in), typ, n, field)
				}
				if limit := uint64(4 * len(in)); got > limit {
					t.Errorf("from a %s: a %d-byte %q with %d objects in %q allocated %d MB, at most %d MB", peer, len(in), typ, n, field, got>>20, limit>>20)
				}
			}
		}
	}
}

// What a server reads from a client, whatever the test, is small: at most
// its type's bound before any test, and a stop grows only with the flows.
func TestServerReadsSmallMessages(t *testing.T) {
	in := hostile(wire.MsgBye, "samples", 4<<20/3)
	c := newCtl(fuzzConn{bytes.NewReader(in)})
	c.peer = wire.RoleClient
	var err error
	got := allocated(func() { _, err = c.read(time.Second) })
	if err == nil || got > 1<<20 {
		t.Fatalf("a 4 MB bye: %v, %d bytes allocated; want refused within 1 MB", err, got)
	}
}

// A real result still fits: a 20-second test's samples of a 128-CPU box
// with 600 IRQs, 8 interfaces and 64 flows.
func TestBigBoxResultFits(t *testing.T) {
	const cpus, irqs, seconds, flows = 128, 600, 20, 64
	rate := box.Rates{Seconds: 1, Interrupts: map[string][]float64{}, SoftIRQs: map[string][]float64{}, NetDev: map[string]box.NetDevRate{}, UDP: map[string]float64{"InDatagrams": 1e6}}
	for i := range cpus {
		rate.CPU = append(rate.CPU, box.CPUUse{ID: i, User: 12.5, System: 33.25, SoftIRQ: 20.125, Idle: 34.125, Busy: 65.875})
		rate.Softnet = append(rate.Softnet, box.SoftnetRate{CPU: i, Processed: 123456})
	}
	for i := range irqs {
		per := make([]float64, cpus)
		for j := range per {
			per[j] = float64(i*j%5000) + 0.5
		}
		rate.Interrupts["eth0-TxRx-"+itoa(i)] = per
	}
	for _, s := range []string{"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"} {
		rate.SoftIRQs[s] = make([]float64, cpus)
	}
	for i := range 8 {
		rate.NetDev["eth"+itoa(i)] = box.NetDevRate{}
	}
	res := &results.ServerResult{Seconds: seconds}
	for i := range flows {
		res.Received = append(res.Received, results.Count{Stream: i, Packets: 1e9, Bytes: 1e12})
	}
	for range seconds {
		res.Samples = append(res.Samples, rate)
	}
	line, err := json.Marshal(&Message{Type: wire.MsgResult, Result: res})
	if err != nil {
		t.Fatal(err)
	}
	c := newCtl(fuzzConn{bytes.NewReader(append(line, '\n'))})
	c.peer, c.asked, c.flows = wire.RoleServer, time.Now().Add(-seconds*time.Second), flows
	m, err := c.read(time.Second)
	if err != nil {
		t.Fatalf("a %d-byte result: %v", len(line), err)
	}
	if len(m.Result.Samples) != seconds || len(m.Result.Received) != flows {
		t.Fatalf("decoded %d samples and %d counts", len(m.Result.Samples), len(m.Result.Received))
	}
	t.Logf("a %d KiB result of %d objects and arrays", len(line)>>10, func() int { v, _ := jsonShape(line); return v }())
}

// The largest test a client may ask for fits its message: 256 IPv6
// source addresses (--src), 256 client ports, a mix of sizes.
func TestBigSpecFits(t *testing.T) {
	sp := wire.Spec{Proto: wire.UDP, Direction: wire.Forward, Duration: wire.Seconds(time.Second), Streams: 1, Ports: 256, Threads: 1, Payload: 18}
	a := netip.MustParseAddr("fd00:1234:5678:9abc:def0:1234:5678:9a00")
	for range 256 {
		sp.Sources = append(sp.Sources, a)
		sp.ClientPorts = append(sp.ClientPorts, 65535)
		a = a.Next()
	}
	if err := sp.Check(); err != nil {
		t.Fatal(err)
	}
	line, err := json.Marshal(&Message{Type: wire.MsgTest, Spec: &sp})
	if err != nil {
		t.Fatal(err)
	}
	c := newCtl(fuzzConn{bytes.NewReader(append(line, '\n'))})
	c.peer = wire.RoleClient
	m, err := c.read(time.Second)
	if err != nil {
		t.Fatalf("a %d-byte test: %v", len(line), err)
	}
	if len(m.Spec.Sources) != 256 || m.Spec.Sources[255] != sp.Sources[255] {
		t.Fatalf("decoded %d sources", len(m.Spec.Sources))
	}
}
