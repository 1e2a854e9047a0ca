package main

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"linerate/internal/usage"
	"linerate/traffic"
)

func benchCmds() []*cobra.Command {
	return append([]*cobra.Command{benchCmd}, benchCmd.Commands()...)
}

func TestBenchBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "udp"}, "no target"},
		{[]string{"bench", "sctp"}, "want udp or tcp"},
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
		{[]string{"bench", "tcp", "--to", "127.0.0.1", "--mss", "40"}, "smallest MSS"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--token-file", "/nonexistent/token"}, "--token-file"},
	} {
		_, err := runArgs(t, benchCmds(), c.args...)
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
		{[]string{"serve", "extra"}, "unknown command"},
	} {
		_, err := runArgs(t, []*cobra.Command{serveCmd}, c.args...)
		if err == nil || !(usage.Is(err) || isCobraUsage(err)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want bad input saying %q", c.args, err, c.want)
		}
	}
}

func TestBenchJSONOnLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&traffic.Server{}).Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	out, err := runArgs(t, benchCmds(), "bench", "udp", "--to", ln.Addr().String(), "--duration", "500ms",
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
