package box_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"linerate/box"
	"linerate/source"
)

// volatile clears what changes between two reads of the same machine a
// moment apart: times, counters, temperatures, frequencies, and where the
// facts came from.
func volatile(b *box.Box) {
	b.Meta.Time = time.Time{}
	b.Meta.Source = ""
	b.Counters = nil
	for i := range b.NICs {
		n := &b.NICs[i]
		for j := range n.Stats {
			n.Stats[j].Value = 0
		}
		for j := range n.RXQueues {
			n.RXQueues[j].Packets, n.RXQueues[j].Bytes = zero(n.RXQueues[j].Packets), zero(n.RXQueues[j].Bytes)
		}
		for j := range n.TXQueues {
			n.TXQueues[j].Packets, n.TXQueues[j].Bytes = zero(n.TXQueues[j].Packets), zero(n.TXQueues[j].Bytes)
		}
	}
	for i := range b.IRQs {
		b.IRQs[i].PerCPU = nil
	}
	for i := range b.CPUs {
		b.CPUs[i].CurKHz = 0
	}
	for i := range b.Thermal {
		b.Thermal[i].Celsius = 0
	}
	for i := range b.Sysctls {
		if b.Sysctls[i].Name == "net.netfilter.nf_conntrack_count" {
			b.Sysctls[i].Value = ""
		}
	}
}

func zero(p *uint64) *uint64 {
	if p == nil {
		return nil
	}
	var z uint64
	return &z
}

// zeroCoalesce drops coalescing parameters that are 0. The ioctl reports
// every parameter; the ethtool command prints only those the driver
// declares, so a capture made with the command lacks the zero ones.
func zeroCoalesce(b *box.Box) {
	for i := range b.NICs {
		if c := b.NICs[i].Coalesce; c != nil {
			for k, v := range c.Params {
				if v == 0 {
					delete(c.Params, k)
				}
			}
		}
	}
}

func modelJSON(t *testing.T, b *box.Box) string {
	t.Helper()
	j, err := json.MarshalIndent(b, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(j)
}

// TestCaptureRoundTrip checks that inspect of a fresh capture of this
// machine gives the model live inspect gives, apart from counters and time:
// once with the ethtool text rendered by linerate, once with the ethtool
// command's own text when it is installed; as a directory and a tarball.
func TestCaptureRoundTrip(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		ethtool string
		tarball bool
	}{
		{"rendered-dir", "-", false},
		{"rendered-tarball", "-", true},
	}
	// Unprivileged, the ethtool command fails ("netlink error: Operation
	// not permitted") on items the ioctl answers, so the two agree only
	// as root.
	if _, err := exec.LookPath("ethtool"); err == nil && os.Geteuid() == 0 {
		cases = append(cases, struct {
			name    string
			ethtool string
			tarball bool
		}{"ethtool-command", "", false})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			live, err := source.NewLive()
			if err != nil {
				t.Fatal(err)
			}
			defer live.Close()
			want, err := box.Collect(ctx, live)
			if err != nil {
				t.Fatal(err)
			}

			dir := t.TempDir()
			path := filepath.Join(dir, "cap")
			var sink source.Sink
			var closeFile func() error
			if c.tarball {
				path += ".tar.gz"
				f, err := os.Create(path)
				if err != nil {
					t.Fatal(err)
				}
				sink, closeFile = source.TarSink(f, "cap"), f.Close
			} else if sink, err = source.DirSink(path); err != nil {
				t.Fatal(err)
			}
			opts := source.CaptureOptions{EthtoolCmd: c.ethtool, IPCmd: c.ethtool, Sysctls: box.Sysctls, Samples: 2, Interval: 1}
			if err := source.WriteCapture(ctx, live, sink, opts); err != nil {
				t.Fatal(err)
			}
			if err := sink.Close(); err != nil {
				t.Fatal(err)
			}
			if closeFile != nil {
				if err := closeFile(); err != nil {
					t.Fatal(err)
				}
			}

			capt, err := source.OpenCapture(path)
			if err != nil {
				t.Fatal(err)
			}
			defer capt.Close()
			got, err := box.Collect(ctx, capt)
			if err != nil {
				t.Fatal(err)
			}
			if samples, err := capt.Samples(); err != nil || len(samples) != 2 {
				t.Errorf("samples = %d, %v; want 2", len(samples), err)
			}
			if got.Meta.Host != want.Meta.Host || got.Meta.Kernel != want.Meta.Kernel {
				t.Errorf("meta = %+v, want %+v", got.Meta, want.Meta)
			}
			if got.Counters == nil || len(got.Counters.CPU) != len(want.Counters.CPU) {
				t.Errorf("counters of the capture = %+v", got.Counters)
			}
			volatile(want)
			volatile(got)
			if c.ethtool == "" {
				zeroCoalesce(want)
				zeroCoalesce(got)
			}
			w, g := modelJSON(t, want), modelJSON(t, got)
			if w != g {
				t.Errorf("capture model differs from live:\n%s", lineDiff(w, g))
			}
		})
	}
}

// lineDiff shows the first lines that differ.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, "line "+strconv.Itoa(i+1)+":\n  live:    "+x+"\n  capture: "+y)
			if len(out) == 10 {
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
