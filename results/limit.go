package results

// Limit is what limited a run, the verdict's answer (Summary.LimitedBy).
// Its JSON form is the string of its constant.
type Limit string

// What can limit a run.
const (
	// LimitUnknown: the verdict cannot tell (Summary.LimitedWhy says why).
	LimitUnknown Limit = ""
	// LimitLink: the path's ceiling (a link's speed or a shaper's rate)
	// was reached.
	LimitLink Limit = "link"
	// LimitSender and LimitReceiver: an end's threads or CPU were
	// saturated.
	LimitSender   Limit = "sender"
	LimitReceiver Limit = "receiver"
	// LimitDUT: a device in the middle dropped (its counters said so).
	LimitDUT Limit = "dut"
	// LimitPath: lost or held back between the ends, nowhere the counters
	// saw: named only when both ends' counters were read (an end that
	// reports none, a plain iperf3 peer, leaves the verdict unknown).
	LimitPath Limit = "path"
	// LimitCPU: a CPU of a sampled machine (an end, or a host in the
	// middle) was full, mostly of interrupts and softirqs, while no thread
	// of the test was: the kernel's packet work on that CPU set the pace.
	// Summary.LimitedWhy names the CPU, its softirq share and the
	// machine's other CPUs, and points to diagnose.
	LimitCPU Limit = "cpu"
	// LimitAskedRate: the rate asked for was met.
	LimitAskedRate Limit = "asked rate"
	// LimitOverCeiling: more arrived than the path's computed ceiling
	// lets through (over OverCeiling of it), so the ceiling's model or
	// the path is not what linerate thinks; Summary.LimitedWhy names the
	// suspect (a shaper the traffic did not pass through, a wrong link
	// speed, segments counted above the frame rate).
	LimitOverCeiling Limit = "over ceiling"
	// LimitLinkDown: an interface of the path was down during the run
	// (Result.LinkEvents) and the loss, or the shortfall of the rate,
	// fell then.
	LimitLinkDown Limit = "link down"
)

func (l Limit) String() string {
	if l == LimitUnknown {
		return "unknown"
	}
	return string(l)
}

// The thresholds of "who was the limit", used by the verdict here and by
// diagnose's rules on the same question, so the two never disagree.
const (
	// BusyThread: a thread this busy (share of one CPU) is saturated.
	BusyThread = 0.90
	// MetRate: achieved/asked at or above this, the asked rate was met.
	MetRate = 0.99
	// Lossy: a loss ratio above this points past the sender.
	Lossy = 0.005
	// AtLink: achieved/ceiling at or above this, the link is full.
	AtLink = 0.97
	// OverCeiling: achieved/ceiling above this cannot be: a shaper's
	// bucket lets a burst through and the clocks of the two ends differ,
	// but not by 5 %.
	OverCeiling = 1.05
	// KernelShare: a full CPU (BusyThread of it busy on average) that
	// spent at least this share of its busy time in interrupts and
	// softirqs was full of the kernel's packet work, not of a program.
	KernelShare = 0.25
	// IdleCPU: a CPU less busy than this, in percent, is called idle.
	IdleCPU = 5.0
)

// Side is which end of a test a figure belongs to. Its JSON form is the
// string of its constant.
type Side string

// The sides of a test.
const (
	// SideClient is the end that ran `linerate bench` (or the agent that
	// ran a third-party flow as the client).
	SideClient Side = "client"
	// SideServer is an end that served (`linerate serve`).
	SideServer Side = "server"
	// SideDUT is a device the test crossed, neither end (the controller of
	// third-party flows, or a host sampled at its request).
	SideDUT Side = "dut"
)

func (s Side) String() string { return string(s) }
