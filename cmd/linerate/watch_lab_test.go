package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"linerate/internal/testenv"
	"linerate/lab"
	"linerate/live"
	"linerate/wire"
)

// TestBenchWeb runs `bench udp --web 127.0.0.1:9464` in node a of a pair
// lab against the agent in b, and follows the live view from inside a
// (its loopback is a's own): /events shows the bench's seconds with
// packets received, /metrics has them too, and the bench ends as usual.
func TestBenchWeb(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildLinerate(t, t.TempDir())
	l := upServingLab(t, "lw-", func(_, secretFile string) *exec.Cmd {
		return exec.Command(bin, "serve", "--token-file", secretFile)
	})

	const web = "127.0.0.1:9464"
	bench := exec.Command(bin, "bench", "udp", "--to", "b", "-t", "4", "--warmup", "500ms", "-b", "20kpps",
		"--idle", "100ms", "--web", web, "--json")
	var stdout bytes.Buffer
	bench.Stdout = &stdout
	stderr, err := bench.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start("a", bench); err != nil {
		t.Fatalf("bench in a: %v", err)
	}
	exited := make(chan struct{})
	var benchErr error
	go func() { benchErr = bench.Wait(); close(exited) }()
	t.Cleanup(func() {
		bench.Process.Signal(syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Error("bench did not exit")
		}
	})
	errs := bufio.NewReader(stderr)
	line, err := errs.ReadString('\n')
	if err != nil || !strings.Contains(line, "live view: http://"+web+"/") {
		t.Fatalf("bench stderr %q, %v: want the live view's address", line, err)
	}
	var rest strings.Builder
	copied := make(chan struct{})
	go func() { io.Copy(&rest, errs); close(copied) }()

	// Connections to the web address are made inside node a.
	client := nodeClient(l, "a", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+web+"/events", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("/events from inside a: %v", err)
	}
	seconds := map[float64]float64{} // bench second → received pps
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for len(seconds) < 2 && sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var s live.Snapshot
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			t.Fatalf("event: %v\n%s", err, data)
		}
		if s.Bench != nil && s.Bench.ReceivedPPS > 0 {
			seconds[s.Bench.T] = s.Bench.ReceivedPPS
		}
	}
	resp.Body.Close()
	if len(seconds) < 2 {
		t.Fatalf("the event stream showed %d bench seconds with packets received (%v), want 2; stream error %v", len(seconds), seconds, sc.Err())
	}
	t.Logf("bench seconds seen live: %v", seconds)
	for t0, pps := range seconds {
		if pps < 5000 || pps > 30000 {
			t.Errorf("second %v: %v pps received live at --rate 20kpps", t0, pps)
		}
	}

	req, _ = http.NewRequestWithContext(ctx, "GET", "http://"+web+"/metrics", nil)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatalf("/metrics from inside a: %v", err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	counter := func(name string, labels map[string]string) float64 {
		for _, m := range fams[name].GetMetric() {
			if hasLabels(m, labels) {
				return m.GetCounter().GetValue()
			}
		}
		t.Errorf("/metrics has no %s%v", name, labels)
		return 0
	}
	if v := counter("linerate_bench_received_packets_total", nil); v <= 0 {
		t.Errorf("linerate_bench_received_packets_total %v", v)
	}
	if v := counter("linerate_bench_sent_packets_total", nil); v <= 0 {
		t.Errorf("linerate_bench_sent_packets_total %v", v)
	}
	// Node a's interface to b is called b; the client sends on it.
	if v := counter("linerate_nic_transmit_packets_total", map[string]string{"iface": "b"}); v < 1000 {
		t.Errorf("a sent %v packets on its interface b", v)
	}
	counter("linerate_cpu_seconds_total", map[string]string{"cpu": "0", "mode": "softirq"})

	select {
	case <-exited:
		if benchErr != nil {
			<-copied
			t.Fatalf("bench: %v\n%s", benchErr, rest.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("bench did not end")
	}
	var r struct {
		Summary struct {
			ReceivedPackets float64 `json:"received_packets"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || r.Summary.ReceivedPackets == 0 {
		t.Errorf("bench --json: %v\n%s", err, stdout.String())
	}
}

// upServingLab brings up a pair lab (nodes a and b) named prefix and a
// random suffix, whose agents run command, and removes it when the test
// ends.
func upServingLab(t *testing.T, prefix string, command func(node, secretFile string) *exec.Cmd) *lab.Lab {
	t.Helper()
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	name := prefix + hex.EncodeToString(rnd[:])
	dir := lab.Dir(t.TempDir())
	l, err := dir.Up(context.Background(), lab.Spec{Name: name, Topology: lab.Pair,
		Serve: &lab.Serve{Port: wire.DefaultPort, Command: command}})
	if err != nil {
		t.Fatalf("lab up: %v", err)
	}
	t.Cleanup(func() {
		if err := dir.Down(name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	return l
}

// nodeClient is an HTTP client whose connections are made inside node of
// l (timeout 0: none).
func nodeClient(l *lab.Lab, node string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := l.Do(node, func() error {
			var err error
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}}}
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, p := range m.GetLabel() {
		got[p.GetName()] = p.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
