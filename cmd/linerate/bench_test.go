package main

import (
	"context"
	"encoding/json"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"linerate/internal/usage"
	"linerate/results"
	"linerate/traffic"
	"linerate/wire"
)

func TestBenchBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "udp"}, "no target"},
		{[]string{"bench", "sctp"}, "want udp, tcp, rr or rrul"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--duration", "0s"}, "--duration 0s"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--size", "0"}, "--size 0"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--payload", "8"}, "--payload 8"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--size", "64", "--payload", "18"}, "give one"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--rate", "0pps"}, "sends nothing"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--rate", "500"}, "give a unit"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--rate", "-1kpps"}, "negative"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--threads", "0"}, "--threads 0"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--reverse", "--bidir"}, "give one"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--bind", "nonsense"}, "not an IP address"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--cpus", "4096"}, "not available"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--engine", "warp"}, "want socket or ring"},
		{[]string{"bench", "udp", "--to", "127.0.0.1:99999"}, "HOST or HOST:PORT"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--json", "--json-stream"}, "give one"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--token", ""}, "--token is empty"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--rate", "1e30pps"}, "faster than any Ethernet link"},
		{[]string{"bench", "tcp", "--to", "127.0.0.1", "--mss", "40"}, "smallest MSS"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--token-file", "/nonexistent/token"}, "--token-file"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--flows", "0"}, "--flows 0"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--flows", "6", "--ports", "4"}, "a multiple of --ports"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--flows", "4", "--streams", "2"}, "give one"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--src", "10.0.0.5-10.0.0.2"}, "ends before it starts"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--src", "host"}, "not an address"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--src", "127.0.0.1", "--reverse"}, "--src is what the client sends from"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--src", "127.0.0.1-127.0.0.3", "--flows", "2"}, "--src 3 addresses for 2 flows"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--src", "127.0.0.1", "--from", "127.0.0.2"}, "--src and --from"},
	} {
		_, err := runArgs(t, c.args...)
		if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want bad input saying %q", c.args, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error is not one line: %q", c.args, err)
		}
	}
}

func TestServeBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--listen", "1.2.3.4.5"}, "not an IP address"},
		{[]string{"serve", "--listen", "127.0.0.1:0"}, "not 1-65535"},
		{[]string{"serve", "--max-duration", "0s"}, "--max-duration"},
		{[]string{"serve", "--max-rate", "fast"}, "--max-rate"},
		{[]string{"serve", "--max-clients", "0"}, "--max-clients"},
		{[]string{"serve", "--peer-timeout", "10ms"}, "--peer-timeout"},
		{[]string{"serve", "--token", "a", "--token-file", "b"}, "give one"},
		{[]string{"serve", "--token", ""}, "--token is empty"},
		{[]string{"serve", "extra"}, "unknown command"},
		{[]string{"serve", "--allow", "10.0.0.0/33"}, "--allow \"10.0.0.0/33\": not a CIDR"},
		{[]string{"serve", "--iperf3", "--token", "s3cret"}, "--iperf3 with a secret"},
		{[]string{"serve", "--iperf3", "--stdio"}, "--iperf3 and --stdio"},
		{[]string{"serve", "--iperf3", "--iperf3-port", "0"}, "--iperf3-port 0"},
	} {
		_, err := runArgs(t, c.args...)
		if err == nil || !(usage.Is(err) || isCobraUsage(err)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want bad input saying %q", c.args, err, c.want)
		}
	}
}

func TestBenchJSONOnLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	addr := serveLoopback(t)
	out, err := runArgs(t, "bench", "udp", "--to", addr, "--duration", "500ms",
		"--warmup", "100ms", "--rate", "4kpps", "--idle", "100ms", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	sum, _ := r["summary"].(map[string]any)
	for _, k := range []string{"sent_packets", "received_packets", "sent_pps", "received_pps", "received_bps", "loss_ratio", "cpu_seconds_per_mpkt", "limited_by"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %s", k)
		}
	}
	for _, k := range []string{"streams", "targets", "samples", "intervals", "spec"} {
		if _, ok := r[k]; !ok {
			t.Errorf("result lacks %s", k)
		}
	}
	if sent, _ := sum["sent_packets"].(float64); sent < 1000 || sent > 4000*0.5+1000 {
		t.Errorf("sent %v packets in 0.5 s at 4 kpps", sent)
	}
}

// iperf3's flags build the same test as linerate's own.
func TestBenchIperf3Flags(t *testing.T) {
	parse := func(proto string, args ...string) traffic.Config {
		t.Helper()
		o := &benchOptions{}
		c := o.command()
		for _, sub := range c.Commands() {
			if sub.Name() != proto {
				continue
			}
			if err := sub.ParseFlags(args); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			cfg, err := o.config(wire.Proto(proto), sub.Flags().Changed)
			if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			return cfg
		}
		t.Fatalf("no %s subcommand", proto)
		return traffic.Config{}
	}
	for _, c := range []struct {
		proto     string
		iperf, lr []string
	}{
		{"tcp", []string{"-c", "10.0.0.2", "-t", "30", "-P", "8", "-R", "-B", "10.0.0.1", "-l", "65536", "-b", "1G"},
			[]string{"--to", "10.0.0.2:7557", "--duration", "30s", "--streams", "8", "--reverse", "--bind", "10.0.0.1", "--write-size", "65536", "--rate", "1G"}},
		{"udp", []string{"-c", "10.0.0.2", "-p", "9000", "-t", "1.5", "-l", "1472", "-b", "100M"},
			[]string{"--to", "10.0.0.2:9000", "--duration", "1500ms", "--payload", "1472", "--rate", "100Mbps"}},
		{"tcp", []string{"-c", "fd00::2", "-t", "5"}, []string{"--to", "[fd00::2]:7557", "--duration", "5s"}},
	} {
		a, b := parse(c.proto, c.iperf...), parse(c.proto, c.lr...)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s %v\n got %+v\nwant %+v (from %v)", c.proto, c.iperf, a, b, c.lr)
		}
	}
	// An iperf3:// target keeps its own port (5201 when it has none), not
	// the control port.
	for _, to := range []string{"iperf3://10.0.0.2:5202", "iperf3://10.0.0.2", "iperf3://[fd00::2]:5202"} {
		if cfg := parse("tcp", "--to", to); !slices.Equal(cfg.Targets, []string{to}) {
			t.Errorf("--to %s: targets %q", to, cfg.Targets)
		}
	}
	if cfg := parse("udp", "--to", "h", "--interval", "0"); cfg.Spec.Duration.D() != 10*time.Second {
		t.Errorf("default duration %s, want 10s", cfg.Spec.Duration.D())
	}
}

func TestBenchIntervalAndSecondsBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "tcp", "-c", "h", "-i", "0.5"}, "--interval 500ms"},
		{[]string{"bench", "tcp", "-c", "h", "-t", "five"}, "want seconds"},
		{[]string{"bench", "tcp", "-c", "h", "-t", "NaN"}, "want seconds"},
		{[]string{"bench", "tcp", "-c", "h", "-p", "0"}, "--port 0"},
	} {
		_, err := runArgs(t, c.args...)
		if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want bad input saying %q", c.args, err, c.want)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	out, err := runArgs(t, "--version")
	if err != nil || !strings.HasPrefix(out, "linerate ") {
		t.Errorf("--version: %q, %v", out, err)
	}
	out2, _ := runArgs(t, "version")
	if out != out2 {
		t.Errorf("--version says %q, version says %q", out, out2)
	}
}

// --json-stream writes iperf3-shaped events: start, intervals, end.
func TestBenchJSONStreamOnLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	addr := serveLoopback(t)
	out, err := runArgs(t, "bench", "udp", "-c", addr, "-t", "2.2",
		"--warmup", "0", "-b", "4kpps", "--idle", "0", "-i", "2", "--json-stream")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var events []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || len(ev.Data) == 0 {
			t.Fatalf("not an event line (%v): %s", err, line)
		}
		events = append(events, ev.Event)
		switch ev.Event {
		case "interval":
			var iv results.IntervalStats
			if err := json.Unmarshal(ev.Data, &iv); err != nil || iv.T < 1.9 {
				t.Errorf("interval %s: %v (want one line per 2 s)", ev.Data, err)
			}
		case "end":
			var r results.Result
			if err := json.Unmarshal(ev.Data, &r); err != nil || r.Summary.SentPackets == 0 || len(r.Intervals) < 2 {
				t.Errorf("end: %v, %d packets sent, %d intervals kept", err, r.Summary.SentPackets, len(r.Intervals))
			}
		}
	}
	if got := strings.Join(events, ","); got != "start,interval,end" {
		t.Errorf("events %s, want start,interval,end", got)
	}
}

// serveLoopback runs a server on loopback until the test ends and returns
// its address.
func serveLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&traffic.Server{}).Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}
