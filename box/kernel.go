package box

import (
	"bytes"
	"errors"
	"io/fs"

	"linerate/source"
	"linerate/source/pci"
)

// UnboundNIC is an Ethernet PCI function no driver is bound to (seed 000:
// the I340's four 82580 functions on the bus, no interface, because Pi OS
// had no igb).
type UnboundNIC struct {
	Addr     string `json:"addr"`
	Vendor   string `json:"vendor,omitempty"`
	Device   string `json:"device,omitempty"`
	Class    string `json:"class,omitempty"`
	Modalias string `json:"modalias,omitempty"`
	// Modules are those whose modules.alias entry matches Modalias; empty
	// when none does. ModulesChecked is false when modules.alias could not
	// be read (Unsupported["modules_alias"] says why).
	Modules        []string `json:"modules"`
	ModulesChecked bool     `json:"modules_checked"`
}

// kernel records the unbound Ethernet functions and the kernel log's PCI
// failures, as far as the source can tell.
func (c *collector) kernel() error {
	unbound, err := c.sys.UnboundNICs()
	if err != nil {
		c.unsupported(c.box.Unsupported, "unbound_nics", "PCI functions", err)
	}
	k, ok := c.src.(source.Kernel)
	var aliases []pci.Alias
	checked := false
	if len(unbound) > 0 {
		switch {
		case !ok:
			c.box.Unsupported["modules_alias"] = "this source has no modules.alias"
		default:
			b, err := k.ModulesAlias()
			if err == nil {
				aliases, err = pci.ParseModulesAlias(bytes.NewReader(b))
			}
			if err != nil {
				c.unsupported(c.box.Unsupported, "modules_alias", "modules.alias", err)
			} else {
				checked = true
			}
		}
	}
	for _, u := range unbound {
		n := UnboundNIC{Addr: u.Addr, Vendor: u.Vendor, Device: u.Device, Class: u.Class, Modalias: u.Modalias,
			Modules: []string{}, ModulesChecked: checked}
		if checked && u.Modalias != "" {
			n.Modules = append(n.Modules, pci.ModulesFor(aliases, u.Modalias)...)
		}
		c.box.Unbound = append(c.box.Unbound, n)
	}
	if !ok {
		return nil
	}
	b, err := k.KernelLog()
	if err == nil {
		c.box.KernelLog, err = pci.ParseKernelLog(bytes.NewReader(b))
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.unsupported(c.box.Unsupported, "kernel_log", "kernel log", err)
	}
	return nil
}
