package traffic

import (
	"time"

	"linerate/ceiling"
	"linerate/wire"
)

// Flow is what a controller asks an agent to run.
type Flow struct {
	// Targets are the agents to test against, as the agent itself reaches
	// them: HOST[:PORT] (names resolve on the agent).
	Targets []string  `json:"targets"`
	Spec    wire.Spec `json:"spec"`
	// FrameSize is the UDP frame size (--size); Engine the UDP send engine.
	FrameSize int    `json:"frame_size,omitempty"`
	Engine    string `json:"engine,omitempty"`
	// Mix, when set, is the flow's mix of UDP frame sizes (--size imix),
	// sent only to an agent that lists wire.FeatureMix.
	Mix *ceiling.Mix `json:"mix,omitempty"`
	// Idle is how long latency probes run before the load.
	Idle wire.Seconds `json:"idle,omitempty"`
	// Secret is the secret to prove to the targets, sent only to an agent
	// reached over ssh (serve --stdio): the ssh channel authenticated the
	// controller and encrypts the secret; such an agent has no secret of
	// its own. An agent on a plain connection refuses a flow that carries
	// one.
	Secret string `json:"secret,omitempty"`
	// Search, when set, makes the flow a zero-loss search (bench --search)
	// instead of one test; the agent sends a progress line per trial.
	Search *SearchConfig `json:"search,omitempty"`
	// Barrier, when set, holds the flow at a start barrier: the agent sets
	// it up (every target reached and accepting, the flows open), says
	// flow-ready and waits for the controller's start, at most this long
	// (and at most maxHold), before sending anything. Only for an agent
	// that lists wire.FeatureStartBarrier; one test, not a search.
	Barrier wire.Seconds `json:"barrier,omitempty"`
	// Progress gets the search's progress lines on the controller.
	Progress func(line string) `json:"-"`
}

// hold is how long the agent holds f at the start barrier (0: no barrier).
func (f *Flow) hold() time.Duration {
	if f.Search != nil {
		return 0
	}
	return min(max(f.Barrier.D(), 0), maxHold)
}

// wait is how long either end waits for the other's next message: a
// test's length, or a search trial's.
func (f *Flow) wait() time.Duration {
	if f.Search != nil {
		return 2*f.Search.longest() + flowGrace
	}
	return (f.Spec.Warmup + f.Spec.Duration + f.Idle).D() + f.hold() + flowGrace
}

// Listen asks an agent started over ssh (serve --stdio, which serves only
// its controller) to listen for the test's other agents too, on these
// addresses, while the ssh channel is open: a flow's receiver reached
// over ssh. Secret is what those agents must prove (the channel carries
// it, encrypted; the agent has none of its own).
type Listen struct {
	// Addresses are IP or IP:PORT; port 0 or none picks a free port.
	Addresses []string `json:"addresses"`
	Secret    string   `json:"secret,omitempty"`
}
