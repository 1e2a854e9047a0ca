package live

import (
	"io"
	"testing"

	"linerate/box"
	"linerate/sample"
	"linerate/source/procfs"
	"linerate/source/sysfs"
)

// BenchmarkCycle is one second of `linerate watch` on this machine: read
// the counters, make the rates, the snapshot and the terminal frame.
func BenchmarkCycle(b *testing.B) {
	proc := procfs.NewFS("/proc")
	read := sample.Live(proc, nil, nil)
	v := &View{Proc: proc, Sys: sysfs.NewFS("/sys")}
	prev, err := read()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c, err := read()
		if err != nil {
			b.Fatal(err)
		}
		c.Time = prev.Time.Add(1e9) // a second apart, however fast the loop
		s := v.Snapshot(box.Delta(prev, c))
		prev = c
		if err := WriteText(io.Discard, s, TextOptions{Terminal: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead is the reading part of the cycle alone.
func BenchmarkRead(b *testing.B) {
	read := sample.Live(procfs.NewFS("/proc"), nil, nil)
	for b.Loop() {
		if _, err := read(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMetrics is one /metrics answer on this machine's last second.
func BenchmarkMetrics(b *testing.B) {
	proc := procfs.NewFS("/proc")
	read := sample.Live(proc, nil, nil)
	v := &View{Proc: proc, Sys: sysfs.NewFS("/sys")}
	a, _ := read()
	c, _ := read()
	c.Time = a.Time.Add(1e9)
	s := v.Snapshot(box.Delta(a, c))
	for b.Loop() {
		if err := WriteMetrics(io.Discard, s); err != nil {
			b.Fatal(err)
		}
	}
}
