// Package source says where facts about a box come from. A Source is either
// the live machine (optionally inside a network namespace) or a capture: a
// directory or .tar.gz holding copies of the /proc and /sys files linerate
// reads, the text output of ethtool commands, PCI config space and timed
// samples of the counters (docs/capture.md). Everything downstream reads a
// Source, never /proc or /sys directly.
package source

import (
	"time"

	"linerate/source/ethtool"
	"linerate/source/procfs"
	"linerate/source/sysfs"
)

// Source is one place facts come from.
type Source interface {
	// Name is "live", "live netns NAME" or "capture PATH".
	Name() string
	// Meta describes the machine; for a capture, what meta.json says.
	Meta() Meta
	Proc() procfs.FS
	Sys() sysfs.FS
	Ethtool() ethtool.Client
	// PCIConfig returns the config space of a PCI function.
	PCIConfig(addr string) ([]byte, error)
	// Samples returns the timed counter snapshots of a capture, oldest first;
	// a live source has none.
	Samples() ([]Sample, error)
	Close() error
}

// Sample is one timed snapshot of counter files in a capture.
type Sample struct {
	Time    time.Time
	Proc    procfs.FS
	Ethtool ethtool.Client
}

// Meta is meta.json of a capture, or the live machine's identity.
type Meta struct {
	Time     time.Time `json:"time"`
	Host     string    `json:"host"`
	Kernel   string    `json:"kernel"`
	Arch     string    `json:"arch,omitempty"`
	Linerate string    `json:"linerate_version"`
	// MachineID names the installation (two Raspberry Pis both called
	// raspberrypi have different ones): derived from /etc/machine-id, not
	// the ID itself, which machine-id(5) asks to keep confidential.
	MachineID string `json:"machine_id,omitempty"`
	// Netns is the network namespace the capture was taken in, if any.
	Netns string `json:"netns,omitempty"`
}
