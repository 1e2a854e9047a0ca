package traffic

import (
	"net/netip"
	"time"

	"linerate/ceiling"
	"linerate/results"
	"linerate/traffic/session"
	"linerate/wire"
)

// Config is one `linerate bench` run.
type Config struct {
	// Targets are servers as HOST, HOST:PORT or [V6]:PORT.
	Targets []string
	// Spec is the test to ask each target for. For UDP, Payload may be 0
	// when FrameSize is set.
	Spec wire.Spec
	// FrameSize is the UDP Ethernet frame size with FCS (--size); the
	// payload follows from each target's address family.
	FrameSize int
	// Mix, when it has two parts or more, is a mix of UDP frame sizes
	// sent in its ratio (--size imix, --size 64:7,570:4,1518:1), in place
	// of FrameSize.
	Mix ceiling.Mix
	// Bind is the local source address (invalid: chosen by routing).
	Bind  netip.Addr
	Token string
	// CPUs pins the client's sender and receiver threads, round robin.
	CPUs []int
	// Engine is "socket" (default), "ring" (AF_PACKET TX_RING; UDP,
	// IPv4, forward only), "xdp" (AF_XDP, as the ring) or "auto".
	Engine string
	// Idle is how long latency probes run before the load (with
	// Spec.ProbeInterval).
	Idle time.Duration
	// Sampling records the client's counters (nil: none).
	Sampling session.Sampling
	// Setup runs fn where the client's sockets must be made (a network
	// namespace, in tests); nil runs it directly.
	Setup func(fn func() error) error
	// OnInterval is called once a second with the last second's figures.
	OnInterval func(results.IntervalStats)
	// DialTimeout bounds connecting to a target (0: 5s).
	DialTimeout time.Duration
	// Drops reads the drop counters of the client's namespace, snapshotted
	// around the measured window for the drop ledger (nil: none).
	Drops session.DropCounters
	// Machine identifies the client's kernel (its boot id): a server on
	// the same machine shares its CPUs.
	Machine string
	// RRUL adds the figures of a Realtime Response Under Load test to
	// the result (results.RRUL: latency idle and under load, goodput per
	// stream and mark, every probe's round trip over time): bench rrul.
	RRUL bool
	// Ready, when set, is called once every target has accepted the test
	// and the client's flows are open, before anything is sent (the idle
	// probes, the servers' start): a start barrier (a third-party flow
	// held until its controller's go). An error ends the run there, every
	// flow closed.
	Ready func() error
}

func (c *Config) setup(fn func() error) error {
	if c.Setup == nil {
		return fn()
	}
	return c.Setup(fn)
}
