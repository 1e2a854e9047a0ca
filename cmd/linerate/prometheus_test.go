package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"linerate/internal/testenv"
)

// TestPrometheusScrapesServe runs Debian's Prometheus server in node b of
// a pair lab, scraping the agent there (`serve --web 127.0.0.1:9464`)
// every second, while node a sends it UDP at 20 kpps; then it asks
// Prometheus' HTTP API for the rate of b's NIC packet counter over the
// bench's steady seconds: it agrees with the bench's received packets per
// second within 5%.
func TestPrometheusScrapesServe(t *testing.T) {
	testenv.RequireRoot(t)
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("no prometheus server (Debian's prometheus package; make deps installs it)")
	}
	bin := buildLinerate(t, t.TempDir())
	const web, promAddr = "127.0.0.1:9464", "127.0.0.1:9090"
	l := upServingLab(t, "lp-", func(node, secretFile string) *exec.Cmd {
		args := []string{"serve", "--quiet", "--token-file", secretFile}
		if node == "b" {
			args = append(args, "--web", web)
		}
		return exec.Command(bin, args...)
	})

	// Prometheus in b, its storage in a temporary directory, bound to
	// b's loopback; killed (and its files removed with the directory)
	// when the test ends, however it ends.
	promDir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: linerate
    static_configs:
      - targets: [%q]
`, web)
	configFile := filepath.Join(promDir, "prometheus.yml")
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	var promLog bytes.Buffer
	prom := exec.Command(promBin, "--config.file="+configFile, "--storage.tsdb.path="+filepath.Join(promDir, "data"),
		"--web.listen-address="+promAddr, "--storage.tsdb.retention.time=1h")
	prom.Stdout, prom.Stderr = &promLog, &promLog
	if err := l.Start("b", prom); err != nil {
		t.Fatalf("prometheus in b: %v", err)
	}
	promExited := make(chan struct{})
	go func() { prom.Wait(); close(promExited) }()
	t.Cleanup(func() {
		prom.Process.Signal(syscall.SIGKILL)
		select {
		case <-promExited:
		case <-time.After(10 * time.Second):
			t.Error("prometheus did not exit")
		}
		if t.Failed() {
			t.Logf("prometheus's log:\n%s", promLog.String())
		}
	})

	// Every connection to Prometheus is made inside b.
	client := nodeClient(l, "b", 5*time.Second)
	// query asks Prometheus for q at at (zero: now) and returns each
	// series' value.
	query := func(q string, at time.Time) ([]float64, error) {
		v := url.Values{"query": {q}}
		if !at.IsZero() {
			v.Set("time", strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64))
		}
		resp, err := client.Get("http://" + promAddr + "/api/v1/query?" + v.Encode())
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var r struct {
			Status string `json:"status"`
			Error  string `json:"error"`
			Data   struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("%s: %v: %s", q, err, body)
		}
		if r.Status != "success" {
			return nil, fmt.Errorf("%s: status %q: %s", q, r.Status, r.Error)
		}
		var vals []float64
		for _, res := range r.Data.Result {
			s, _ := res.Value[1].(string)
			x, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: value %q", q, s)
			}
			vals = append(vals, x)
		}
		return vals, nil
	}
	// one is the value of a query that has one series.
	one := func(q string, at time.Time) (float64, error) {
		vals, err := query(q, at)
		if err == nil && len(vals) != 1 {
			err = fmt.Errorf("%s: %d series, want 1", q, len(vals))
		}
		if err != nil {
			return 0, err
		}
		return vals[0], nil
	}
	// Wait (20 s at most) until Prometheus has scraped the agent a few
	// times: the NIC counter of b's interface to a is there.
	const rx = `linerate_nic_receive_packets_total{job="linerate",iface="a"}`
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := one("count_over_time("+rx+"[10s])", time.Time{})
		if err == nil && n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus has not scraped the agent 3 times in 20s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	const seconds, warmup = 8, time.Second
	bench := exec.Command(bin, "bench", "udp", "--to", "b", "-t", strconv.Itoa(seconds), "--warmup", warmup.String(),
		"-b", "20kpps", "--json")
	var stdout, stderr bytes.Buffer
	bench.Stdout, bench.Stderr = &stdout, &stderr
	start := time.Now()
	if err := l.Start("a", bench); err != nil {
		t.Fatalf("bench in a: %v", err)
	}
	benchExited := make(chan error, 1)
	go func() { benchExited <- bench.Wait() }()
	select {
	case err := <-benchExited:
		if err != nil {
			t.Fatalf("bench: %v\n%s", err, stderr.String())
		}
	case <-time.After(time.Duration(seconds)*time.Second + 20*time.Second):
		bench.Process.Signal(syscall.SIGKILL)
		<-benchExited
		t.Fatal("bench did not end")
	}
	var res struct {
		Summary struct {
			ReceivedPPS float64 `json:"received_pps"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res.Summary.ReceivedPPS == 0 {
		t.Fatalf("bench --json: %v\n%s", err, stdout.String())
	}

	// The window: 5 s well inside the measured seconds (the counter moves
	// once a second and is scraped once a second), its end 2 s before the
	// run's.
	at := start.Add(warmup + time.Duration(seconds-2)*time.Second)
	// Wait (10 s at most) for the scrapes of that window to be stored.
	for time.Now().Before(at.Add(3 * time.Second)) {
		time.Sleep(100 * time.Millisecond)
	}
	q := "rate(" + rx + "[5s])"
	got, err := one(q, at)
	if err != nil {
		t.Fatal(err)
	}
	want := res.Summary.ReceivedPPS
	t.Logf("bench received %.0f pps; Prometheus: %s = %.0f at %s (%+.2f%%)", want, q, got, at.Format(time.TimeOnly), (got/want-1)*100)
	if math.Abs(got/want-1) > 0.05 {
		t.Errorf("Prometheus says %s = %.0f, the bench received %.0f pps: more than 5%% apart", q, got, want)
	}

	// Every query of the Grafana dashboard runs on what Prometheus
	// scraped, and each panel of this box's counters has series (an agent
	// has no bench figures, and a veth no queue interrupts).
	for _, p := range readDashboard(t).Panels {
		for _, dq := range p.Targets {
			vals, err := query(dq.promQL("5s"), at)
			switch {
			case err != nil:
				t.Errorf("dashboard panel %q: %v", p.Title, err)
			case len(vals) == 0 && !strings.Contains(p.Title, "queue") && !strings.Contains(p.Title, "Bench"):
				t.Errorf("dashboard panel %q: %s has no series", p.Title, dq.Expr)
			default:
				t.Logf("dashboard panel %q: %d series", p.Title, len(vals))
			}
		}
	}
}
