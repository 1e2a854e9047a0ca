package vm

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"linerate/internal/usage"
)

// NIC models a guest's links can have: QEMU's emulation of a real
// network card, driven inside the guest by the kernel's own driver for it.
type Model string

const (
	// E1000E is QEMU's Intel 82574: the e1000e driver, the igb family's
	// sibling, MSI-X vectors named IFACE-rx-0, IFACE-tx-0 and IFACE.
	E1000E Model = "e1000e"
	// Virtio is virtio-net over PCI: the virtio_net driver, many queues
	// (mq=on), RSS in the device, vectors named virtioN-input.Q and
	// virtioN-output.Q.
	Virtio Model = "virtio"
	// VMXNET3 is VMware's paravirtual NIC: the vmxnet3 driver, vectors
	// named IFACE-rxtx-Q and IFACE-event-Q.
	VMXNET3 Model = "vmxnet3"
)

// Models lists the NIC models in the order help text shows them.
var Models = []Model{E1000E, Virtio, VMXNET3}

// nicModel is what a model needs: QEMU's device, the guest's driver
// module, and how many queue pairs the emulation offers.
type nicModel struct {
	device    string
	module    string
	maxQueues int
}

var nicModels = map[Model]nicModel{
	E1000E: {device: "e1000e", module: "e1000e", maxQueues: 1},
	// QEMU allows up to 1024 queue pairs (VIRTIO_QUEUE_MAX/2); a lab's
	// taps are bounded far below that by the lab's own queue limit.
	Virtio:  {device: "virtio-net-pci", module: "virtio_net", maxQueues: 64},
	VMXNET3: {device: "vmxnet3", module: "vmxnet3", maxQueues: 1},
}

// ParseModel reads a NIC model's name ("virtio-net" is taken for virtio).
func ParseModel(s string) (Model, error) {
	switch strings.ToLower(s) {
	case "e1000e":
		return E1000E, nil
	case "virtio", "virtio-net", "virtio_net":
		return Virtio, nil
	case "vmxnet3":
		return VMXNET3, nil
	}
	names := make([]string, len(Models))
	for i, m := range Models {
		names[i] = string(m)
	}
	return "", usage.Errorf("NIC model %q: want one of %s", s, strings.Join(names, ", "))
}

// CheckQueues is a usage error unless the model's emulation has queues
// queue pairs.
func (m Model) CheckQueues(queues int) error {
	nm, ok := nicModels[m]
	if !ok {
		return usage.Errorf("NIC model %q is unknown", m)
	}
	if queues > nm.maxQueues {
		if nm.maxQueues == 1 {
			return usage.Errorf("%d queues: QEMU's %s has one queue pair (--nic virtio has many)", queues, m)
		}
		return usage.Errorf("%d queues: QEMU's %s has at most %d", queues, m, nm.maxQueues)
	}
	return nil
}

// Module is the guest's driver of the model.
func (m Model) Module() string { return nicModels[m].module }

// Accel is how QEMU runs a guest's CPUs.
type Accel string

const (
	// KVM runs the guest on the host's CPU through /dev/kvm.
	KVM Accel = "kvm"
	// TCG translates the guest's instructions (QEMU's Tiny Code
	// Generator), one host thread per guest CPU: rates measured in a TCG
	// guest are the emulator's, not the driver's.
	TCG Accel = "tcg"
)

// Paths DetectAccel reads.
const (
	kvmDev  = "/dev/kvm"
	cpuinfo = "/proc/cpuinfo"
)

// DetectAccel says whether guests can run under KVM here, and why not.
// /dev/kvm can exist where KVM does not run guests (a virtual machine
// without nested virtualisation hands it out and then never runs a
// guest's instructions), so the CPU's own virtualisation flag is required
// too.
func DetectAccel() (Accel, string) {
	fd, err := unix.Open(kvmDev, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return TCG, fmt.Sprintf("%s: %v", kvmDev, err)
	}
	unix.Close(fd)
	f, err := os.Open(cpuinfo)
	if err != nil {
		return TCG, fmt.Sprintf("%s: %v", cpuinfo, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "flags" {
			continue
		}
		for _, fl := range strings.Fields(v) {
			if fl == "vmx" || fl == "svm" {
				return KVM, ""
			}
		}
		break
	}
	return TCG, fmt.Sprintf("%s exists but the CPU has no vmx or svm flag in %s: KVM would not run the guest", kvmDev, cpuinfo)
}

// qemuBinary is the QEMU system emulator for this architecture and the
// Debian package that installs it.
func qemuBinary() (bin, pkg string, err error) {
	switch runtime.GOARCH {
	case "amd64":
		return "qemu-system-x86_64", "qemu-system-x86", nil
	}
	return "", "", usage.Errorf("virtual machine nodes run on amd64 hosts only (this is %s)", runtime.GOARCH)
}

// NIC is one network card of a guest: its model, its address, and the
// host's tap behind it (one open file per queue, passed to QEMU).
type NIC struct {
	Model  Model  `json:"model"`
	MAC    string `json:"mac"`
	Queues int    `json:"queues"`
	// Name is what the guest calls it: the node at the other end.
	Name string `json:"name"`
	// Tap is the host's end, in the peer's namespace.
	Tap string `json:"tap"`
	// FDs are the tap's queues among the files QEMU inherits (3 and on).
	FDs []int `json:"fds"`
}

// Machine is one guest as QEMU runs it.
type Machine struct {
	Node     string
	CPUs     int
	MemoryMB int
	Accel    Accel
	Kernel   Kernel
	Initrd   string
	// Disk is the guest's root disk image (qcow2), "" for a guest that
	// lives in its initramfs.
	Disk string
	NICs []NIC
	// Serial is the unix socket QEMU listens on for the guest's
	// virtio-serial port "linerate"; QMP the one for its monitor; Console
	// the file the guest's serial console (ttyS0) is written to.
	Serial, QMP, Console string
}

// cmdline is the guest kernel's command line.
func (m Machine) cmdline() string {
	parts := []string{
		"console=ttyS0", "panic=-1",
		// The guest is a lab's throwaway: speculation mitigations only
		// slow an emulated CPU down.
		"mitigations=off",
		"linerate.node=" + m.Node,
	}
	if m.Disk != "" {
		parts = append(parts, "linerate.root=/dev/vda")
	}
	return strings.Join(parts, " ")
}

// Args is QEMU's command line (without the binary).
func (m Machine) Args() []string {
	accel := "tcg,thread=multi"
	if m.Accel == KVM {
		accel = "kvm"
	}
	a := []string{
		"-name", "linerate-" + m.Node,
		"-accel", accel,
		"-m", strconv.Itoa(m.MemoryMB),
		"-smp", strconv.Itoa(m.CPUs),
		"-nodefaults", "-no-user-config", "-display", "none",
		"-kernel", m.Kernel.Image,
		"-initrd", m.Initrd,
		"-append", m.cmdline(),
		"-serial", "file:" + m.Console,
		"-qmp", "unix:" + m.QMP + ",server=on,wait=off",
		"-device", "virtio-serial-pci,id=vser",
		"-chardev", "socket,id=lr,path=" + m.Serial + ",server=on,wait=off",
		"-device", "virtserialport,bus=vser.0,chardev=lr,name=" + PortName,
	}
	if m.Accel == KVM {
		a = append(a, "-cpu", "host")
	}
	if m.Disk != "" {
		a = append(a, "-drive", "file="+m.Disk+",if=virtio,format=qcow2,cache=unsafe")
	}
	for i, n := range m.NICs {
		id := "n" + strconv.Itoa(i)
		fds := make([]string, len(n.FDs))
		for j, fd := range n.FDs {
			fds[j] = strconv.Itoa(fd)
		}
		netdev := "tap,id=" + id + ",vhost=off"
		if len(fds) == 1 {
			netdev += ",fd=" + fds[0]
		} else {
			netdev += ",fds=" + strings.Join(fds, ":")
		}
		dev := nicModels[n.Model].device + ",netdev=" + id + ",mac=" + n.MAC + ",romfile="
		if n.Model == Virtio && n.Queues > 1 {
			// Two vectors a queue pair, one for the control queue and
			// one for configuration changes (virtio-net's own rule).
			dev += fmt.Sprintf(",mq=on,vectors=%d,rss=on", 2*n.Queues+2)
		}
		a = append(a, "-netdev", netdev, "-device", dev)
	}
	return a
}

// PortName is the name of the virtio-serial port linerate talks to the
// guest through (/sys/class/virtio-ports/*/name in the guest).
const PortName = "linerate"

// FindQEMU returns the path of QEMU's system emulator, or an error naming
// the Debian package that installs it.
func FindQEMU() (string, error) {
	bin, pkg, err := qemuBinary()
	if err != nil {
		return "", err
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", usage.Errorf("no %s for a guest: install Debian's %s (make deps does)", bin, pkg)
	}
	return p, nil
}
