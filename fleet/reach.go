package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"linerate/remote"
	"linerate/traffic"
	"linerate/wire"
)

// Reached is what one host answered when reached: its agent's welcome,
// or why it could not be reached or greeted.
type Reached struct {
	Name    string
	Welcome *traffic.Message
	Err     error
}

// Reach reaches every host at once, as a run will (a TCP connection to
// its agent, or ssh starting one), and says hello to its agent with
// secret, each within timeout; the answers are in the hosts' order.
// Every connection is closed before it returns. An agent that refused
// the hello is named with its address and the peer's error
// (wire.PeerError).
func Reach(ctx context.Context, hosts []Host, secret string, timeout time.Duration) []Reached {
	out := make([]Reached, len(hosts))
	var wg sync.WaitGroup
	for i := range hosts {
		wg.Go(func() {
			h := &hosts[i]
			out[i].Name = h.Name
			c, err := remote.Dial(ctx, h.Reach, h.Options)
			if err != nil {
				out[i].Err = err
				return
			}
			defer c.Close()
			out[i].Welcome, out[i].Err = traffic.Greet(c, secret, timeout)
			var pe *wire.PeerError
			if errors.As(out[i].Err, &pe) {
				out[i].Err = fmt.Errorf("%s: the agent refused: %w", h.Reach, pe)
			}
		})
	}
	wg.Wait()
	return out
}
