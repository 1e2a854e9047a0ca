package tune

import (
	"context"
	"fmt"
	"strings"
	"time"

	"linerate/diagnose"
)

// What a real driver does to a setting, seen on e1000e, virtio-net and
// vmxnet3 in lab guests (lab up --vm): a ring or channel change restarts
// the NIC, whose carrier drops and comes back a moment later; a driver
// rounds what it is given (e1000e keeps rx rings in multiples of 8 and
// coalescing as an interrupt rate, so rx-usecs=7000 reads 7142); a reset
// may hand the NIC's interrupts new numbers. A transaction therefore
// applies the changes that reset a link first, waits for each link to
// come back, resolves interrupts by name when it writes their affinity,
// and keeps what the driver kept, saying so.

// carrierBack bounds the wait for a link's carrier after a change that
// resets it.
const carrierBack = 15 * time.Second

// sayer is an action with something to report once applied: the value
// the driver kept instead of the one asked, an interrupt found under a
// new number.
type sayer interface {
	Said() string
}

// resetsFirst orders actions so that those that reset a link come first,
// the rest after in their order: a reset may re-create a NIC's queues
// and interrupts, so what is set on them goes after it.
func resetsFirst(acts []Action) []Action {
	out := make([]Action, 0, len(acts))
	for _, first := range []bool{true, false} {
		for _, a := range acts {
			if a.Describe().ResetsLink == first {
				out = append(out, a)
			}
		}
	}
	return out
}

// resetIface is the interface a change that resets a link acts on.
func resetIface(c Change) string {
	if !c.ResetsLink {
		return ""
	}
	return ItemIface(Item{Kind: c.Kind, Target: c.Target})
}

// carrier reports whether iface has carrier now (sysfs reads 1; reading
// fails while the link is down).
func carrier(sys System, iface string) bool {
	v, err := readTrim(sys, "sys/class/net/"+iface+"/carrier")
	return err == nil && v == "1"
}

// awaitCarrier waits until iface has carrier again after a change that
// reset it, and says how long that took.
func awaitCarrier(ctx context.Context, sys System, iface string, start time.Time, within time.Duration) (string, error) {
	deadline := start.Add(within)
	for !carrier(sys, iface) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s's link did not come back within %s after the change reset it", iface, within)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Sprintf("%s's link reset; carrier back after %s", iface, time.Since(start).Round(10*time.Millisecond)), nil
}

// roundingKinds are the settings a driver may keep at a value near the
// one asked (rounded, or converted to its own unit and back).
var roundingKinds = map[diagnose.FixKind]bool{diagnose.FixRings: true, diagnose.FixCoalesce: true}

// keptNote words what the driver kept instead of what was asked.
func keptNote(iface, asked, kept string) string {
	return fmt.Sprintf("%s's driver keeps %s where %s was asked", iface, kept, strings.TrimSpace(asked))
}
