package report

import (
	"strings"
	"testing"

	"linerate/results"
	"linerate/wire"
)

// TestBenchTextXDPModes: the text says which XDP mode the counter ran in
// and how the AF_XDP sockets were bound, with the driver's refusals (the
// figures of a bench from a lab guest's virtio-net under Linux 6.1).
func TestBenchTextXDPModes(t *testing.T) {
	r := &results.Result{
		Spec:      wire.Spec{Proto: wire.UDP, Direction: wire.Forward, Payload: 18, Ports: 2, Streams: 1, Threads: 2, Duration: wire.Seconds(2e9), XDP: true},
		FrameSize: 64, Engine: "xdp",
		Targets: []results.TargetResult{{Target: "a:7557",
			XDP: &results.XDPStat{Interface: "b", Mode: results.XDPGeneric, NativeError: "create link: operation not supported", Packets: 10150, PPS: 5075},
			AFXDP: &results.AFXDPStat{Interface: "a", Sockets: 2, Mode: results.XDPGeneric,
				ZeroCopyError: "bind (zero-copy): operation not supported"}}},
	}
	var b strings.Builder
	BenchText(&b, r)
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"xdp       a:7557: 10150 packets reached b (5.1k pps, generic mode, the driver refused native: create link: operation not supported)",
		"afxdp     a:7557: 2 socket(s) on a, generic (copy mode: each frame copied into an skb); zero-copy refused: bind (zero-copy): operation not supported",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the text", want)
		}
	}
	r.Targets[0].XDP = &results.XDPStat{Interface: "a", Mode: results.XDPNative, Packets: 10}
	r.Targets[0].AFXDP = &results.AFXDPStat{Interface: "a", Sockets: 4, ZeroCopy: 4, Mode: results.XDPNative}
	b.Reset()
	BenchText(&b, r)
	for _, want := range []string{"native mode, in the driver)", "4 socket(s) on a, native (zero-copy"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}
