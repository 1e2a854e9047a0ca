package box

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"linerate/source/ethtool"
	"linerate/source/procfs"
	"linerate/source/sysfs"
	"linerate/source/tree"
)

// ReadCounters takes one snapshot of every counter. et may be nil (no
// ethtool counters); ifaces limits the ethtool counters read (all NICs in
// proc net/dev when empty).
//
// /proc/stat and net/dev must be readable; interrupts, softirqs,
// softnet_stat and snmp are left empty when their file is absent (a capture
// may lack them) but a file that is present and unparsable is an error. A
// line that a parser cannot use (one IRQ, one CPU, one interface) is left
// out and listed in Skipped; the rest of its file is kept.
// Interfaces whose driver has no statistics are left out of Ethtool.
//
// ReadCounters is called once a second by the sampler during runs: it reads
// each file once and asks the ethtool client only for statistics.
func ReadCounters(proc procfs.FS, et ethtool.Client, ifaces []string) (Counters, error) {
	c := Counters{Time: time.Now()}
	// keep takes what a parser read and the lines it left out; any other
	// error is returned.
	keep := func(err error) error {
		if lines, ok := tree.Skipped(err); ok {
			c.Skipped = append(c.Skipped, lines...)
			return nil
		}
		return err
	}
	var err error
	if c.CPU, err = proc.Stat(); keep(err) != nil {
		return c, err
	}
	// The reader's own CPU time is optional: a capture has none, and a
	// result without it says the process was not measured.
	if pt, err := proc.SelfCPU(); err == nil {
		c.Process = &pt
	}
	if c.NetDev, err = proc.NetDev(); keep(err) != nil {
		return c, err
	}
	if irqs, err := proc.Interrupts(); keep(err) == nil {
		c.Interrupts = make(map[string][]uint64, len(irqs.Rows))
		for _, r := range irqs.Rows {
			c.Interrupts[r.Label] = r.Counts
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return c, err
	}
	if c.SoftIRQs, err = proc.SoftIRQs(); keep(err) != nil && !errors.Is(err, fs.ErrNotExist) {
		return c, err
	}
	if c.Softnet, err = proc.Softnet(); keep(err) != nil && !errors.Is(err, fs.ErrNotExist) {
		return c, err
	}
	snmp, err := proc.SNMP()
	if keep(err) != nil && !errors.Is(err, fs.ErrNotExist) {
		return c, err
	}
	c.UDP, c.TCP = snmp["Udp"], snmp["Tcp"]
	c.Conntrack = readConntrack(proc)
	if et != nil {
		names := ifaces
		if len(names) == 0 {
			for n := range c.NetDev {
				names = append(names, n)
			}
		}
		for _, n := range names {
			st, err := et.Stats(n)
			if err != nil {
				if errors.Is(err, ethtool.ErrNotSupported) || errors.Is(err, ethtool.ErrNotCaptured) || errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return c, fmt.Errorf("ethtool statistics of %s: %w", n, err)
			}
			if c.Ethtool == nil {
				c.Ethtool = make(map[string]map[string]uint64, len(names))
			}
			c.Ethtool[n] = st.Map()
			var driver string
			if di, err := et.DriverInfo(n); err == nil {
				driver = di.Driver
			}
			if q := ethtool.RxQueuePackets(st, driver); q != nil {
				if c.RxQueues == nil {
					c.RxQueues = map[string][]uint64{}
				}
				c.RxQueues[n] = q
			}
		}
	}
	return c, nil
}

// ReadGauges adds the instantaneous values that live in /sys to c: thermal
// zone temperatures and each CPU's current frequency. What cannot be read is
// left out; ReadCounters does not need /sys, so this is a separate call.
func ReadGauges(sys sysfs.FS, c *Counters) {
	if zones, err := sys.ThermalZones(); err == nil && len(zones) > 0 {
		c.Celsius = make(map[string]float64, len(zones))
		for _, z := range zones {
			c.Celsius[z.Name] = float64(z.MilliCelsius) / 1000
		}
	}
	if cpus, err := sys.CPUs(); err == nil {
		for _, cpu := range cpus {
			if cpu.CPUFreq == nil || cpu.CPUFreq.CurKHz == 0 {
				continue
			}
			if c.CurKHz == nil {
				c.CurKHz = make(map[int]int64, len(cpus))
			}
			c.CurKHz[cpu.ID] = cpu.CPUFreq.CurKHz
		}
	}
}
