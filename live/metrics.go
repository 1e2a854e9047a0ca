package live

import (
	"bufio"
	"io"
	"maps"
	"strconv"
	"strings"

	"linerate/internal/version"
	"linerate/results"
)

// The Prometheus text exposition format (version 0.0.4) is a few lines
// per metric, and the only subtlety is escaping label values and help
// text; writing it here keeps the protobuf runtime that the client
// library would bring out of the binary. The tests parse the output with
// Prometheus's own parser (expfmt) and check it with promtool.

// MetricsContentType is the Content-Type of WriteMetrics' output.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// The types of metric families.
const (
	Counter = "counter"
	Gauge   = "gauge"
)

// Metrics is the table of everything /metrics may hold, in the order
// written, with the type and labels of each (for docs and tests).
//
// What the kernel counts is a counter (`_total`), as node_exporter
// exports it: a scraper takes rates over the window it chooses
// (rate(linerate_nic_receive_packets_total[1m])). The counters count
// from when this process began sampling: they are the sums of every
// sampled interval, so they never go backwards while it runs (a kernel
// counter that did counts as 0 for that interval) and start again from 0
// when it restarts, which rate() handles. Gauges are what is a level,
// not a count.
var Metrics = []struct {
	Name, Type, Labels, Help string
}{
	{"linerate_build_info", Gauge, "version", "Always 1; version is the linerate build serving these metrics."},
	{"linerate_sample_interval_seconds", Gauge, "", "Length of the last sampled interval."},
	{"linerate_sample_timestamp_seconds", Gauge, "", "End of the last sampled interval, in seconds since the Unix epoch."},
	{"linerate_cpu_seconds_total", Counter, "cpu, mode", "Seconds each CPU spent in each mode (user, system, irq, softirq, steal, other: nice and guest, idle, iowait), from /proc/stat."},
	{"linerate_interrupts_total", Counter, "irq, name, iface, cpu", "Interrupts of a numbered interrupt on a CPU; name is its /proc/interrupts action (a NIC queue), iface its interface when known."},
	{"linerate_cpu_interrupts_total", Counter, "cpu", "Interrupts on a CPU, every /proc/interrupts row included."},
	{"linerate_softirqs_total", Counter, "cpu, type", "Network softirqs on a CPU (type NET_RX or NET_TX), from /proc/softirqs."},
	{"linerate_softnet_processed_packets_total", Counter, "cpu", "Packets the CPU's softnet backlog processed (/proc/net/softnet_stat)."},
	{"linerate_softnet_dropped_packets_total", Counter, "cpu", "Packets dropped because the CPU's backlog was full."},
	{"linerate_softnet_times_squeezed_total", Counter, "cpu", "Times the CPU's net_rx softirq ran out of budget or time with work left."},
	{"linerate_nic_receive_bytes_total", Counter, "iface", "Bytes received by the interface (/proc/net/dev)."},
	{"linerate_nic_transmit_bytes_total", Counter, "iface", "Bytes sent by the interface."},
	{"linerate_nic_receive_packets_total", Counter, "iface", "Packets received by the interface."},
	{"linerate_nic_transmit_packets_total", Counter, "iface", "Packets sent by the interface."},
	{"linerate_nic_receive_drops_total", Counter, "iface", "Received packets the interface dropped."},
	{"linerate_nic_transmit_drops_total", Counter, "iface", "Packets dropped on the way out of the interface."},
	{"linerate_nic_receive_errors_total", Counter, "iface", "Receive errors on the interface."},
	{"linerate_nic_transmit_errors_total", Counter, "iface", "Transmit errors on the interface."},
	{"linerate_bench_elapsed_seconds", Gauge, "", "Seconds since the running bench started, at the end of its last second."},
	{"linerate_bench_warmup", Gauge, "", "1 while the running bench is in its warmup (not measured), else 0."},
	{"linerate_bench_sent_packets_total", Counter, "", "Packets the benches this process ran or served sent."},
	{"linerate_bench_received_packets_total", Counter, "", "Packets the receivers of the benches this process ran or served got."},
	{"linerate_bench_sent_bytes_total", Counter, "", "Bytes (Ethernet frames) the benches this process ran or served sent."},
	{"linerate_bench_received_bytes_total", Counter, "", "Bytes (Ethernet frames) the receivers of the benches this process ran or served got."},
}

// labelText renders label pairs (name, value, ...) as the text format
// writes them between braces; an empty value is an absent label.
func labelText(labels ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(labels); i += 2 {
		if labels[i+1] == "" {
			continue // an unknown value is an absent label
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(labels[i] + `="` + labelEscaper.Replace(labels[i+1]) + `"`)
	}
	return b.String()
}

// Totals are the counters /metrics exports: each family's series (their
// rendered labels) in the order first seen, with their values. The zero
// Totals is empty and ready.
type Totals struct {
	fams map[string]*series
	// benchT is the end (seconds since its start) of the last bench
	// second counted.
	benchT float64
}

type series struct {
	keys []string
	vals map[string]float64
}

// add adds v to the series of name with labels.
func (t *Totals) add(name string, v float64, labels ...string) {
	if t.fams == nil {
		t.fams = map[string]*series{}
	}
	f := t.fams[name]
	if f == nil {
		f = &series{vals: map[string]float64{}}
		t.fams[name] = f
	}
	k := labelText(labels...)
	if _, ok := f.vals[k]; !ok {
		f.keys = append(f.keys, k)
	}
	f.vals[k] += max(v, 0)
}

// clone is a copy that later adds to t leave alone.
func (t *Totals) clone() *Totals {
	c := &Totals{fams: make(map[string]*series, len(t.fams)), benchT: t.benchT}
	for name, f := range t.fams {
		c.fams[name] = &series{keys: f.keys[:len(f.keys):len(f.keys)], vals: maps.Clone(f.vals)}
	}
	return c
}

// addInterval counts one sampled interval of s: each rate times the
// interval's length.
func (t *Totals) addInterval(s Snapshot) {
	sec := s.Seconds
	for i, c := range s.CPUs {
		id := strconv.Itoa(c.ID)
		for _, m := range cpuModes(c) {
			t.add("linerate_cpu_seconds_total", m.pct/100*sec, "cpu", id, "mode", m.mode)
		}
		t.add("linerate_cpu_interrupts_total", c.Interrupts*sec, "cpu", id)
		t.add("linerate_softirqs_total", c.NetRX*sec, "cpu", id, "type", "NET_RX")
		t.add("linerate_softirqs_total", c.NetTX*sec, "cpu", id, "type", "NET_TX")
		t.add("linerate_softnet_processed_packets_total", c.Processed*sec, "cpu", id)
		t.add("linerate_softnet_dropped_packets_total", c.Dropped*sec, "cpu", id)
		t.add("linerate_softnet_times_squeezed_total", c.TimeSqueeze*sec, "cpu", id)
		for _, q := range s.IRQs {
			if i < len(q.PerCPU) {
				t.add("linerate_interrupts_total", q.PerCPU[i]*sec, "irq", q.IRQ, "name", q.Name, "iface", q.Iface, "cpu", id)
			}
		}
	}
	for _, n := range s.Ifaces {
		for _, m := range []struct {
			name string
			rate float64
		}{
			{"linerate_nic_receive_bytes_total", n.RxBps / 8},
			{"linerate_nic_transmit_bytes_total", n.TxBps / 8},
			{"linerate_nic_receive_packets_total", n.RxPps},
			{"linerate_nic_transmit_packets_total", n.TxPps},
			{"linerate_nic_receive_drops_total", n.RxDrops},
			{"linerate_nic_transmit_drops_total", n.TxDrops},
			{"linerate_nic_receive_errors_total", n.RxErrors},
			{"linerate_nic_transmit_errors_total", n.TxErrors},
		} {
			t.add(m.name, m.rate*sec, "iface", n.Name)
		}
	}
}

// addBench counts one second of a bench: its rates times the time since
// the bench's last second (a T that went back is a new bench).
func (t *Totals) addBench(iv results.IntervalStats) {
	sec := iv.T
	if iv.T > t.benchT {
		sec = iv.T - t.benchT
	}
	t.benchT = iv.T
	iv.ClearUnknown()
	t.add("linerate_bench_sent_packets_total", iv.SentPPS*sec)
	t.add("linerate_bench_received_packets_total", iv.ReceivedPPS*sec)
	t.add("linerate_bench_sent_bytes_total", iv.SentBPS/8*sec)
	t.add("linerate_bench_received_bytes_total", iv.ReceivedBPS/8*sec)
}

type cpuMode struct {
	mode string
	pct  float64
}

// cpuModes splits a CPU's time into modes that add up to 100%.
func cpuModes(c CPU) []cpuMode {
	other := max(0, c.Busy-c.User-c.System-c.IRQ-c.SoftIRQ-c.Steal)
	return []cpuMode{{"user", c.User}, {"system", c.System}, {"irq", c.IRQ}, {"softirq", c.SoftIRQ},
		{"steal", c.Steal}, {"other", other}, {"idle", c.Idle}, {"iowait", c.IOWait}}
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// sampleLine is one sample of a family: its rendered labels and value.
type sampleLine struct {
	labels string
	v      float64
}

// WriteMetrics writes s in the Prometheus text format: every family with
// its HELP and TYPE, in the order of Metrics; the counters are s.Totals
// (none when nil).
func WriteMetrics(w io.Writer, s Snapshot) error {
	bw := bufio.NewWriter(w)
	for _, m := range Metrics {
		var vals []sampleLine
		put := func(v float64, labels string) { vals = append(vals, sampleLine{labels, v}) }
		switch m.Name {
		case "linerate_build_info":
			put(1, labelText("version", version.Version))
		case "linerate_sample_interval_seconds":
			put(s.Seconds, "")
		case "linerate_sample_timestamp_seconds":
			if !s.Time.IsZero() {
				put(float64(s.Time.UnixNano())/1e9, "")
			}
		case "linerate_bench_elapsed_seconds":
			if s.Bench != nil {
				put(s.Bench.T, "")
			}
		case "linerate_bench_warmup":
			if s.Bench != nil {
				put(map[bool]float64{false: 0, true: 1}[s.Bench.Warmup], "")
			}
		default:
			if s.Totals == nil {
				break
			}
			if f := s.Totals.fams[m.Name]; f != nil {
				for _, k := range f.keys {
					put(f.vals[k], k)
				}
			}
		}
		if len(vals) == 0 {
			continue
		}
		bw.WriteString("# HELP " + m.Name + " " + helpEscaper.Replace(m.Help) + "\n")
		bw.WriteString("# TYPE " + m.Name + " " + m.Type + "\n")
		for _, v := range vals {
			bw.WriteString(m.Name)
			if v.labels != "" {
				bw.WriteString("{" + v.labels + "}")
			}
			bw.WriteString(" " + strconv.FormatFloat(v.v, 'g', -1, 64) + "\n")
		}
	}
	return bw.Flush()
}
