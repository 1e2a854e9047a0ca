package diagnose

import (
	"fmt"

	"linerate/box"
)

// Origin says which machine findings were made from: the machine whose
// configuration the rules read (a live box, or the one a capture was
// taken on). IRQ numbers, interface names and queue counts belong to that
// machine; tune refuses findings from another one unless forced.
type Origin struct {
	Host string `json:"host,omitempty"`
	// MachineID is box.Meta's: derived from /etc/machine-id.
	MachineID string `json:"machine_id,omitempty"`
	Kernel    string `json:"kernel,omitempty"`
	// Source is "live", "live netns NAME" or "capture PATH".
	Source string `json:"source,omitempty"`
}

// OriginOf is the origin of findings made from b.
func OriginOf(b *box.Box) Origin {
	return Origin{Host: b.Meta.Host, MachineID: b.Meta.MachineID, Kernel: b.Meta.Kernel, Source: b.Meta.Source}
}

// SameMachine reports whether o and here name the same machine: by
// machine ID when both have one, else by host name; true when neither can
// tell.
func (o Origin) SameMachine(here Origin) bool {
	if o.MachineID != "" && here.MachineID != "" {
		return o.MachineID == here.MachineID
	}
	if o.Host != "" && here.Host != "" {
		return o.Host == here.Host
	}
	return true
}

// String names the machine for a message: "host apu4 (capture x.tar.gz)".
func (o Origin) String() string {
	s := "host " + o.Host
	if o.Host == "" {
		s = "an unnamed host"
	}
	if o.Source != "" {
		s += fmt.Sprintf(" (%s)", o.Source)
	}
	return s
}
