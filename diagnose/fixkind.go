package diagnose

// FixKind says what a Fix changes. The kinds are diagnose's vocabulary:
// rules propose them and tune (which imports diagnose) carries them out,
// one builder per kind. Its JSON form is the bare string ("sysctl").
type FixKind string

// The kinds, with the Target and Value each takes (see Fix).
const (
	FixIRQAffinity FixKind = "irq-affinity"
	FixRPS         FixKind = "rps"
	FixRPSFlow     FixKind = "rps-flow"
	FixXPS         FixKind = "xps"
	FixSysctl      FixKind = "sysctl"
	FixCoalesce    FixKind = "coalesce"
	FixRings       FixKind = "rings"
	FixChannels    FixKind = "channels"
	FixRSSEqual    FixKind = "rss-equal"
	// FixRSSTable sets a whole indirection table; no rule proposes it, it
	// is what puts back the table an rss-equal replaced.
	FixRSSTable   FixKind = "rss-table"
	FixFlowHash   FixKind = "flow-hash"
	FixFeature    FixKind = "feature"
	FixMTU        FixKind = "mtu"
	FixIRQBalance FixKind = "irqbalance"
	// FixIRQBalanceBanned sets the CPUs irqbalance leaves alone
	// (IRQBALANCE_BANNED_CPULIST): "box", a CPU list.
	FixIRQBalanceBanned FixKind = "irqbalance-banned"
	// FixTxQueueLen sets an interface's txqueuelen: "eth0", a length.
	FixTxQueueLen FixKind = "txqueuelen"
	// FixQdisc replaces an interface's root qdisc: "eth0", "fq_codel" or
	// "cake" (options after commas), "default" for the kernel's own.
	FixQdisc    FixKind = "qdisc"
	FixGovernor FixKind = "governor"
	// FixBoot is a kernel command line or firmware edit, or work on the
	// hardware ("hardware", "cable", "firewall", "qdisc"): advice, printed
	// and never applied.
	FixBoot FixKind = "boot"
	// FixBench is advice for whoever runs the measurement (more sender
	// threads, a receiver on the right port): never applied.
	FixBench FixKind = "bench"
)

// FixKinds lists every kind, in the order of the table of Fix.
func FixKinds() []FixKind {
	return []FixKind{
		FixIRQAffinity, FixRPS, FixRPSFlow, FixXPS, FixSysctl,
		FixCoalesce, FixRings, FixChannels, FixRSSEqual, FixRSSTable,
		FixFlowHash, FixFeature, FixMTU, FixIRQBalance, FixIRQBalanceBanned,
		FixTxQueueLen, FixQdisc, FixGovernor,
		FixBoot, FixBench,
	}
}

func (k FixKind) String() string { return string(k) }

// Advice is true for the kinds that are never applied, only printed as
// the exact thing to do.
func (k FixKind) Advice() bool { return k == FixBoot || k == FixBench }
