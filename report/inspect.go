package report

import (
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"linerate/box"
	"linerate/source/cpuset"
	"linerate/source/ethtool"
)

// Inspect writes the box as tables a person can scan: one block per NIC,
// then the CPUs, thermal state, irqbalance and sysctls, then the warnings
// about a capture. An item that could not be read shows "unsupported:
// <reason>" (the driver or hardware lacks it) or "unknown: <reason>"
// (linerate could not tell).
func Inspect(w io.Writer, b *box.Box) error {
	p := &printer{w: w}
	p.header(b)
	for i := range b.NICs {
		p.nic(b, &b.NICs[i])
	}
	p.machine(b)
	p.warnings(b)
	return p.err
}

// warnings lists, last, what a capture held that linerate could not read:
// each names the file and line, and the value or item left unknown.
func (p *printer) warnings(b *box.Box) {
	if len(b.Warnings) == 0 {
		return
	}
	p.f("\nwarnings: the capture holds text linerate could not read; those values are unknown\n")
	for _, w := range b.Warnings {
		p.f("  warning: %s\n", w)
	}
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, format, args...)
}

// table prints rows with aligned columns, each line indented.
func (p *printer) table(indent string, rows [][]string) {
	if p.err != nil || len(rows) == 0 {
		return
	}
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprint(tw, indent+strings.Join(r, "\t")+"\n")
	}
	p.err = tw.Flush()
}

// why words a reason from an Unsupported map.
func why(reason string) string {
	for _, s := range []string{"not supported", "no limit", "not a PCI Express", "the driver has no", "no Raspberry Pi", "no thermal", "no cpufreq"} {
		if strings.HasPrefix(reason, s) {
			return "unsupported: " + reason
		}
	}
	return "unknown: " + reason
}

func (p *printer) header(b *box.Box) {
	m := b.Meta
	var parts []string
	for _, s := range []string{m.Source, "host " + m.Host, "kernel " + m.Kernel, m.Arch} {
		if s != "" && s != "host " && s != "kernel " {
			parts = append(parts, s)
		}
	}
	if !m.Time.IsZero() {
		parts = append(parts, m.Time.UTC().Format(time.DateTime+" MST"))
	}
	p.f("%s\n", strings.Join(parts, " · "))
}

// label prints a NIC line: a fixed-width label and its value.
func (p *printer) line(label, format string, args ...any) {
	p.f("  %-11s %s\n", label, fmt.Sprintf(format, args...))
}

func (p *printer) nic(b *box.Box, n *box.NIC) {
	u := n.Unsupported
	p.f("\n%s  %s", n.Name, orDash(string(n.Kind)))
	if d := n.Driver; d != nil {
		p.f("  driver %s %s", d.Driver, d.Version)
		if d.Firmware != "" {
			p.f("  firmware %s", d.Firmware)
		}
		if d.BusInfo != "" {
			p.f("  bus %s", d.BusInfo)
		}
	} else if r, ok := u["driver"]; ok {
		p.f("  driver %s", why(r))
	}
	p.f("\n")

	// Link.
	state := n.OperState
	if _, ok := u["carrier"]; !ok {
		state += ", carrier " + yesNo(n.Carrier)
	}
	if l := n.Link; l != nil {
		if l.SpeedMbps > 0 {
			state += fmt.Sprintf(", %d Mb/s %s", l.SpeedMbps, l.Duplex)
		} else {
			state += ", speed unknown"
		}
		state += ", autoneg " + onOff(l.Autoneg)
		if l.Port != "" {
			state += ", port " + l.Port
		}
	} else if r, ok := u["link"]; ok {
		state += "; link settings " + why(r)
	}
	if n.MAC != "" {
		state += "  " + n.MAC
	}
	p.line("link", "%s", state)

	mtu := strconv.Itoa(n.MTU)
	if n.MaxMTU > 0 {
		mtu += fmt.Sprintf(" (min %d, max %d)", n.MinMTU, n.MaxMTU)
	} else if r, ok := u["max_mtu"]; ok {
		mtu += " (max " + why(r) + ")"
	}
	if n.TxQueueLen > 0 {
		mtu += fmt.Sprintf("  txqueuelen %d", n.TxQueueLen)
	}
	p.line("mtu", "%s", mtu)

	if c := n.Channels; c != nil {
		var parts []string
		for _, x := range []struct {
			name     string
			cur, max uint32
		}{{"combined", c.Combined, c.MaxCombined}, {"rx", c.RX, c.MaxRX}, {"tx", c.TX, c.MaxTX}, {"other", c.Other, c.MaxOther}} {
			if x.cur != 0 || x.max != 0 {
				parts = append(parts, fmt.Sprintf("%s %d/%d", x.name, x.cur, x.max))
			}
		}
		if len(parts) == 0 {
			parts = append(parts, "none reported")
		}
		p.line("channels", "%s  (current/max)", strings.Join(parts, ", "))
	} else {
		p.unsup("channels", u["channels"])
	}
	if r := n.Rings; r != nil {
		s := fmt.Sprintf("rx %d/%d, tx %d/%d", r.RX, r.RXMax, r.TX, r.TXMax)
		if r.RXMiniMax > 0 {
			s += fmt.Sprintf(", rx-mini %d/%d", r.RXMini, r.RXMiniMax)
		}
		if r.RXJumboMax > 0 {
			s += fmt.Sprintf(", rx-jumbo %d/%d", r.RXJumbo, r.RXJumboMax)
		}
		p.line("rings", "%s  (current/max)", s)
	} else {
		p.unsup("rings", u["rings"])
	}
	if c := n.Coalesce; c != nil {
		s := fmt.Sprintf("adaptive rx %s tx %s", onOff(c.AdaptiveRX), onOff(c.AdaptiveTX))
		var params []string
		for _, name := range ethtool.CoalesceParams {
			if v, ok := c.Params[name]; ok && v != 0 {
				params = append(params, fmt.Sprintf("%s %d", name, v))
			}
		}
		if len(params) > 0 {
			s += "; " + strings.Join(params, ", ")
		} else {
			s += "; every parameter 0"
		}
		p.line("coalesce", "%s", s)
	} else {
		p.unsup("coalesce", u["coalesce"])
	}
	p.features(n)
	p.rss(n)
	p.flowHash(n)
	p.queues(n)
	p.nicIRQs(b, n)
	p.nicPCIe(b, n)
	var rest []string
	shown := map[string]bool{"driver": true, "link": true, "max_mtu": true, "channels": true, "rings": true,
		"coalesce": true, "features": true, "rss": true, "stats": true, "carrier": true, "queue_counters": true, "irqs": true}
	for k := range u {
		if !shown[k] && !strings.HasPrefix(k, "flow_hash.") {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		p.line(k, "%s", why(u[k]))
	}
}

func (p *printer) unsup(label, reason string) {
	if reason == "" {
		reason = "not read"
	}
	p.line(label, "%s", why(reason))
}

// keyFeatures are the offloads that matter most for throughput, with the
// names `ethtool -k` prints and a short label.
var keyFeatures = []struct{ name, short string }{
	{"rx-checksumming", "rx-csum"},
	{"tx-checksumming", "tx-csum"},
	{"scatter-gather", "sg"},
	{"tcp-segmentation-offload", "tso"},
	{"generic-segmentation-offload", "gso"},
	{"generic-receive-offload", "gro"},
	{"large-receive-offload", "lro"},
	{"rx-gro-hw", "gro-hw"},
	{"receive-hashing", "rxhash"},
	{"ntuple-filters", "ntuple"},
}

func (p *printer) features(n *box.NIC) {
	if n.Features == nil {
		p.unsup("offloads", n.Unsupported["features"])
		return
	}
	var parts []string
	key := map[string]bool{}
	for _, k := range keyFeatures {
		f, ok := n.Features.Get(k.name)
		if !ok {
			continue
		}
		key[k.name] = true
		s := k.short + " " + onOff(f.On)
		if f.Fixed {
			s += "(fixed)"
		}
		parts = append(parts, s)
	}
	var on, off, fixed int
	var onNames []string
	for _, f := range n.Features {
		if key[f.Name] {
			continue
		}
		switch {
		case f.On:
			on++
			if !f.Fixed {
				onNames = append(onNames, f.Name)
			}
		default:
			off++
		}
		if f.Fixed {
			fixed++
		}
	}
	p.line("offloads", "%s", strings.Join(parts, "  "))
	if on+off > 0 {
		s := fmt.Sprintf("%d more: %d on, %d off, %d fixed", on+off, on, off, fixed)
		if len(onNames) > 0 && len(onNames) <= 12 {
			s += "; on and changeable: " + strings.Join(onNames, " ")
		}
		p.line("", "%s", s)
	}
}

func (p *printer) rss(n *box.NIC) {
	r := n.RSS
	if r == nil {
		p.unsup("rss", n.Unsupported["rss"])
		return
	}
	var s string
	if len(r.Indirection) == 0 {
		s = fmt.Sprintf("no indirection table (%d rx rings)", r.RXRings)
	} else {
		var shares []string
		for q, c := range r.QueueShare() {
			if c > 0 {
				shares = append(shares, fmt.Sprintf("queue %d ×%d", q, c))
			}
		}
		s = fmt.Sprintf("%d entries: %s", len(r.Indirection), strings.Join(shares, ", "))
	}
	var funcs []string
	for _, name := range sortedKeys(r.HashFuncs) {
		if r.HashFuncs[name] {
			funcs = append(funcs, name)
		}
	}
	if len(funcs) > 0 {
		s += "; hash " + strings.Join(funcs, "+")
	} else if len(r.HashFuncs) > 0 {
		s += "; no hash function on"
	}
	if len(r.Key) > 0 {
		k := hex.EncodeToString(r.Key)
		if len(k) > 16 {
			k = k[:16] + "…"
		}
		s += fmt.Sprintf("; key %d bytes %s", len(r.Key), k)
	} else {
		s += "; key not reported"
	}
	p.line("rss", "%s", s)
}

func (p *printer) flowHash(n *box.NIC) {
	var parts []string
	for _, ft := range ethtool.FlowTypes {
		t := string(ft)
		if l, ok := n.FlowHash[t]; ok {
			h, err := ethtool.ParseFlowHashLetters(l)
			fields := "none"
			if err == nil && h != 0 {
				fields = strings.Join(shortHash(h), ", ")
			} else if err != nil {
				fields = l
			}
			parts = append(parts, t+": "+fields)
		} else if r, ok := n.Unsupported["flow_hash."+t]; ok {
			parts = append(parts, t+": "+why(r))
		}
	}
	if len(parts) == 0 {
		return
	}
	// All four unsupported for the same reason: say it once.
	if len(n.FlowHash) == 0 {
		r := n.Unsupported["flow_hash.tcp4"]
		same := true
		for _, ft := range ethtool.FlowTypes {
			if n.Unsupported["flow_hash."+string(ft)] != r {
				same = false
			}
		}
		if same {
			p.line("flow hash", "%s", why(r))
			return
		}
	}
	p.line("flow hash", "%s", strings.Join(parts, "; "))
}

// shortHash names hashed fields briefly: "IP SA", "IP DA", "src port", ...
func shortHash(h ethtool.FlowHash) []string {
	var out []string
	for _, l := range h.Lines() {
		switch {
		case strings.HasPrefix(l, "L4 bytes 0 & 1"):
			l = "src port"
		case strings.HasPrefix(l, "L4 bytes 2 & 3"):
			l = "dst port"
		}
		out = append(out, l)
	}
	return out
}

func (p *printer) queues(n *box.NIC) {
	if len(n.RXQueues) == 0 && len(n.TXQueues) == 0 {
		p.line("queues", "none in sysfs")
		return
	}
	note := ""
	if r, ok := n.Unsupported["queue_counters"]; ok {
		note = "  (packets: " + why(r) + ")"
	}
	p.line("queues", "%d rx, %d tx%s", len(n.RXQueues), len(n.TXQueues), note)
	rows := [][]string{{"QUEUE", "CPUS", "FLOW_CNT", "PACKETS", "BYTES"}}
	for _, q := range n.RXQueues {
		rows = append(rows, []string{fmt.Sprintf("rx-%d", q.Index), "rps " + cpuList(q.RPSCPUList, q.RPSCPUs),
			strconv.Itoa(q.RPSFlowCnt), count(q.Packets), count(q.Bytes)})
	}
	for _, q := range n.TXQueues {
		rows = append(rows, []string{fmt.Sprintf("tx-%d", q.Index), "xps " + cpuList(q.XPSCPUList, q.XPSCPUs),
			"", count(q.Packets), count(q.Bytes)})
	}
	p.table("    ", rows)
}

func (p *printer) nicIRQs(b *box.Box, n *box.NIC) {
	if len(n.IRQs) == 0 {
		if r, ok := n.Unsupported["irqs"]; ok {
			p.line("irqs", "%s", why(r))
		} else {
			p.line("irqs", "none")
		}
		return
	}
	p.line("irqs", "%d, from %s", len(n.IRQs), n.IRQSource)
	ncpu := 0
	for _, num := range n.IRQs {
		if q, ok := b.IRQ(num); ok && len(q.PerCPU) > ncpu {
			ncpu = len(q.PerCPU)
		}
	}
	head := []string{"IRQ", "NAME", "AFFINITY", "EFFECTIVE"}
	for i := range ncpu {
		head = append(head, fmt.Sprintf("CPU%d", i))
	}
	rows := [][]string{head}
	for _, num := range n.IRQs {
		q, ok := b.IRQ(num)
		if !ok {
			continue
		}
		aff := cpuList(q.AffinityList, q.SMPAffinity)
		eff := "-"
		if q.Effective != nil {
			eff = listOrNone(q.Effective)
		}
		if r, ok := q.Unsupported["affinity"]; ok {
			aff, eff = why(r), ""
		}
		row := []string{strconv.Itoa(q.Number), orDash(q.Name), aff, eff}
		for i := range ncpu {
			if i < len(q.PerCPU) {
				row = append(row, strconv.FormatUint(q.PerCPU[i], 10))
			} else {
				row = append(row, "-")
			}
		}
		rows = append(rows, row)
	}
	p.table("    ", rows)
}

func (p *printer) nicPCIe(b *box.Box, n *box.NIC) {
	if len(n.PCIePath) == 0 {
		if r, ok := n.Unsupported["pcie_path"]; ok {
			p.line("pcie", "%s", why(r))
		}
		return
	}
	p.line("pcie", "path %s", strings.Join(n.PCIePath, " → "))
	rows := [][]string{{"ADDR", "ID", "DRIVER", "LINK", "MAX", "MPS", "MRRS"}}
	for _, addr := range n.PCIePath {
		d, ok := b.PCIeDev(addr)
		if !ok {
			continue
		}
		id := strings.TrimPrefix(d.Vendor, "0x") + ":" + strings.TrimPrefix(d.Device, "0x")
		if d.RootPort {
			id += " root port"
		}
		link, max := linkText(d.CurSpeedGTs, d.CurWidth), linkText(d.MaxSpeedGTs, d.MaxWidth)
		if r, ok := d.Unsupported["link"]; ok {
			link, max = why(r), ""
		}
		mps := fmt.Sprintf("%d (supported %d)", d.MPS, d.MPSSupported)
		mrrs := strconv.Itoa(d.MRRS)
		if r, ok := d.Unsupported["mps"]; ok {
			mps, mrrs = why(r), ""
		}
		rows = append(rows, []string{addr, id, orDash(d.Driver), link, max, mps, mrrs})
	}
	p.table("    ", rows)
}

func linkText(gts float64, width int) string {
	if gts == 0 && width == 0 {
		return "-"
	}
	return strconv.FormatFloat(gts, 'f', -1, 64) + " GT/s x" + strconv.Itoa(width)
}

func (p *printer) machine(b *box.Box) {
	p.f("\nbox\n")
	online := 0
	for _, c := range b.CPUs {
		if c.Online {
			online++
		}
	}
	if len(b.CPUs) > 0 {
		// Without cpufreq anywhere, one line says so instead of a table of
		// dashes.
		freq, reason := false, ""
		for _, c := range b.CPUs {
			if r, ok := c.Unsupported["cpufreq"]; ok {
				reason = r
			} else {
				freq = true
			}
		}
		if !freq {
			var off []int
			for _, c := range b.CPUs {
				if !c.Online {
					off = append(off, c.ID)
				}
			}
			s := fmt.Sprintf("%d, %d online", len(b.CPUs), online)
			if len(off) > 0 {
				s += " (offline: " + cpuset.FormatList(off) + ")"
			}
			p.line("cpus", "%s; frequency %s", s, why(reason))
		} else {
			p.line("cpus", "%d, %d online", len(b.CPUs), online)
			rows := [][]string{{"CPU", "ONLINE", "CUR MHz", "MIN MHz", "MAX MHz", "GOVERNOR"}}
			for _, c := range b.CPUs {
				if r, ok := c.Unsupported["cpufreq"]; ok {
					rows = append(rows, []string{strconv.Itoa(c.ID), yesNo(c.Online), why(r), "", "", ""})
					continue
				}
				rows = append(rows, []string{strconv.Itoa(c.ID), yesNo(c.Online), mhz(c.CurKHz), mhz(c.MinKHz), mhz(c.MaxKHz), orDash(c.Governor)})
			}
			p.table("    ", rows)
		}
	} else if r, ok := b.Unsupported["cpus"]; ok {
		p.line("cpus", "%s", why(r))
	}
	if len(b.Thermal) > 0 {
		var zs []string
		for _, z := range b.Thermal {
			zs = append(zs, fmt.Sprintf("%s %.1f °C", orDash(z.Type), z.Celsius))
		}
		p.line("thermal", "%s", strings.Join(zs, ", "))
	} else if r, ok := b.Unsupported["thermal"]; ok {
		p.line("thermal", "%s", why(r))
	}
	if t := b.Throttle; t != nil {
		var now, past []string
		for _, x := range []struct {
			on   bool
			name string
			list *[]string
		}{
			{t.UnderVoltage, "under-voltage", &now}, {t.FreqCapped, "frequency capped", &now},
			{t.Throttled, "throttled", &now}, {t.SoftTempLimit, "soft temperature limit", &now},
			{t.UnderVoltageOccurred, "under-voltage", &past}, {t.FreqCappedOccurred, "frequency capped", &past},
			{t.ThrottledOccurred, "throttled", &past}, {t.SoftTempLimitOccurred, "soft temperature limit", &past},
		} {
			if x.on {
				*x.list = append(*x.list, x.name)
			}
		}
		s := fmt.Sprintf("0x%x", t.Raw)
		if len(now) == 0 && len(past) == 0 {
			s += " (never throttled since boot)"
		} else {
			if len(now) > 0 {
				s += "; now: " + strings.Join(now, ", ")
			}
			if len(past) > 0 {
				s += "; since boot: " + strings.Join(past, ", ")
			}
		}
		p.line("throttle", "%s", s)
	} else if r, ok := b.Unsupported["throttle"]; ok {
		p.line("throttle", "%s", why(r))
	}
	if b.IRQBalance != nil {
		p.line("irqbalance", "%s", map[bool]string{true: "running", false: "not running"}[*b.IRQBalance])
	} else if r, ok := b.Unsupported["irqbalance"]; ok {
		p.line("irqbalance", "%s", why(r))
	}
	if r, ok := b.Unsupported["interrupts"]; ok {
		p.line("interrupts", "%s", why(r))
	}
	if r, ok := b.Unsupported["counters"]; ok {
		p.line("counters", "%s", why(r))
	}
	if len(b.Sysctls) > 0 {
		p.line("sysctls", "")
		var rows [][]string
		for _, s := range b.Sysctls {
			v := s.Value
			if s.Err != "" {
				v = why(s.Err)
			}
			rows = append(rows, []string{s.Name, v})
		}
		p.table("    ", rows)
	}
}

func mhz(khz int64) string {
	if khz == 0 {
		return "-"
	}
	return strconv.FormatInt(khz/1000, 10)
}

// cpuList prints a CPU set as a list ("0-3"), "none" when empty, or the raw
// mask when it could not be decoded.
func cpuList(l []int, mask string) string {
	if len(l) == 0 && mask != "" && strings.Trim(mask, "0,") != "" {
		return mask
	}
	if len(l) == 0 && mask == "" {
		return "-"
	}
	return listOrNone(l)
}

func listOrNone(l []int) string {
	if len(l) == 0 {
		return "none"
	}
	return cpuset.FormatList(l)
}

func count(v *uint64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatUint(*v, 10)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
