package lab

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"linerate/internal/usage"
	"linerate/lab/vm"
)

// VM asks Up to make some nodes virtual machines: QEMU guests booting the
// host's Debian kernel, each link of theirs a NIC of one model (e1000e,
// virtio-net, vmxnet3) driven by the kernel's own driver, whose other end
// is a tap in the peer node's namespace. Addresses, names, rate caps,
// routes, NAT and agents are the same as a namespace node's; commands
// reach the guest through its supervisor (Start, `lab exec`).
type VM struct {
	// Nodes are the nodes that are guests.
	Nodes []string `json:"nodes"`
	// NIC is the model of every guest NIC.
	NIC vm.Model `json:"nic"`
	// Image is what the guest boots: ImageInitramfs or ImageDebian.
	Image string `json:"image"`
	// CPUs and MemoryMB size each guest.
	CPUs     int `json:"cpus"`
	MemoryMB int `json:"memory_mb"`
	// Binary is the linerate that runs the guests' supervisors and, copied
	// into each guest, its agent and commands.
	Binary string `json:"binary"`
	// CacheDir keeps the guests' boot images between labs.
	CacheDir string `json:"cache_dir"`
	// Accel is how the guests run, and AccelWhy why not KVM (Up fills
	// both).
	Accel    vm.Accel `json:"accel,omitempty"`
	AccelWhy string   `json:"accel_why,omitempty"`
	// BootTimeout bounds each guest's boot and setup.
	BootTimeout time.Duration `json:"boot_timeout"`
}

// Images a guest can boot.
const (
	// ImageInitramfs is a busybox guest living in its initramfs: it boots
	// in seconds and forgets everything at a reboot.
	ImageInitramfs = "initramfs"
	// ImageDebian is a Debian root with systemd on a disk of its own (a
	// copy-on-write layer over a cached image), that keeps what is
	// written to it across reboots.
	ImageDebian = "debian"
)

// Limits and defaults of a VM spec.
const (
	DefaultVMCPUs     = 2
	MaxVMCPUs         = 16
	DefaultVMMemoryMB = 512
	MinVMMemoryMB     = 192
	MaxVMMemoryMB     = 16384
)

// A guest's boot, from QEMU's start or the guest's reset until its agent
// answers, is bounded by BootTimeout: these by default (docs/lab.md has
// the boot times measured under TCG), at least MinBootTimeout when asked.
const (
	DefaultBootTimeout       = 2 * time.Minute
	DefaultDebianBootTimeout = 5 * time.Minute
	MinBootTimeout           = 10 * time.Second
)

// DefaultCacheDir keeps guests' images unless LINERATE_CACHE_DIR says
// otherwise.
const DefaultCacheDir = "/var/cache/linerate/vm"

// EnvCacheDir overrides DefaultCacheDir.
const EnvCacheDir = "LINERATE_CACHE_DIR"

// CacheDir is $LINERATE_CACHE_DIR or DefaultCacheDir.
func CacheDir() string {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return d
	}
	return DefaultCacheDir
}

// Guest is one VM node as Up started it.
type Guest struct {
	Node string `json:"node"`
	// Pid and Started identify its supervisor (see Agent).
	Pid     int    `json:"pid"`
	Started uint64 `json:"started"`
	// Socket is the supervisor's, Dir the guest's files (console log,
	// supervisor log, disk).
	Socket string `json:"socket"`
	Dir    string `json:"dir"`
	Kernel string `json:"kernel"`
	// Boot is how long the guest took from its start to being set up.
	Boot time.Duration `json:"boot"`
	// Stall says why its supervisor reset its first boot, when it did
	// (vm.Status.Stall).
	Stall string `json:"stall,omitempty"`
}

// validateVM checks s.VM against the planned nodes and links, and fills
// its defaults.
func (s *Spec) validateVM(l *Lab) error {
	v := s.VM
	if v == nil {
		return nil
	}
	if len(v.Nodes) == 0 {
		return usage.Field("VM", "names no node")
	}
	for _, n := range v.Nodes {
		if _, err := l.Node(n); err != nil {
			return usage.Field("VM", "%v", err)
		}
	}
	if v.NIC == "" {
		v.NIC = vm.E1000E
	}
	if _, err := vm.ParseModel(string(v.NIC)); err != nil {
		return usage.Field("NIC", "%v", err)
	}
	if err := v.NIC.CheckQueues(s.Queues); err != nil {
		return usage.Field("Queues", "%v", err)
	}
	switch v.Image {
	case "":
		v.Image = ImageInitramfs
	case ImageInitramfs, ImageDebian:
	default:
		return usage.Field("Image", "%q: want %s or %s", v.Image, ImageInitramfs, ImageDebian)
	}
	if v.CPUs == 0 {
		v.CPUs = DefaultVMCPUs
	}
	if v.CPUs < 1 || v.CPUs > MaxVMCPUs {
		return usage.Field("CPUs", "%d: want 1 to %d", v.CPUs, MaxVMCPUs)
	}
	if v.MemoryMB == 0 {
		v.MemoryMB = DefaultVMMemoryMB
	}
	if v.MemoryMB < MinVMMemoryMB || v.MemoryMB > MaxVMMemoryMB {
		return usage.Field("MemoryMB", "%d: want %d to %d", v.MemoryMB, MinVMMemoryMB, MaxVMMemoryMB)
	}
	if v.CacheDir == "" {
		v.CacheDir = CacheDir()
	}
	switch {
	case v.BootTimeout == 0 && v.Image == ImageDebian:
		v.BootTimeout = DefaultDebianBootTimeout
	case v.BootTimeout == 0:
		v.BootTimeout = DefaultBootTimeout
	case v.BootTimeout < MinBootTimeout:
		return usage.Field("BootTimeout", "%s: want at least %s (a guest under TCG takes seconds to boot)", v.BootTimeout, MinBootTimeout)
	}
	for _, k := range l.Links {
		if slices.Contains(v.Nodes, k.A.Node) && slices.Contains(v.Nodes, k.B.Node) {
			return usage.Field("VM", "%s and %s are linked to each other: a guest's NIC ends in a tap in its peer's namespace, so at most one node of a link can be a virtual machine", k.A.Node, k.B.Node)
		}
	}
	return nil
}

// IsVM reports whether the node is a virtual machine.
func (l *Lab) IsVM(node string) bool {
	return l.Spec.VM != nil && slices.Contains(l.Spec.VM.Nodes, node)
}

// Guest returns the record of a VM node.
func (l *Lab) Guest(node string) (Guest, bool) {
	for _, g := range l.Guests {
		if g.Node == node {
			return g, true
		}
	}
	return Guest{}, false
}

// guestDir is where a lab's guests keep their files.
func (d Dir) guestDir(name string) string { return filepath.Join(string(d), name+".vm") }

// mac is the address of a guest's NIC on link k: locally administered
// (QEMU's 52:54:00 prefix), with a byte of the lab's name so that two
// labs' guests differ.
func mac(lab string, k int) string {
	h := fnv.New32a()
	h.Write([]byte(lab))
	return fmt.Sprintf("52:54:00:%02x:%02x:%02x", byte(h.Sum32()), byte(k>>8), byte(k))
}

// vmLink makes the host's end of link k, whose other end is a guest's
// NIC: a tap in the peer's namespace, named after the guest, with one
// queue per queue of the NIC. Its files wait in b.taps for the guest's
// supervisor.
func (b *builder) vmLink(k Link, guest, host End) error {
	s := b.lab.Spec
	nh := NetnsName(s.Name, host.Node)
	i, err := b.journal(Object{Kind: KindTap, Netns: nh, Name: host.Iface})
	if err != nil {
		return err
	}
	var files []*os.File
	err = inNetns(b.ns[host.Node], func() error {
		var err error
		files, err = vm.OpenTap(host.Iface, s.Queues)
		return err
	})
	if err != nil {
		return fmt.Errorf("tap %s in %s for guest %s: %w", host.Iface, nh, guest.Node, err)
	}
	b.taps[guest.Node] = append(b.taps[guest.Node], files...)
	if err := b.finish(i); err != nil {
		return err
	}
	if s.MTU != 0 {
		link, err := b.nl[host.Node].LinkByName(host.Iface)
		if err == nil {
			err = b.nl[host.Node].LinkSetMTU(link, s.MTU)
		}
		if err != nil {
			return fmt.Errorf("MTU %d on tap %s in %s: %w", s.MTU, host.Iface, nh, err)
		}
	}
	return b.end(host)
}

// guestConfig is how node n is set up inside its guest.
func (b *builder) guestConfig(n Node, secret string) vm.Config {
	s := b.lab.Spec
	c := vm.Config{
		Lab: s.Name, Node: n.Name,
		Gateway: n.Gateway, Forward: n.Forward, Masquerade: n.Masquerade,
		Hosts:   b.lab.Hosts(n.Name),
		Persist: s.VM.Image == ImageDebian,
	}
	for k, link := range b.lab.Links {
		for _, e := range []End{link.A, link.B} {
			if e.Node == n.Name {
				c.Ifaces = append(c.Ifaces, vm.IfaceConfig{Name: e.Iface, MAC: mac(s.Name, k+1), Addr: e.Addr, MTU: s.MTU, Rate: s.Rate})
			}
		}
	}
	if s.Serve != nil && s.Serve.Command != nil {
		cmd := s.Serve.Command(n.Name, vm.GuestTokenFile)
		c.Serve = &vm.ServeConfig{Args: cmd.Args[1:], Secret: secret, TokenFile: vm.GuestTokenFile, Port: s.Serve.Port}
	}
	return c
}

// guests starts every guest's supervisor, then waits until each guest
// has booted and been set up.
func (b *builder) guests() error {
	v := b.lab.Spec.VM
	if v == nil {
		return nil
	}
	if v.Binary == "" || !filepath.IsAbs(v.Binary) {
		return usage.Field("VM", "needs the absolute path of the linerate binary for the guests, got %q", v.Binary)
	}
	k, err := vm.FindKernel()
	if err != nil {
		return err
	}
	qemu, err := vm.FindQEMU()
	if err != nil {
		return err
	}
	if v.Accel == "" {
		v.Accel, v.AccelWhy = vm.DetectAccel()
	}
	models := []vm.Model{v.NIC}
	initrd, err := vm.Initramfs{Kernel: k, Binary: v.Binary, Models: models}.Build(v.CacheDir)
	if err != nil {
		return err
	}
	var disk string
	if v.Image == ImageDebian {
		if disk, err = vm.DebianImage(b.ctx, v.CacheDir, k, os.Stderr); err != nil {
			return err
		}
	}
	secret := ""
	if b.lab.Spec.Serve != nil {
		if secret, err = b.lab.Secret(); err != nil {
			return err
		}
	}
	started := map[string]time.Time{}
	for _, n := range b.lab.Nodes {
		if !b.lab.IsVM(n.Name) {
			continue
		}
		started[n.Name] = time.Now()
		if err := b.startGuest(n, k, qemu, initrd, disk, secret); err != nil {
			return err
		}
	}
	for i, g := range b.lab.Guests {
		st, err := vm.Client{Socket: g.Socket}.Wait(b.ctx, 0, v.BootTimeout)
		if err != nil {
			return fmt.Errorf("guest %s: %w%s", g.Node, err, guestLogs(g.Dir))
		}
		b.lab.Guests[i].Kernel = st.Hello.Kernel
		b.lab.Guests[i].Boot = time.Since(started[g.Node]).Round(time.Millisecond)
		b.lab.Guests[i].Stall = st.Stall
		if err := b.lab.save(); err != nil {
			return err
		}
		if err := b.step(); err != nil {
			return err
		}
	}
	return nil
}

// startGuest writes a guest's supervisor file and starts the supervisor
// in the node's namespace with the guest's taps.
func (b *builder) startGuest(n Node, k vm.Kernel, qemu, initrd, baseDisk, secret string) error {
	s, v := b.lab.Spec, b.lab.Spec.VM
	dir := filepath.Join(b.lab.dir.guestDir(s.Name), n.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("guest %s: %w", n.Name, err)
	}
	m := vm.Machine{
		Node: n.Name, CPUs: v.CPUs, MemoryMB: v.MemoryMB, Accel: v.Accel,
		Kernel: k, Initrd: initrd,
		Serial:  filepath.Join(dir, "serial.sock"),
		QMP:     filepath.Join(dir, "qmp.sock"),
		Console: filepath.Join(dir, "console.log"),
	}
	if baseDisk != "" {
		m.Disk = filepath.Join(dir, "disk.qcow2")
		if err := vm.Overlay(baseDisk, m.Disk); err != nil {
			return fmt.Errorf("guest %s: %w", n.Name, err)
		}
	}
	cfg := b.guestConfig(n, secret)
	fd := 3
	for _, f := range cfg.Ifaces {
		nic := vm.NIC{Model: v.NIC, MAC: f.MAC, Queues: s.Queues, Name: f.Name}
		for q := 0; q < s.Queues; q++ {
			nic.FDs = append(nic.FDs, fd)
			fd++
		}
		m.NICs = append(m.NICs, nic)
	}
	sup := vm.Supervisor{
		Machine: m, Config: cfg, QEMU: qemu,
		Socket:      filepath.Join(dir, "exec.sock"),
		TapFiles:    len(b.taps[n.Name]),
		BootTimeout: v.BootTimeout,
	}
	cfgPath := filepath.Join(dir, "supervisor.json")
	if err := sup.Write(cfgPath); err != nil {
		return fmt.Errorf("guest %s: %w", n.Name, err)
	}
	log, err := os.OpenFile(filepath.Join(dir, "supervisor.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(v.Binary, "lab", "vm-supervise", cfgPath)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, log, log
	cmd.ExtraFiles = b.taps[n.Name]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := b.lab.startIn(n, b.ns[n.Name], cmd); err != nil {
		return fmt.Errorf("supervisor of guest %s: %w", n.Name, err)
	}
	go cmd.Wait()
	// The supervisor holds the taps now; ours go.
	for _, f := range b.taps[n.Name] {
		f.Close()
	}
	delete(b.taps, n.Name)
	st, err := startTime(cmd.Process.Pid)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("supervisor of guest %s: %w", n.Name, err)
	}
	b.lab.Guests = append(b.lab.Guests, Guest{Node: n.Name, Pid: cmd.Process.Pid, Started: st, Socket: sup.Socket, Dir: dir})
	if err := b.lab.save(); err != nil {
		return err
	}
	return b.step()
}

// guestLogs is the end of a guest's console and supervisor logs, to
// follow an error about it.
func guestLogs(dir string) string {
	var b strings.Builder
	for _, f := range []string{"supervisor.log", "console.log"} {
		p := filepath.Join(dir, f)
		data, err := os.ReadFile(p)
		if err == nil && len(data) == 0 && f == "console.log" {
			fmt.Fprintf(&b, "\n  %s is empty: the guest printed nothing, not even its kernel's first line", p)
			continue
		}
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 8 {
			lines = lines[len(lines)-8:]
		}
		fmt.Fprintf(&b, "\n  last lines of %s:\n    %s", p, strings.Join(lines, "\n    "))
	}
	return b.String()
}

// liveGuest is the record of a VM node whose supervisor still runs.
func (l *Lab) liveGuest(node string) (Guest, error) {
	g, ok := l.Guest(node)
	if !ok {
		return g, fmt.Errorf("lab %s records no guest for node %s (lab down %s, then up again)", l.Spec.Name, node, l.Spec.Name)
	}
	if !alive(g.Pid, g.Started) {
		return g, fmt.Errorf("the guest of node %s of lab %s is not running: its supervisor (pid %d) has ended, and QEMU with it (why: %s, %s); lab down %s removes the lab",
			node, l.Spec.Name, g.Pid, filepath.Join(g.Dir, "supervisor.log"), filepath.Join(g.Dir, "console.log"), l.Spec.Name)
	}
	return g, nil
}

// guestClient is the client of a VM node's supervisor.
func (l *Lab) guestClient(node string) (vm.Client, error) {
	g, err := l.liveGuest(node)
	if err != nil {
		return vm.Client{}, err
	}
	return vm.Client{Socket: g.Socket}, nil
}

// startGuestCmd starts cmd so that it runs inside the guest of node n:
// the process started on the host is linerate's `lab vm-exec`, which
// passes cmd's stdin, output, signals and exit status through the
// guest's supervisor. The guest runs cmd.Args with the PATH of the guest
// (a host path of linerate or of a tool is looked up there by its base
// name) and with the LINERATE_ variables of cmd's environment.
func (l *Lab) startGuestCmd(n Node, cmd *exec.Cmd) error {
	g, err := l.liveGuest(n.Name)
	if err != nil {
		return err
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, EnvLab+"="+l.Spec.Name, EnvNode+"="+n.Name)
	argv := slices.Clone(cmd.Args)
	if len(argv) == 0 {
		argv = []string{cmd.Path}
	}
	cmd.Path = l.Spec.VM.Binary
	cmd.Args = append([]string{l.Spec.VM.Binary, "lab", "vm-exec", "--socket", g.Socket, "--"}, argv...)
	cmd.Err = nil
	return cmd.Start()
}

// Reboot reboots a VM node's guest and returns once it is set up again
// (with its agent answering, when the lab has agents).
func (l *Lab) Reboot(ctx context.Context, node string) (vm.Status, error) {
	if _, err := l.Node(node); err != nil {
		return vm.Status{}, err
	}
	if !l.IsVM(node) {
		return vm.Status{}, usage.Errorf("node %s of lab %s is a network namespace, not a virtual machine: only a guest reboots", node, l.Spec.Name)
	}
	c, err := l.guestClient(node)
	if err != nil {
		return vm.Status{}, err
	}
	return c.Reboot(ctx, l.Spec.VM.BootTimeout)
}

// GuestStatus asks a VM node's supervisor how its guest is.
func (l *Lab) GuestStatus(ctx context.Context, node string) (vm.Status, error) {
	c, err := l.guestClient(node)
	if err != nil {
		return vm.Status{}, err
	}
	return c.Status(ctx)
}

// lowerUp reports whether a link's carrier is on. A tap reports its
// operational state as unknown (the tun driver leaves it to the kernel's
// default), so its carrier is read from IFF_LOWER_UP.
func lowerUp(l netlink.Link) bool {
	a := l.Attrs()
	return a.OperState == netlink.OperUp || a.OperState == netlink.OperUnknown && a.RawFlags&unix.IFF_LOWER_UP != 0
}

// alive reports whether a recorded process still runs.
func alive(pid int, started uint64) bool { return pid > 0 && running(pid, started) }

// stopGuests kills the recorded guests' supervisors still running (QEMU
// goes with its supervisor) and waits, up to grace, until they have
// ended.
func stopGuests(guests []Guest, grace time.Duration) error {
	agents := make([]Agent, len(guests))
	for i, g := range guests {
		agents[i] = Agent{Node: g.Node, Pid: g.Pid, Started: g.Started}
	}
	return stopAgents(agents, grace)
}
