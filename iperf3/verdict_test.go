package iperf3

import (
	"context"
	"encoding/json"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/internal/units"
	"linerate/results"
)

// TestVerdictAgainstPlainServer: a plain `iperf3 -s` reports its counts
// and its process's CPU use, nothing else. Its namespace drops one
// datagram in ten at its input (a drop linerate cannot see), and the run
// loses them; the verdict must say that it cannot see the far end's
// socket and CPUs, and must not call the loss the path's (issue 29: "lost
// between the ends while neither end's threads were saturated").
func TestVerdictAgainstPlainServer(t *testing.T) {
	for _, c := range []struct {
		name string
		rate string
		pps  float64
	}{{"paced", "20kpps", 20000}, {"as fast as possible", "", 0}} {
		t.Run(c.name, func(t *testing.T) {
			p := newPair(t)
			startIperf3Server(t, p.b)
			p.b.DropUDP(t, testenv.HookInput, DefaultPort, 10)
			// The rule drops the first datagram of each ten: spend it on
			// one sent before the test, so that the stream's hello, which
			// iperf3 does not send again, arrives.
			p.a.SendUDP(t, netip.MustParseAddrPort(serverIP+":"+strconv.Itoa(DefaultPort)), 1, 64, nil)
			// As a user runs it: the binary, in the client's namespace, its
			// own machine sampled.
			args := []string{"netns", "exec", p.a.Name, testenv.Linerate(t), "bench", "udp", "--to", "iperf3://" + serverIP,
				"-t", "2", "-l", "1000", "--json", "--no-save"}
			if c.rate != "" {
				args = append(args, "--rate", c.rate)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var stderr strings.Builder
			cmd := exec.CommandContext(ctx, "ip", args...)
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			var res results.Result
			if jerr := json.Unmarshal(out, &res); jerr != nil {
				t.Fatalf("bench: %v (%v)\n%s%s", err, jerr, out, stderr.String())
			}
			s := res.Summary
			t.Logf("sent %d, received %d, lost %s; limited by %q: %s", s.SentPackets, s.ReceivedPackets, units.Percent(s.LossRatio, 2), s.LimitedBy, s.LimitedWhy)
			if s.LossRatio < 0.09 {
				t.Fatalf("lost %s with one datagram in ten dropped", units.Percent(s.LossRatio, 2))
			}
			if s.LimitedBy == results.LimitPath || strings.Contains(s.LimitedWhy, "between the ends") {
				t.Errorf("the loss called the path's with the far end's counters unread: %q: %s", s.LimitedBy, s.LimitedWhy)
			}
			if s.LimitedBy != results.LimitUnknown && s.LimitedBy != results.LimitCPU {
				t.Errorf("limited by %q, want unknown (or a full CPU named)", s.LimitedBy)
			}
			if c.pps > 0 && s.SentPPS < results.MetRate*c.pps {
				// A busy machine held the paced sender back: the verdict
				// then speaks of the sender first (not of the path either).
				return
			}
			for _, w := range []string{"a plain iperf3 server", "socket-buffer or backlog drops", "per-CPU use"} {
				if !strings.Contains(s.LimitedWhy, w) {
					t.Errorf("the verdict does not say %q", w)
				}
			}
		})
	}
}
