package iperf3

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"linerate/box"
	"linerate/internal/testenv"
	"linerate/results"
)

// serverPair runs linerate's iperf3 Server in the pair's server namespace
// until the test ends; what it finished arrives on the returned channel.
func serverPair(t *testing.T, srv *Server) (*pair, <-chan *results.Result) {
	t.Helper()
	p := newPair(t)
	done := make(chan *results.Result, 4)
	srv.Setup = p.b.Do
	srv.Done = func(r *results.Result) { done <- r }
	srv.Logf = t.Logf
	ln, err := runIn(p.b, func() (net.Listener, error) { return net.Listen("tcp", serverIP+":5201") })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ctx, ln); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return p, done
}

// iperf3Client runs the real `iperf3 -c` in the pair's client namespace
// with -J; it returns its JSON (an error run has "error") and its output.
func iperf3Client(t *testing.T, p *pair, args ...string) (map[string]any, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", p.a.Name, "iperf3", "-c", serverIP, "-J"}, args...)...)
	out, _ := cmd.CombinedOutput()
	var js map[string]any
	if err := json.Unmarshal(out, &js); err != nil {
		t.Fatalf("iperf3 %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return js, string(out)
}

// num reads a number at a path of keys in iperf3's JSON (0 when absent).
func num(js map[string]any, path ...string) float64 {
	var v any = js
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return 0
		}
		v = m[k]
	}
	f, _ := v.(float64)
	return f
}

func fakeSampling(each func(box.Rates)) func() ([]box.Rates, error) {
	return func() ([]box.Rates, error) { return []box.Rates{{Seconds: 1}}, nil }
}

// serveOne runs one `iperf3 -c ARGS -J` against the Server in a new pair:
// iperf3's JSON, the client veth's counters over the run, the server's
// result.
func serveOne(t *testing.T, args ...string) (*pair, map[string]any, counters, *results.Result) {
	t.Helper()
	p, done := serverPair(t, &Server{Sampling: fakeSampling})
	before := readCounters(t, p.a, "ia")
	js, out := iperf3Client(t, p, args...)
	veth := readCounters(t, p.a, "ia").sub(before)
	if e, ok := js["error"]; ok {
		t.Fatalf("iperf3: %v\n%s", e, out)
	}
	return p, js, veth, <-done
}

// rmemMax is the most a TCP socket's receive buffer grows to in ns: the
// last of net.ipv4.tcp_rmem's figures.
func rmemMax(t *testing.T, ns *testenv.NetNS) uint64 {
	t.Helper()
	b, err := runIn(ns, func() ([]byte, error) { return os.ReadFile("/proc/sys/net/ipv4/tcp_rmem") })
	f := strings.Fields(string(b))
	if err != nil || len(f) != 3 {
		t.Fatalf("tcp_rmem: %q %v", b, err)
	}
	n, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestServerTCP(t *testing.T) {
	for _, c := range []struct {
		name             string
		args             []string
		forward, reverse bool
		streams          int
	}{{"P4", []string{"-P", "4"}, true, false, 4}, {"R", []string{"-R"}, false, true, 1}, {"bidir", []string{"--bidir"}, true, true, 1}} {
		t.Run(c.name, func(t *testing.T) {
			p, js, veth, res := serveOne(t, append([]string{"-t", "2"}, c.args...)...)
			tr := res.Targets[0]
			t.Logf("iperf3 end: %s", jsonOf(js["end"]))
			t.Logf("veth %+v; linerate forward %s reverse %s", veth, jsonOf(tr.Forward), jsonOf(tr.Reverse))
			if len(res.Samples) == 0 || res.Spec.Streams != c.streams {
				t.Errorf("result: %d samples, spec %+v", len(res.Samples), res.Spec)
			}
			rev := "sum_sent"
			if c.forward {
				sent, got := num(js, "end", "sum_sent", "bytes"), num(js, "end", "sum_received", "bytes")
				wrote(t, "forward: iperf3 sent vs veth", uint64(sent), veth.txBytes-veth.txPackets*66, uint64(num(js, "end", "sum_sent", "retransmits")), c.streams)
				received(t, "forward: iperf3", uint64(got), uint64(sent))
				if tr.Forward == nil || float64(tr.Forward.ReceivedBytes) != got || float64(tr.Forward.SentBytes) != sent {
					t.Errorf("forward: linerate %+v, iperf3 sent %.0f received %.0f", tr.Forward, sent, got)
				}
				rev = "sum_sent_bidir_reverse"
			}
			if c.reverse {
				recv := strings.Replace(rev, "sent", "received", 1)
				sent, got := num(js, "end", rev, "bytes"), num(js, "end", recv, "bytes")
				// What the veth carried: what this server wrote (less what its
				// socket held at the end), and what iperf3 read, or more by what
				// it did not count: what its sockets held unread at its TEST_END
				// (tcp_rmem's most each) and what this server sent until it had
				// the TEST_END (the two ends' measured times apart, and 10 ms).
				wrote(t, "reverse: linerate sent vs veth", uint64(sent), veth.rxBytes-veth.rxPackets*66, uint64(num(js, "end", rev, "retransmits")), c.streams)
				late := sent / num(js, "end", rev, "seconds") * (max(0, num(js, "end", rev, "seconds")-num(js, "end", recv, "seconds")) + 0.01)
				if onWire := veth.rxBytes - veth.rxPackets*66; uint64(got) > onWire || onWire-uint64(got) > uint64(c.streams)*rmemMax(t, p.a)+uint64(late) {
					within(t, "reverse: iperf3 received vs veth", uint64(got), onWire)
				}
				received(t, "reverse: iperf3", uint64(got), uint64(sent))
				if tr.Reverse == nil || float64(tr.Reverse.ReceivedBytes) != got || float64(tr.Reverse.SentBytes) != sent {
					t.Errorf("reverse: linerate %+v, iperf3 sent %.0f received %.0f", tr.Reverse, sent, got)
				}
			}
		})
	}
}

func TestServerUDP(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{{"forward", nil}, {"reverse", []string{"-R"}}} {
		t.Run(c.name, func(t *testing.T) {
			_, js, veth, res := serveOne(t, append([]string{"-u", "-b", "50M", "-l", "1000", "-t", "2"}, c.args...)...)
			tr := res.Targets[0]
			t.Logf("iperf3 end: %s", jsonOf(js["end"]))
			t.Logf("veth %+v; linerate forward %s reverse %s; iperf3 view %s", veth, jsonOf(tr.Forward), jsonOf(tr.Reverse), jsonOf(tr.IPerf3))
			sent, lost := uint64(num(js, "end", "sum_sent", "packets")), uint64(num(js, "end", "sum_received", "lost_packets"))
			got := uint64(num(js, "end", "sum_received", "packets")) - lost
			sentBytes, jitter := uint64(num(js, "end", "sum_sent", "bytes")), num(js, "end", "sum_received", "jitter_ms")
			if c.args == nil {
				within(t, "iperf3 sent packets vs veth tx", sent, veth.txPackets)
				within(t, "iperf3 sent bytes vs veth tx", sentBytes+42*sent, veth.txBytes)
			} else {
				within(t, "iperf3 received packets vs veth rx", got, veth.rxPackets)
				within(t, "iperf3 received bytes vs veth rx", uint64(num(js, "end", "sum_received", "bytes"))+42*got, veth.rxBytes)
			}
			within(t, "iperf3 received+lost vs sent", got+lost, sent)
			within(t, "packets at 6250/s", sent, 12500)
			st := tr.IPerf3.Streams[0]
			if st.LostPackets != lost || math.Abs(st.JitterMS-jitter) > 1e-9 || st.SentPackets != sent || jitter <= 0 || jitter > 50 {
				t.Errorf("linerate's iperf3 view %+v; iperf3 printed sent %d lost %d jitter %v ms", st, sent, lost, jitter)
			}
		})
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
