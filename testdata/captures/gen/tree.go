package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// tree is the static part of a capture: files and relative symlinks, by
// slash-separated path inside the capture.
type tree struct {
	files map[string][]byte
	links map[string]string
}

func newTree() *tree { return &tree{files: map[string][]byte{}, links: map[string]string{}} }

func (t *tree) file(p, content string) { t.files[p] = []byte(content) }
func (t *tree) bin(p string, b []byte) { t.files[p] = b }

// link makes p a symlink to the capture path target, written relative to
// p's directory as sysfs does.
func (t *tree) link(p, target string) {
	rel, err := filepath.Rel(path.Dir(p), target)
	if err != nil {
		panic(err)
	}
	t.links[p] = filepath.ToSlash(rel)
}

// netAttrs are the files of sys/class/net/NAME that linerate reads.
type netAttrs struct {
	ifindex    int
	typ        int
	address    string
	mtu        int
	txQueueLen int
	operstate  string
	// carrier, speed and duplex are omitted when the kernel refuses to
	// read them (interface down: EINVAL).
	carrier, speed, duplex string
}

// netdev writes a network interface under devDir (a sys/devices/... path)
// and its sys/class/net link. rps and xps are the masks every queue shows;
// xps "" leaves xps_cpus out (single-queue devices refuse to read it).
func (t *tree) netdev(devDir, name string, a netAttrs, rxq, txq int, rps, xps string, virtual bool) {
	d := devDir + "/net/" + name
	if virtual {
		d = "sys/devices/virtual/net/" + name
	}
	t.link("sys/class/net/"+name, d)
	t.file(d+"/ifindex", fmt.Sprintf("%d\n", a.ifindex))
	t.file(d+"/iflink", fmt.Sprintf("%d\n", a.ifindex))
	t.file(d+"/type", fmt.Sprintf("%d\n", a.typ))
	t.file(d+"/address", a.address+"\n")
	t.file(d+"/addr_len", "6\n")
	t.file(d+"/mtu", fmt.Sprintf("%d\n", a.mtu))
	t.file(d+"/tx_queue_len", fmt.Sprintf("%d\n", a.txQueueLen))
	t.file(d+"/operstate", a.operstate+"\n")
	for f, v := range map[string]string{"carrier": a.carrier, "speed": a.speed, "duplex": a.duplex} {
		if v != "" {
			t.file(d+"/"+f, v+"\n")
		}
	}
	if !virtual {
		t.link(d+"/device", devDir)
	}
	for i := 0; i < rxq; i++ {
		q := fmt.Sprintf("%s/queues/rx-%d", d, i)
		t.file(q+"/rps_cpus", rps+"\n")
		t.file(q+"/rps_flow_cnt", "0\n")
	}
	for i := 0; i < txq; i++ {
		q := fmt.Sprintf("%s/queues/tx-%d", d, i)
		t.file(q+"/tx_timeout", "0\n")
		if xps != "" {
			t.file(q+"/xps_cpus", xps+"\n")
		}
	}
}

// driver binds devDir to a driver of a bus, as the device's driver link.
func (t *tree) driver(devDir, bus, name string) {
	drv := "sys/bus/" + bus + "/drivers/" + name
	t.file(drv+"/uevent", "")
	t.link(devDir+"/driver", drv)
}

// pciAttrs are the sysfs attributes of a PCI function.
type pciAttrs struct {
	vendor, device, class                  string
	curSpeed, curWidth, maxSpeed, maxWidth string
	subVendor, subDevice                   string
	irq                                    int
	msi                                    []int
	msiKind                                string // "msi" or "msix"
	driver                                 string
}

// pciDev writes a PCI function's directory and its sys/bus/pci/devices link.
func (t *tree) pciDev(devDir, addr string, a pciAttrs) {
	t.link("sys/bus/pci/devices/"+addr, devDir)
	t.file(devDir+"/vendor", a.vendor+"\n")
	t.file(devDir+"/device", a.device+"\n")
	t.file(devDir+"/class", a.class+"\n")
	t.file(devDir+"/subsystem_vendor", a.subVendor+"\n")
	t.file(devDir+"/subsystem_device", a.subDevice+"\n")
	t.file(devDir+"/current_link_speed", a.curSpeed+"\n")
	t.file(devDir+"/current_link_width", a.curWidth+"\n")
	t.file(devDir+"/max_link_speed", a.maxSpeed+"\n")
	t.file(devDir+"/max_link_width", a.maxWidth+"\n")
	t.file(devDir+"/irq", fmt.Sprintf("%d\n", a.irq))
	for _, n := range a.msi {
		t.file(fmt.Sprintf("%s/msi_irqs/%d", devDir, n), a.msiKind+"\n")
	}
	if a.driver != "" {
		t.driver(devDir, "pci", a.driver)
	}
}

// write renders the whole capture into dir, replacing what was there.
func (b *box) write(dir string) error {
	// README.md is written by hand: keep it across regenerations
	readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	out := newTree()
	for p, c := range b.tree.files {
		out.files[p] = c
	}
	for p, l := range b.tree.links {
		out.links[p] = l
	}
	meta, _ := json.MarshalIndent(map[string]string{
		"time":             b.t0.UTC().Format(time.RFC3339Nano),
		"host":             b.host,
		"kernel":           b.kernel,
		"arch":             b.arch,
		"linerate_version": "hand-built",
		"netns":            "",
	}, "", "  ")
	out.file("meta.json", string(meta)+"\n")
	for _, kv := range b.sysctls {
		out.file("proc/sys/"+strings.ReplaceAll(kv[0], ".", "/"), kv[1]+"\n")
	}
	out.file("proc/sys/kernel/hostname", b.host+"\n")
	out.file("proc/sys/kernel/osrelease", b.kernel+"\n")
	for pid, comm := range b.comms {
		out.file(fmt.Sprintf("proc/%d/comm", pid), comm+"\n")
	}
	for _, l := range b.irqs {
		if l.affinity == nil {
			continue
		}
		d := fmt.Sprintf("proc/irq/%d/", l.n)
		out.file(d+"smp_affinity", l.affinity[0]+"\n")
		out.file(d+"smp_affinity_list", l.affinity[1]+"\n")
		out.file(d+"effective_affinity_list", l.affinity[2]+"\n")
	}
	for k := 0; k <= len(b.dts); k++ {
		if k > 0 {
			b.step(b.dts[k-1])
		}
		counters := map[string]string{
			"proc/stat":             b.procStat(),
			"proc/interrupts":       b.procInterrupts(),
			"proc/softirqs":         b.procSoftirqs(),
			"proc/net/dev":          b.procNetDev(),
			"proc/net/softnet_stat": b.procSoftnet(),
			"proc/net/snmp":         b.procSNMP(),
		}
		for _, n := range b.nics {
			if n.driver != "" {
				counters["ethtool/"+n.name+"/S.txt"] = n.ethtoolS()
			}
		}
		s := fmt.Sprintf("samples/%03d/", k)
		out.file(s+"time", b.timeAt(k).UTC().Format(time.RFC3339Nano)+"\n")
		for p, c := range counters {
			out.file(s+p, c)
			if k == 0 {
				// the capture's own counters are those of sample 000
				out.file(p, c)
			}
		}
	}
	if len(readme) > 0 {
		out.bin("README.md", readme)
	}
	return out.flush(dir)
}

func (t *tree) flush(dir string) error {
	var names []string
	for p := range t.files {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, t.files[p], 0o644); err != nil {
			return err
		}
	}
	names = names[:0]
	for p := range t.links {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(t.links[p], full); err != nil {
			return err
		}
	}
	// every link must resolve inside the capture
	for _, p := range names {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if _, err := os.Stat(full); err != nil {
			return fmt.Errorf("dangling link %s -> %s", p, t.links[p])
		}
	}
	return nil
}
