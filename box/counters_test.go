package box

import (
	"math"
	"slices"
	"testing"
	"time"

	"linerate/source/ethtool"
	"linerate/source/procfs"
)

// The files under testdata/counters/a are copies of this development
// machine's /proc and `ethtool -S eth0` (virtio_net).
func TestReadCounters(t *testing.T) {
	proc := procfs.NewFS("testdata/counters/a/proc")
	et := ethtool.NewCapture("testdata/counters/a/ethtool")
	c, err := ReadCounters(proc, et, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.CPU) != 2 || c.CPU[1].ID != 1 || c.CPU[1].User != 3282 || c.CPU[1].IOWait != 232 {
		t.Errorf("CPU = %+v, want 2 CPUs with cpu1 user 3282 iowait 232", c.CPU)
	}
	if got := c.Interrupts["LOC"]; len(got) != 2 || got[0] != 54924 || got[1] != 53631 {
		t.Errorf("Interrupts[LOC] = %v", got)
	}
	if got := c.Interrupts["38"]; len(got) != 2 || got[1] != 2910 {
		t.Errorf("Interrupts[38] = %v", got)
	}
	if got := c.SoftIRQs["NET_RX"]; len(got) != 2 || got[0] != 2835 {
		t.Errorf("SoftIRQs[NET_RX] = %v", got)
	}
	if len(c.Softnet) != 2 || c.Softnet[1].Processed != 0xd22 {
		t.Errorf("Softnet = %+v", c.Softnet)
	}
	if d := c.NetDev["eth0"]; d.RxBytes != 58158486 || d.TxPackets != 3484 {
		t.Errorf("NetDev[eth0] = %+v", d)
	}
	if c.UDP["InDatagrams"] != 55 || c.UDP["OutDatagrams"] != 56 {
		t.Errorf("UDP = %v", c.UDP)
	}
	if c.TCP == nil {
		t.Error("TCP counters missing")
	}
	// Only eth0 has an S.txt; lo, ifb0 and ifb1 are left out, not errors.
	if len(c.Ethtool) != 1 || c.Ethtool["eth0"]["rx0_kicks"] != 406 {
		t.Errorf("Ethtool = %v", c.Ethtool)
	}
	if c.Time.IsZero() {
		t.Error("Time not set")
	}
}

// TestReadCountersRxQueues: a driver with per-queue counters in ethtool
// -S (testdata/counters/guest: virtio_net of Debian's 6.1 in a lab guest)
// gives each receive queue's packets, queue 0 first.
func TestReadCountersRxQueues(t *testing.T) {
	proc := procfs.NewFS("testdata/counters/a/proc")
	et := ethtool.NewCapture("testdata/counters/guest/ethtool")
	c, err := ReadCounters(proc, et, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RxQueues["a"]; !slices.Equal(got, []uint64{10780, 5862, 7681, 31920}) {
		t.Errorf("RxQueues[a] = %v, want the four rx_queue_N_packets", got)
	}
	// A driver without them (virtio_net of 6.18 moved them to qstats)
	// has none.
	c, err = ReadCounters(proc, ethtool.NewCapture("testdata/counters/a/ethtool"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.RxQueues != nil {
		t.Errorf("RxQueues = %v from a driver with no per-queue packets", c.RxQueues)
	}
}

func TestReadCountersMissingStat(t *testing.T) {
	_, err := ReadCounters(procfs.NewFS(t.TempDir()), nil, nil)
	if err == nil {
		t.Fatal("no error for a proc tree without stat")
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestDelta(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 6, 40, 0, 0, time.UTC)
	a := Counters{
		Time:       t0,
		CPU:        []CPUTimes{{ID: 0, User: 100, Nice: 0, System: 50, Idle: 800, SoftIRQ: 50}, {ID: 1, Idle: 1000}},
		Interrupts: map[string][]uint64{"57": {0, 266296679}, "LOC": {10, 10}},
		SoftIRQs:   map[string][]uint64{"NET_RX": {5, 5}},
		Softnet:    []Softnet{{CPU: 0, Processed: 100, Dropped: 7, TimeSqueeze: 1}},
		NetDev:     map[string]NetDev{"eth0": {RxBytes: 1000, RxPackets: 10, RxDrop: 5}},
		Ethtool:    map[string]map[string]uint64{"eth0": {"rx_queue_0_packets": 10}},
		RxQueues:   map[string][]uint64{"eth0": {10, 0}},
		UDP:        map[string]uint64{"InDatagrams": 100, "RcvbufErrors": 9},
	}
	b := Counters{
		Time: t0.Add(2 * time.Second),
		// cpu0: 200 ticks: user 60 (+nice 20), sys 20, idle 60, softirq 40.
		CPU:        []CPUTimes{{ID: 0, User: 160, Nice: 20, System: 70, Idle: 860, SoftIRQ: 90}, {ID: 1, Idle: 1000}},
		Interrupts: map[string][]uint64{"57": {0, 266328679}, "LOC": {30, 5}},
		SoftIRQs:   map[string][]uint64{"NET_RX": {25, 5}},
		Softnet:    []Softnet{{CPU: 0, Processed: 300, Dropped: 7, TimeSqueeze: 5}},
		NetDev:     map[string]NetDev{"eth0": {RxBytes: 251000, RxPackets: 210, RxDrop: 1}, "eth1": {RxBytes: 5}},
		Ethtool:    map[string]map[string]uint64{"eth0": {"rx_queue_0_packets": 210}},
		RxQueues:   map[string][]uint64{"eth0": {210, 40}, "eth1": {5}},
		UDP:        map[string]uint64{"InDatagrams": 300, "RcvbufErrors": 9},
		Celsius:    map[string]float64{"thermal_zone0": 45.2},
	}
	r := Delta(a, b)
	if r.Seconds != 2 {
		t.Fatalf("Seconds = %v", r.Seconds)
	}
	if len(r.CPU) != 2 {
		t.Fatalf("CPU = %+v", r.CPU)
	}
	c0 := r.CPU[0]
	if !near(c0.User, 40) || !near(c0.System, 10) || !near(c0.Idle, 30) || !near(c0.SoftIRQ, 20) || !near(c0.Busy, 70) {
		t.Errorf("cpu0 = %+v, want usr 40 sys 10 idle 30 softirq 20 busy 70", c0)
	}
	if c1 := r.CPU[1]; c1.Busy != 0 || c1.Idle != 0 {
		t.Errorf("cpu1 with no ticks = %+v, want zeros", c1)
	}
	if got := r.Interrupts["57"]; !near(got[1], 16000) || got[0] != 0 {
		t.Errorf("Interrupts[57] = %v, want [0 16000]", got)
	}
	if got := r.Interrupts["LOC"]; !near(got[0], 10) || got[1] != 0 {
		t.Errorf("Interrupts[LOC] = %v, want [10 0] (reset counts as 0)", got)
	}
	if got := r.SoftIRQs["NET_RX"]; !near(got[0], 10) {
		t.Errorf("SoftIRQs = %v", got)
	}
	if s := r.Softnet[0]; !near(s.Processed, 100) || s.Dropped != 0 || !near(s.TimeSqueeze, 2) {
		t.Errorf("Softnet = %+v", s)
	}
	nd := r.NetDev["eth0"]
	if !near(nd.RxBps, 1000000) || !near(nd.RxPps, 100) || nd.RxDrops != 0 {
		t.Errorf("NetDev[eth0] = %+v, want 1 Mb/s, 100 pps, drops 0 after reset", nd)
	}
	if _, ok := r.NetDev["eth1"]; ok {
		t.Error("eth1 appeared only in b but has a rate")
	}
	if !near(r.Ethtool["eth0"]["rx_queue_0_packets"], 100) {
		t.Errorf("Ethtool = %v", r.Ethtool)
	}
	if q := r.RxQueues["eth0"]; len(q) != 2 || !near(q[0], 100) || !near(q[1], 20) || r.RxQueues["eth1"] != nil {
		t.Errorf("RxQueues = %v, want eth0 [100 20] and nothing for eth1 (new in b)", r.RxQueues)
	}
	if m := MeanRates([]Rates{r, r}); len(m.RxQueues["eth0"]) != 2 || !near(m.RxQueues["eth0"][1], 20) {
		t.Errorf("MeanRates' RxQueues = %v", m.RxQueues)
	}
	if !near(r.UDP["InDatagrams"], 100) || r.UDP["RcvbufErrors"] != 0 {
		t.Errorf("UDP = %v", r.UDP)
	}
	if r.Celsius["thermal_zone0"] != 45.2 {
		t.Errorf("Celsius = %v", r.Celsius)
	}

	// Same time twice: rates are zero, not infinite.
	z := Delta(b, b)
	if z.NetDev["eth0"].RxBps != 0 || math.IsInf(z.UDP["InDatagrams"], 0) {
		t.Errorf("Delta(b, b) = %+v", z.NetDev)
	}
}

// The reading process's CPU is its ticks over the ticks one CPU counted:
// here 100 per CPU, of which the process had 30 user and 20 system on
// either CPU, a share of 50 % of one CPU.
func TestDeltaProcess(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 6, 40, 0, 0, time.UTC)
	cpus := func(idle uint64) []CPUTimes { return []CPUTimes{{ID: 0, Idle: idle}, {ID: 1, Idle: idle}} }
	a := Counters{Time: t0, CPU: cpus(1000), Process: &ProcessTimes{User: 500, System: 100}}
	b := Counters{Time: t0.Add(time.Second), CPU: cpus(1100), Process: &ProcessTimes{User: 530, System: 120}}
	r := Delta(a, b)
	if p := r.Process; p == nil || !near(p.User, 30) || !near(p.System, 20) || !near(p.Busy, 50) || !near(p.Seconds(r.Seconds), 0.5) {
		t.Fatalf("Process = %+v, want usr 30 sys 20 busy 50: 0.5 CPU-s", p)
	}
	if r := Delta(b, Counters{Time: b.Time.Add(time.Millisecond), CPU: cpus(1100), Process: b.Process}); r.Process == nil || r.Process.Busy != 0 {
		t.Errorf("Process over an interval shorter than a tick = %+v, want zero, not absent", r.Process)
	}
	b.Process = nil
	if r := Delta(a, b); r.Process != nil {
		t.Errorf("Process without b's = %+v, want nil", r.Process)
	}
}
