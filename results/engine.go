package results

// Engine names a UDP send engine, as bench --engine and a plan's engine:
// take it, and as a result records the one that ran (Result.Engine).
// Its JSON form is its string.
type Engine string

// The send engines.
const (
	// EngineAuto picks the fastest engine that fits the test.
	EngineAuto Engine = "auto"
	// EngineSocket sends through UDP sockets (sendmmsg).
	EngineSocket Engine = "socket"
	// EngineRing sends through an AF_PACKET TX ring.
	EngineRing Engine = "ring"
	// EngineXDP sends through an AF_XDP socket.
	EngineXDP Engine = "xdp"
)

// BelowSocket reports whether e builds whole frames and hands them to
// the driver of the sending host's interface below its qdiscs: the ring
// (AF_PACKET with PACKET_QDISC_BYPASS) and AF_XDP. It sends forward only,
// from that interface, and a shaper there does not shape what it sends,
// so that shaper is no part of its path's ceiling.
func (e Engine) BelowSocket() bool { return e == EngineRing || e == EngineXDP }

// BypassesQdisc reports whether the send engine named (Result.Engine)
// hands its frames to the driver below the sending interface's qdiscs
// (Engine.BelowSocket).
func BypassesQdisc(engine string) bool { return Engine(engine).BelowSocket() }
