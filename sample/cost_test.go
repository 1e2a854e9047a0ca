package sample

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"linerate/box"
	"linerate/source/ethtool"
	"linerate/source/procfs"
)

// processCPU is this process's CPU time so far, user and system, every
// thread (the garbage collector's too).
func processCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLiveCycle is one cycle of the once-a-second sampler as bench
// and watch run it (cmd/linerate liveSampling): a snapshot of this
// machine's counters through Live, with ethtool statistics of every
// interface when the kernel answers, and the rates against the snapshot
// before. It reports the process CPU one cycle costs, and that cost at
// one cycle a second as a share of one core: docs/benchmarks.md.
//
//	go test -run '^$' -bench LiveCycle -benchtime 200x ./sample/
func BenchmarkLiveCycle(b *testing.B) {
	var et ethtool.Client
	if l, err := ethtool.NewLive(); err == nil {
		et = l
	}
	read := Live(procfs.NewFS("/proc"), et, nil)
	prev, err := read()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	for b.Loop() {
		c, err := read()
		if err != nil {
			b.Fatal(err)
		}
		c.Time = prev.Time.Add(time.Second)
		r := box.Delta(prev, c)
		if len(r.CPU) == 0 {
			b.Fatal("a cycle with no CPU rates")
		}
		prev = c
	}
	b.StopTimer()
	perCycle := float64(processCPU(b)-cpu0) / float64(b.N)
	b.ReportMetric(perCycle/1e3, "cpu-µs/cycle")
	// At one cycle a second, the share of one core is the cycle's CPU
	// time over a second.
	b.ReportMetric(perCycle/float64(time.Second)*100, "%core@1Hz")
	b.ReportMetric(float64(len(prev.NetDev)), "ifaces")
}
