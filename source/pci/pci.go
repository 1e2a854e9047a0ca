// Package pci decodes what linerate needs from a PCI function's
// configuration space: the PCI Express capability's link speed and width
// (current and maximum), Max Payload Size (supported and set) and Max Read
// Request Size.
package pci

import "errors"

// ErrShort means the config space was cut before the PCIe capability (an
// unprivileged read of sysfs config returns only 64 bytes).
var ErrShort = errors.New("config space truncated (reading it whole needs root)")

// ErrNoExpress means the function has no PCI Express capability.
var ErrNoExpress = errors.New("no PCI Express capability")

// Express is the decoded PCI Express capability.
type Express struct {
	// PortType is the Device/Port Type field: 0 endpoint, 4 root port, ...
	PortType     int
	RootPort     bool
	MPSSupported int // bytes, from Device Capabilities
	MPS          int // bytes, from Device Control
	MRRS         int // bytes, from Device Control
	MaxSpeedGTs  float64
	MaxWidth     int
	CurSpeedGTs  float64
	CurWidth     int
}

// ParseConfig finds and decodes the PCI Express capability in a config space.
func ParseConfig(b []byte) (Express, error) { panic("todo: H1") }

// ParseSpeed turns sysfs link speed text ("5.0 GT/s PCIe", "2.5 GT/s") into GT/s.
func ParseSpeed(s string) (float64, error) { panic("todo: H1") }
