package live

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"linerate/box"
	"linerate/results"
)

// rates is two CPUs, eth0 receiving 1000 pps of 64-byte frames with
// queue interrupts 41 (CPU 1) and 42, and a busy softnet.
func rates() box.Rates {
	end := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	return box.Rates{
		Start: end.Add(-time.Second), End: end, Seconds: 1,
		CPU: []box.CPUUse{
			{ID: 0, User: 10, System: 5, IRQ: 1, SoftIRQ: 20, Idle: 64, Busy: 36},
			{ID: 1, User: 2, System: 3, SoftIRQ: 40, Steal: 1, Idle: 50, Busy: 50},
		},
		Interrupts: map[string][]float64{"41": {0, 900}, "42": {10, 0}, "43": {0, 0}, "LOC": {250, 250}},
		SoftIRQs:   map[string][]float64{"NET_RX": {100, 950}, "NET_TX": {5, 0}},
		Softnet:    []box.SoftnetRate{{CPU: 0, Processed: 100, Dropped: 3, TimeSqueeze: 2}, {CPU: 1, Processed: 900}},
		NetDev: map[string]box.NetDevRate{
			"eth0": {RxBps: 512000, RxPps: 1000, RxDrops: 4},
			"lo":   {RxBps: 8, RxPps: 1, TxBps: 8, TxPps: 1},
		},
	}
}

var names = map[string]IRQInfo{
	"41": {Name: "eth0-rx-0", Iface: "eth0"}, "42": {Name: "eth0-rx-1", Iface: "eth0"},
	"43": {Name: "ahci"}, "LOC": {Name: "Local timer interrupts"},
}

func TestBuild(t *testing.T) {
	s := Build(rates(), []string{"eth0", "gone"}, names)
	if len(s.CPUs) != 2 || s.CPUs[1].Interrupts != 1150 || s.CPUs[1].NetRX != 950 || s.CPUs[0].Dropped != 3 || s.CPUs[0].TimeSqueeze != 2 {
		t.Errorf("CPUs %+v", s.CPUs)
	}
	if len(s.Ifaces) != 1 || s.Ifaces[0].Name != "eth0" || s.Ifaces[0].RxPps != 1000 {
		t.Errorf("ifaces %+v: want eth0 only", s.Ifaces)
	}
	// 43 never fired and is no shown interface's: left out.
	if len(s.IRQs) != 2 || s.IRQs[0].IRQ != "41" || s.IRQs[0].Total != 900 || s.IRQs[1].Name != "eth0-rx-1" {
		t.Errorf("IRQs %+v", s.IRQs)
	}
}

// TestMetrics parses /metrics' text with Prometheus's own parser: two
// sampled seconds and two bench seconds make counters of twice a second.
func TestMetrics(t *testing.T) {
	fams := parseMetrics(t, metricsText(t, names))
	for _, m := range Metrics {
		f, ok := fams[m.Name]
		if !ok {
			t.Errorf("%s missing", m.Name)
			continue
		}
		want := map[string]dto.MetricType{Counter: dto.MetricType_COUNTER, Gauge: dto.MetricType_GAUGE}[m.Type]
		if f.GetHelp() != m.Help || f.GetType() != want {
			t.Errorf("%s: help %q type %v, want %v", m.Name, f.GetHelp(), f.GetType(), want)
		}
		if !model.IsValidLegacyMetricName(m.Name) || !strings.HasPrefix(m.Name, "linerate_") {
			t.Errorf("%s: not a linerate_ metric name", m.Name)
		}
		if (m.Type == Counter) != strings.HasSuffix(m.Name, "_total") {
			t.Errorf("%s: a %s; only counters end in _total", m.Name, m.Type)
		}
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"linerate_cpu_seconds_total", map[string]string{"cpu": "0", "mode": "softirq"}, 0.4},
		{"linerate_cpu_seconds_total", map[string]string{"cpu": "1", "mode": "steal"}, 0.02},
		{"linerate_cpu_seconds_total", map[string]string{"cpu": "1", "mode": "other"}, 0.08},
		{"linerate_cpu_seconds_total", map[string]string{"cpu": "1", "mode": "idle"}, 1},
		{"linerate_interrupts_total", map[string]string{"irq": "41", "cpu": "1", "name": "eth0-rx-0", "iface": "eth0"}, 1800},
		{"linerate_cpu_interrupts_total", map[string]string{"cpu": "1"}, 2300},
		{"linerate_softirqs_total", map[string]string{"cpu": "1", "type": "NET_RX"}, 1900},
		{"linerate_softnet_dropped_packets_total", map[string]string{"cpu": "0"}, 6},
		{"linerate_softnet_times_squeezed_total", map[string]string{"cpu": "0"}, 4},
		{"linerate_nic_receive_packets_total", map[string]string{"iface": "eth0"}, 2000},
		{"linerate_nic_receive_bytes_total", map[string]string{"iface": "eth0"}, 128000},
		{"linerate_nic_receive_drops_total", map[string]string{"iface": "eth0"}, 8},
		{"linerate_bench_received_packets_total", nil, 1980},
		{"linerate_bench_sent_bytes_total", nil, 168000},
		{"linerate_bench_elapsed_seconds", nil, 2},
		{"linerate_sample_interval_seconds", nil, 1},
	} {
		if got, ok := value(fams, c.name, c.labels); !ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	// The modes add up to the seconds sampled.
	sum := 0.0
	for _, m := range fams["linerate_cpu_seconds_total"].GetMetric() {
		if labelsOf(m)["cpu"] == "1" {
			sum += m.GetCounter().GetValue()
		}
	}
	if d := sum - 2; d > 1e-9 || d < -1e-9 {
		t.Errorf("cpu 1 modes add up to %v s, want the 2 s sampled", sum)
	}
	if _, ok := value(fams, "linerate_nic_receive_packets_total", map[string]string{"iface": "lo"}); ok {
		t.Error("lo is exported though not shown")
	}
}

// metricsText is /metrics after two sampled seconds of rates() and two
// bench seconds, interrupts named by irqs.
func metricsText(t *testing.T, irqs map[string]IRQInfo) string {
	t.Helper()
	h := NewHub(&View{Ifaces: []string{"eth0"}, irqs: irqs, checked: time.Now(), now: time.Now})
	h.Rates(rates())
	h.Rates(rates())
	h.Bench(results.IntervalStats{T: 1, SentPPS: 1000, ReceivedPPS: 990, SentBPS: 1000 * 84 * 8, ReceivedBPS: 990 * 84 * 8})
	h.Bench(results.IntervalStats{T: 2, SentPPS: 1000, ReceivedPPS: 990, SentBPS: 1000 * 84 * 8, ReceivedBPS: 990 * 84 * 8})
	s, ok := h.Metrics()
	if !ok || s.Seq != 4 || s.Bench == nil || len(s.CPUs) != 2 {
		t.Fatalf("latest %+v %v: want the rates with the bench second", s, ok)
	}
	var buf bytes.Buffer
	if err := WriteMetrics(&buf, s); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// promtool, Prometheus' own linter, finds nothing to say about /metrics.
func TestMetricsPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("no promtool (Debian's prometheus package; make deps installs it)")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(metricsText(t, names))
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// A label value with quotes, backslashes and a newline survives.
func TestMetricsEscaping(t *testing.T) {
	odd := "a\"b\\c\nd"
	fams := parseMetrics(t, metricsText(t, map[string]IRQInfo{"41": {Name: odd}, "42": {}, "43": {}}))
	if _, ok := value(fams, "linerate_interrupts_total", map[string]string{"irq": "41", "cpu": "1", "name": odd}); !ok {
		t.Errorf("label %q lost", odd)
	}
}

func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("not the Prometheus text format: %v\n%s", err, text)
	}
	return fams
}

func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// value finds the sample of name whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		l := labelsOf(m)
		for k, v := range want {
			if l[k] != v {
				continue next
			}
		}
		if m.Counter != nil {
			return m.GetCounter().GetValue(), true
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

// A subscriber that does not read is dropped; the others and the
// publisher carry on.
func TestHubDropsSlowSubscriber(t *testing.T) {
	h := NewHub(&View{Ifaces: []string{"eth0"}, irqs: names, checked: time.Now(), now: time.Now})
	slow, _ := h.Subscribe()
	fast, cancel := h.Subscribe()
	defer cancel()
	const n = 3 * subscriberBuffer
	for i := range n {
		h.Rates(rates()) // never blocks, though slow reads nothing
		// fast reads each snapshot before the next is published.
		if s, open := <-fast; !open || s.Seq != uint64(i+1) {
			t.Fatalf("snapshot %d: seq %d, open %v", i+1, s.Seq, open)
		}
	}
	got := 0
	for range slow {
		got++
	}
	if got != subscriberBuffer {
		t.Errorf("the slow subscriber got %d snapshots before being dropped, want %d", got, subscriberBuffer)
	}
	h.Close()
	if _, open := <-fast; open {
		t.Error("channel open after Close")
	}
	if ch, _ := h.Subscribe(); ch != nil {
		if _, open := <-ch; open {
			t.Error("a subscription after Close is open")
		}
	}
}

// docs/watch.md's table lists every metric, with its labels.
func TestMetricsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/watch.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Metrics {
		labels := m.Labels
		if labels == "" {
			labels = "—"
		}
		if row := "| `" + m.Name + "` | " + labels + " | "; !strings.Contains(string(b), row) {
			t.Errorf("docs/watch.md lacks the row %q", row)
		}
	}
}
