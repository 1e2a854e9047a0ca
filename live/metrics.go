package live

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// The Prometheus text exposition format (version 0.0.4) is a few lines
// per metric, and the only subtlety is escaping label values and help
// text; writing it here keeps the protobuf runtime that the client
// library would bring out of the binary. The tests parse the output with
// Prometheus's own parser (expfmt).

// MetricsContentType is the Content-Type of WriteMetrics' output.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// Metrics is the table of everything /metrics may hold, in the order
// written, with the labels each has (for docs and tests). Every one is a
// gauge holding a rate over the last interval: Prometheus would rather
// have counters, but these are the figures the sampler has, and a scrape
// sees the same second the page shows.
var Metrics = []struct {
	Name, Labels, Help string
}{
	{"linerate_sample_interval_seconds", "", "Length of the last sampled interval."},
	{"linerate_sample_timestamp_seconds", "", "End of the last sampled interval, in seconds since the Unix epoch."},
	{"linerate_cpu_busy_ratio", "cpu, mode", "Share of the CPU's time spent in each busy mode over the last interval (user, system, irq, softirq, steal, other: nice and guest); the modes add up to the CPU's busy share."},
	{"linerate_interrupts_per_second", "irq, name, iface, cpu", "Interrupts per second of a numbered interrupt on a CPU; name is its /proc/interrupts action (a NIC queue), iface its interface when known."},
	{"linerate_cpu_interrupts_per_second", "cpu", "Interrupts per second on a CPU, every /proc/interrupts row included."},
	{"linerate_softirqs_per_second", "cpu, type", "Network softirqs per second on a CPU (type NET_RX or NET_TX)."},
	{"linerate_softnet_processed_per_second", "cpu", "Packets per second the CPU's softnet backlog processed (/proc/net/softnet_stat)."},
	{"linerate_softnet_dropped_per_second", "cpu", "Packets per second dropped because the CPU's backlog was full."},
	{"linerate_softnet_time_squeezed_per_second", "cpu", "Times per second the CPU's net_rx softirq ran out of budget or time with work left."},
	{"linerate_iface_rx_bytes_per_second", "iface", "Bytes per second received by the interface (/proc/net/dev)."},
	{"linerate_iface_tx_bytes_per_second", "iface", "Bytes per second sent by the interface."},
	{"linerate_iface_rx_packets_per_second", "iface", "Packets per second received by the interface."},
	{"linerate_iface_tx_packets_per_second", "iface", "Packets per second sent by the interface."},
	{"linerate_iface_rx_dropped_per_second", "iface", "Received packets per second the interface dropped."},
	{"linerate_iface_tx_dropped_per_second", "iface", "Packets per second dropped on the way out of the interface."},
	{"linerate_iface_rx_errors_per_second", "iface", "Receive errors per second on the interface."},
	{"linerate_iface_tx_errors_per_second", "iface", "Transmit errors per second on the interface."},
	{"linerate_bench_elapsed_seconds", "", "Seconds since the running bench started, at the end of its last second."},
	{"linerate_bench_warmup", "", "1 while the running bench is in its warmup (not measured), else 0."},
	{"linerate_bench_sent_packets_per_second", "", "Packets per second the running bench sent in its last second."},
	{"linerate_bench_received_packets_per_second", "", "Packets per second the running bench's receivers got in its last second."},
	{"linerate_bench_sent_bytes_per_second", "", "Bytes per second (Ethernet frames) the running bench sent in its last second."},
	{"linerate_bench_received_bytes_per_second", "", "Bytes per second (Ethernet frames) the running bench's receivers got in its last second."},
}

// promWriter writes metric families: one HELP and TYPE, then samples.
type promWriter struct {
	w    *bufio.Writer
	help map[string]string
	open string // the family whose header was written last
}

func (p *promWriter) sample(name string, v float64, labels ...string) {
	if p.open != name {
		p.w.WriteString("# HELP " + name + " " + escapeHelp(p.help[name]) + "\n")
		p.w.WriteString("# TYPE " + name + " gauge\n")
		p.open = name
	}
	p.w.WriteString(name)
	sep := "{"
	for i := 0; i+1 < len(labels); i += 2 {
		if labels[i+1] == "" {
			continue // an unknown value is an absent label
		}
		p.w.WriteString(sep + labels[i] + `="` + escapeLabel(labels[i+1]) + `"`)
		sep = ","
	}
	if sep == "," {
		p.w.WriteString("}")
	}
	p.w.WriteString(" " + strconv.FormatFloat(v, 'g', -1, 64) + "\n")
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

// WriteMetrics writes s in the Prometheus text format: every family with
// its HELP and TYPE, CPU shares as ratios (0-1), bits as bytes.
func WriteMetrics(w io.Writer, s Snapshot) error {
	help := make(map[string]string, len(Metrics))
	for _, m := range Metrics {
		help[m.Name] = m.Help
	}
	p := &promWriter{w: bufio.NewWriter(w), help: help}
	p.sample("linerate_sample_interval_seconds", s.Seconds)
	if !s.Time.IsZero() {
		p.sample("linerate_sample_timestamp_seconds", float64(s.Time.UnixNano())/1e9)
	}
	cpu := func(c CPU) string { return strconv.Itoa(c.ID) }
	for _, c := range s.CPUs {
		other := max(0, c.Busy-c.User-c.System-c.IRQ-c.SoftIRQ-c.Steal)
		for _, m := range []struct {
			mode string
			pct  float64
		}{{"user", c.User}, {"system", c.System}, {"irq", c.IRQ}, {"softirq", c.SoftIRQ}, {"steal", c.Steal}, {"other", other}} {
			p.sample("linerate_cpu_busy_ratio", m.pct/100, "cpu", cpu(c), "mode", m.mode)
		}
	}
	for _, q := range s.IRQs {
		for i, v := range q.PerCPU {
			id := strconv.Itoa(i)
			if i < len(s.CPUs) {
				id = cpu(s.CPUs[i])
			}
			p.sample("linerate_interrupts_per_second", v, "irq", q.IRQ, "name", q.Name, "iface", q.Iface, "cpu", id)
		}
	}
	perCPU := func(name string, get func(CPU) float64, labels ...string) {
		for _, c := range s.CPUs {
			p.sample(name, get(c), append([]string{"cpu", cpu(c)}, labels...)...)
		}
	}
	perCPU("linerate_cpu_interrupts_per_second", func(c CPU) float64 { return c.Interrupts })
	for _, c := range s.CPUs {
		p.sample("linerate_softirqs_per_second", c.NetRX, "cpu", cpu(c), "type", "NET_RX")
		p.sample("linerate_softirqs_per_second", c.NetTX, "cpu", cpu(c), "type", "NET_TX")
	}
	perCPU("linerate_softnet_processed_per_second", func(c CPU) float64 { return c.Processed })
	perCPU("linerate_softnet_dropped_per_second", func(c CPU) float64 { return c.Dropped })
	perCPU("linerate_softnet_time_squeezed_per_second", func(c CPU) float64 { return c.TimeSqueeze })
	for _, m := range []struct {
		name string
		get  func(Iface) float64
	}{
		{"linerate_iface_rx_bytes_per_second", func(i Iface) float64 { return i.RxBps / 8 }},
		{"linerate_iface_tx_bytes_per_second", func(i Iface) float64 { return i.TxBps / 8 }},
		{"linerate_iface_rx_packets_per_second", func(i Iface) float64 { return i.RxPps }},
		{"linerate_iface_tx_packets_per_second", func(i Iface) float64 { return i.TxPps }},
		{"linerate_iface_rx_dropped_per_second", func(i Iface) float64 { return i.RxDrops }},
		{"linerate_iface_tx_dropped_per_second", func(i Iface) float64 { return i.TxDrops }},
		{"linerate_iface_rx_errors_per_second", func(i Iface) float64 { return i.RxErrors }},
		{"linerate_iface_tx_errors_per_second", func(i Iface) float64 { return i.TxErrors }},
	} {
		for _, i := range s.Ifaces {
			p.sample(m.name, m.get(i), "iface", i.Name)
		}
	}
	if b := s.Bench; b != nil {
		warm := 0.0
		if b.Warmup {
			warm = 1
		}
		p.sample("linerate_bench_elapsed_seconds", b.T)
		p.sample("linerate_bench_warmup", warm)
		// An unknown side has no sample: absent, not a measured 0.
		if !b.SentUnknown {
			p.sample("linerate_bench_sent_packets_per_second", b.SentPPS)
			p.sample("linerate_bench_sent_bytes_per_second", b.SentBPS/8)
		}
		if !b.ReceivedUnknown {
			p.sample("linerate_bench_received_packets_per_second", b.ReceivedPPS)
			p.sample("linerate_bench_received_bytes_per_second", b.ReceivedBPS/8)
		}
	}
	return p.w.Flush()
}
