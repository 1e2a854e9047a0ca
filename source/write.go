package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"linerate/source/pci"
	"linerate/source/tree"
)

// CaptureOptions says what WriteCapture records.
type CaptureOptions struct {
	// Samples is how many timed snapshots of the counters to add (0: none).
	Samples int
	// Interval is the time between samples (1s when zero).
	Interval time.Duration
	// Ifaces limits the interfaces recorded (all when empty).
	Ifaces []string
	// Progress receives one line per sample taken; nil for silence.
	Progress io.Writer
	// EthtoolCmd is the ethtool program to run for the text files: "" looks
	// it up in PATH, "-" never runs it and renders the text instead.
	EthtoolCmd string
	// IPCmd is the ip program for ip/link.txt, with the same conventions.
	IPCmd string
	// Sysctls are the sysctls to keep ("net.core.rmem_max"), besides the
	// host name and kernel release (box.Sysctls is what inspect reads).
	Sysctls []string
}

// Sink receives the files of a capture, named with slash-separated paths
// relative to the capture's top.
type Sink interface {
	WriteFile(name string, data []byte) error
	Symlink(name, target string) error
	Mkdir(name string) error
	Close() error
}

// DirSink writes a capture into dir, which must not exist or be empty.
func DirSink(dir string) (Sink, error) {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("%s: directory not empty", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &dirSink{dir: dir}, nil
}

type dirSink struct{ dir string }

func (d *dirSink) path(name string) string { return filepath.Join(d.dir, filepath.FromSlash(name)) }

func (d *dirSink) WriteFile(name string, data []byte) error {
	p := d.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

func (d *dirSink) Symlink(name, target string) error {
	p := d.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.Symlink(target, p)
}

func (d *dirSink) Mkdir(name string) error { return os.MkdirAll(d.path(name), 0o755) }

// keepFile is put in every directory of a capture that would otherwise be
// empty (a queue whose xps_cpus cannot be read, cpu0 without an online
// file, a driver a link points at): git and some copy tools drop empty
// directories, and with them a queue or a CPU. Readers ignore it.
const keepFile = ".keep"

// Close marks the capture's empty directories with keepFile.
func (d *dirSink) Close() error {
	return filepath.WalkDir(d.dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return err
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		if len(ents) == 0 {
			return os.WriteFile(filepath.Join(p, keepFile), []byte("kept so that this directory survives git and copies\n"), 0o644)
		}
		return nil
	})
}

// TarSink writes a capture as a gzipped tarball to w, with every file under
// the directory top ("" for none). Close finishes the archive (not w).
func TarSink(w io.Writer, top string) Sink {
	zw := gzip.NewWriter(w)
	return &tarSink{zw: zw, tw: tar.NewWriter(zw), top: top, dirs: map[string]bool{}, t: time.Now()}
}

type tarSink struct {
	zw   *gzip.Writer
	tw   *tar.Writer
	top  string
	dirs map[string]bool
	t    time.Time
}

func (s *tarSink) name(n string) string { return path.Join(s.top, n) }

func (s *tarSink) parents(n string) error {
	d := path.Dir(n)
	if d == "." || d == "/" || s.dirs[d] {
		return nil
	}
	if err := s.parents(d); err != nil {
		return err
	}
	s.dirs[d] = true
	return s.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: s.t})
}

func (s *tarSink) WriteFile(name string, data []byte) error {
	n := s.name(name)
	if err := s.parents(n); err != nil {
		return err
	}
	if err := s.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(data)), ModTime: s.t}); err != nil {
		return err
	}
	_, err := s.tw.Write(data)
	return err
}

func (s *tarSink) Symlink(name, target string) error {
	n := s.name(name)
	if err := s.parents(n); err != nil {
		return err
	}
	return s.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: n, Linkname: target, Mode: 0o777, ModTime: s.t})
}

func (s *tarSink) Mkdir(name string) error {
	n := s.name(name)
	if s.dirs[n] {
		return nil
	}
	if err := s.parents(n); err != nil {
		return err
	}
	s.dirs[n] = true
	return s.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: n + "/", Mode: 0o755, ModTime: s.t})
}

func (s *tarSink) Close() error {
	return errors.Join(s.tw.Close(), s.zw.Close())
}

// The files of each interface and PCI device that a capture keeps
// (docs/capture.md).
var (
	netFiles = []string{"ifindex", "type", "address", "mtu", "tx_queue_len", "operstate", "carrier", "speed", "duplex"}
	pciFiles = []string{"vendor", "device", "class", "current_link_speed", "current_link_width", "max_link_speed", "max_link_width"}
	cpuFiles = []string{"online", "cpufreq/scaling_cur_freq", "cpufreq/cpuinfo_min_freq", "cpufreq/cpuinfo_max_freq", "cpufreq/scaling_governor"}
	// counterFiles are the /proc files of a sample; net/ ones come from the
	// source's network namespace.
	counterFiles = []string{"stat", "interrupts", "softirqs", "net/dev", "net/softnet_stat", "net/snmp"}
)

// ethtoolItems maps a capture file to the ethtool arguments that print it.
var ethtoolItems = []struct {
	file string
	args []string // IFACE is put where "" stands
}{
	{"i.txt", []string{"-i", ""}},
	{"link.txt", []string{""}},
	{"k.txt", []string{"-k", ""}},
	{"c.txt", []string{"-c", ""}},
	{"g.txt", []string{"-g", ""}},
	{"l.txt", []string{"-l", ""}},
	{"x.txt", []string{"-x", ""}},
	{"S.txt", []string{"-S", ""}},
	{"n-tcp4.txt", []string{"-n", "", "rx-flow-hash", "tcp4"}},
	{"n-udp4.txt", []string{"-n", "", "rx-flow-hash", "udp4"}},
	{"n-tcp6.txt", []string{"-n", "", "rx-flow-hash", "tcp6"}},
	{"n-udp6.txt", []string{"-n", "", "rx-flow-hash", "udp6"}},
}

// WriteCapture records src into w as docs/capture.md describes: meta.json,
// the /proc and /sys files linerate reads (sysfs symlinks kept as relative
// symlinks), PCI config space of every device on each NIC's PCIe path, the
// ethtool text of each interface, `ip -d link show`, and opts.Samples timed
// snapshots of the counters. It does not close w.
func WriteCapture(ctx context.Context, src Source, w Sink, opts CaptureOptions) error {
	cw := &captureWriter{src: src, w: w, done: map[string]bool{}, opts: opts}
	return cw.write(ctx)
}

type captureWriter struct {
	src  Source
	w    Sink
	opts CaptureOptions
	done map[string]bool // sys paths already copied
}

func (cw *captureWriter) write(ctx context.Context) error {
	meta := cw.src.Meta()
	mb, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	if err := cw.w.WriteFile("meta.json", append(mb, '\n')); err != nil {
		return err
	}
	ifaces, err := cw.ifaces()
	if err != nil {
		return err
	}
	if err := cw.procFiles(); err != nil {
		return err
	}
	for _, iface := range ifaces {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := cw.iface(iface); err != nil {
			return err
		}
		if err := cw.ethtool("ethtool/"+iface, iface, false); err != nil {
			return err
		}
	}
	if err := cw.machineFiles(); err != nil {
		return err
	}
	if err := cw.ipLink(); err != nil {
		return err
	}
	if err := cw.kernel(); err != nil {
		return err
	}
	return cw.samples(ctx, ifaces)
}

// kernel records the Ethernet PCI functions no driver is bound to, the
// modules.alias lines that match them (so that a capture says which
// module would bind them without carrying the whole file), and the kernel
// log's lines about PCI (kernel/dmesg.txt; the rest of the log is not the
// capture's business).
func (cw *captureWriter) kernel() error {
	unbound, err := cw.src.Sys().UnboundNICs()
	if err != nil && !skippable(err) {
		return fmt.Errorf("unbound PCI functions: %w", err)
	}
	for _, u := range unbound {
		if err := cw.pciDevice(u.Addr); err != nil {
			return err
		}
		if err := cw.copySys("bus/pci/devices/" + u.Addr + "/modalias"); err != nil {
			return err
		}
	}
	k, ok := cw.src.(Kernel)
	if !ok {
		return nil
	}
	if len(unbound) > 0 {
		if b, err := k.ModulesAlias(); err == nil {
			aliases, _ := pci.ParseModulesAlias(bytes.NewReader(b))
			var keep strings.Builder
			keep.WriteString("# modules.alias lines matching the unbound Ethernet functions (linerate capture)\n")
			for _, a := range aliases {
				for _, u := range unbound {
					if pci.ModulesFor([]pci.Alias{a}, u.Modalias) != nil {
						fmt.Fprintf(&keep, "alias %s %s\n", a.Pattern, a.Module)
						break
					}
				}
			}
			if err := cw.w.WriteFile("kernel/modules.alias", []byte(keep.String())); err != nil {
				return err
			}
		}
	}
	b, err := k.KernelLog()
	if err != nil {
		return nil // not readable here (no /dev/kmsg, dmesg_restrict): absent
	}
	var keep bytes.Buffer
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if strings.Contains(strings.ToLower(l), "pci") {
			keep.WriteString(l)
		}
	}
	return cw.w.WriteFile("kernel/dmesg.txt", keep.Bytes())
}

// ifaces lists the interfaces to record, checking the ones asked for.
func (cw *captureWriter) ifaces() ([]string, error) {
	all, err := cw.src.Sys().NetDevices()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	if len(cw.opts.Ifaces) == 0 {
		return all, nil
	}
	have := map[string]bool{}
	for _, n := range all {
		have[n] = true
	}
	for _, n := range cw.opts.Ifaces {
		if !have[n] {
			return nil, fmt.Errorf("no interface %s (have: %s)", n, strings.Join(all, ", "))
		}
	}
	return cw.opts.Ifaces, nil
}

// copyFile copies the file rel of t into the capture as to; a file that
// does not exist or cannot be read in the machine's current state is left
// out. Reading goes through the source's tree, so a capture copied from a
// capture is read under the same rules as one inspected (package tree).
func (cw *captureWriter) copyFile(t tree.Tree, rel, to string) error {
	b, err := t.ReadFile(rel)
	if err != nil {
		if skippable(err) {
			return nil
		}
		return err
	}
	return cw.w.WriteFile(to, b)
}

// skippable errors leave a file out of the capture instead of failing it:
// absent files, attributes the kernel refuses to read in the current state
// (carrier and speed of a down link answer EINVAL), and, when the source is
// itself a capture, files its reader refuses (a link out of it, a named
// pipe: package tree), which the copy then does not hold.
func skippable(err error) bool {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, tree.ErrRefused) {
		return true
	}
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Op == "read"
}

func (cw *captureWriter) procFiles() error {
	proc := cw.src.Proc()
	for _, f := range counterFiles {
		t, rel := procFile(cw.src, f)
		if err := cw.copyFile(t, rel, "proc/"+f); err != nil {
			return err
		}
	}
	irqs, err := proc.Interrupts()
	if err == nil {
		for _, r := range irqs.Rows {
			if r.Number < 0 {
				continue
			}
			n := strconv.Itoa(r.Number)
			for _, f := range []string{"smp_affinity", "smp_affinity_list", "effective_affinity_list"} {
				if err := cw.copyFile(proc.Tree(), "irq/"+n+"/"+f, "proc/irq/"+n+"/"+f); err != nil {
					return err
				}
			}
		}
	}
	for _, name := range append([]string{"kernel.hostname", "kernel.osrelease"}, cw.opts.Sysctls...) {
		v, err := Sysctl(cw.src, name)
		if err != nil {
			continue // absent here (a module not loaded); inspect says so
		}
		if err := cw.w.WriteFile("proc/sys/"+strings.ReplaceAll(name, ".", "/"), []byte(v+"\n")); err != nil {
			return err
		}
	}
	// irqbalance's comm, if it runs.
	ents, err := proc.Tree().ReadDir("")
	if err != nil {
		return err
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := proc.Tree().ReadFile(e.Name() + "/comm")
		if err == nil && strings.TrimSpace(string(b)) == "irqbalance" {
			return cw.w.WriteFile("proc/"+e.Name()+"/comm", b)
		}
	}
	return nil
}

// procFile is the tree and path of a counter file: net/ files in the
// source's network namespace.
func procFile(src Source, f string) (tree.Tree, string) {
	if rest, ok := strings.CutPrefix(f, "net/"); ok {
		return src.Proc().NetTree(), rest
	}
	return src.Proc().Tree(), f
}

// copySys copies the file or directory rel (slash-separated, below the sys
// root) into sys/ of the capture. Every symlink met on the way is recorded
// as the same relative symlink, and copying goes on at its target, so the
// capture resolves as the live tree does. A missing file is left out.
func (cw *captureWriter) copySys(rel string) error {
	sys := cw.src.Sys().Tree()
	resolved, err := cw.resolve(sys, rel)
	if err != nil || resolved == "" {
		return err
	}
	if cw.done[resolved] {
		return nil
	}
	cw.done[resolved] = true
	st, err := sys.Stat(resolved)
	if err != nil {
		if skippable(err) {
			return nil
		}
		return err
	}
	if st.IsDir() {
		// A link's target directory (a driver), kept so the link resolves.
		return cw.w.Mkdir("sys/" + resolved)
	}
	return cw.copyFile(sys, resolved, "sys/"+resolved)
}

// resolve walks rel below the top of sys component by component. Each
// symlink is written to the capture (once) and replaced by its target. It
// returns the symlink-free path, or "" when a component does not exist.
func (cw *captureWriter) resolve(sys tree.Tree, rel string) (string, error) {
	parts := strings.Split(rel, "/")
	cur := ""
	for i := 0; i < len(parts); i++ {
		next := path.Join(cur, parts[i])
		p := sys.Path(next)
		st, err := sys.Lstat(next)
		if err != nil {
			if skippable(err) {
				return "", nil
			}
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		target, err := sys.Readlink(next)
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			return "", fmt.Errorf("%s: absolute symlink %s", p, target)
		}
		if !cw.done["link:"+next] {
			cw.done["link:"+next] = true
			if err := cw.w.Symlink("sys/"+next, target); err != nil {
				return "", err
			}
		}
		dest := path.Join(path.Dir(next), target)
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return "", fmt.Errorf("%s: symlink leaves %s", p, sys.Path(""))
		}
		// Go on from the target, which may hold further links.
		rest := append(strings.Split(dest, "/"), parts[i+1:]...)
		parts, i, cur = rest, -1, ""
	}
	return cur, nil
}

func (cw *captureWriter) iface(iface string) error {
	sys := cw.src.Sys()
	base := "class/net/" + iface
	for _, f := range netFiles {
		if err := cw.copySys(base + "/" + f); err != nil {
			return err
		}
	}
	ents, err := sys.Tree().ReadDir(base + "/queues")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range ents {
		var files []string
		switch {
		case strings.HasPrefix(e.Name(), "rx-"):
			files = []string{"rps_cpus", "rps_flow_cnt"}
		case strings.HasPrefix(e.Name(), "tx-"):
			files = []string{"xps_cpus"}
		}
		// The directory itself, even when its files cannot be read (xps_cpus
		// of a single-queue device answers ENOENT).
		if err := cw.copySys(base + "/queues/" + e.Name()); err != nil {
			return err
		}
		for _, f := range files {
			if err := cw.copySys(base + "/queues/" + e.Name() + "/" + f); err != nil {
				return err
			}
		}
	}
	if err := cw.copySys(base + "/device/driver"); err != nil {
		return err
	}
	if err := cw.msiIRQs(base + "/device"); err != nil {
		return err
	}
	nd, err := sys.NetDevice(iface)
	if err != nil {
		return fmt.Errorf("interface %s: %w", iface, err)
	}
	if nd.PCIAddr == "" {
		return nil
	}
	pcipath, err := sys.PCIPath(nd.PCIAddr)
	if err != nil {
		return fmt.Errorf("interface %s: PCIe path: %w", iface, err)
	}
	for _, addr := range pcipath {
		if err := cw.pciDevice(addr); err != nil {
			return err
		}
	}
	return nil
}

func (cw *captureWriter) msiIRQs(dev string) error {
	ents, err := cw.src.Sys().Tree().ReadDir(dev + "/msi_irqs")
	if err != nil {
		return nil // no MSI: inspect falls back to /proc/interrupts
	}
	for _, e := range ents {
		if err := cw.copySys(dev + "/msi_irqs/" + e.Name()); err != nil {
			return err
		}
	}
	return nil
}

func (cw *captureWriter) pciDevice(addr string) error {
	if cw.done["pci:"+addr] {
		return nil
	}
	cw.done["pci:"+addr] = true
	base := "bus/pci/devices/" + addr
	for _, f := range pciFiles {
		if err := cw.copySys(base + "/" + f); err != nil {
			return err
		}
	}
	if err := cw.copySys(base + "/driver"); err != nil {
		return err
	}
	if err := cw.msiIRQs(base); err != nil {
		return err
	}
	cfg, err := cw.src.PCIConfig(addr)
	if err != nil {
		if skippable(err) {
			return nil
		}
		return fmt.Errorf("PCI device %s: config: %w", addr, err)
	}
	return cw.w.WriteFile("pci/"+addr+"/config", cfg)
}

// sysNames lists the names in the directory dir of sys that match the
// shell pattern pattern, sorted; none when dir cannot be listed.
func (cw *captureWriter) sysNames(dir, pattern string) []string {
	ents, _ := cw.src.Sys().Tree().ReadDir(dir)
	var out []string
	for _, e := range ents {
		if ok, _ := path.Match(pattern, e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	return out
}

func (cw *captureWriter) machineFiles() error {
	sys := cw.src.Sys()
	for _, f := range []string{"present", "online", "possible"} {
		if err := cw.copySys("devices/system/cpu/" + f); err != nil {
			return err
		}
	}
	for _, c := range cw.sysNames("devices/system/cpu", "cpu[0-9]*") {
		// cpu0 of a PC has no online file and may have no cpufreq: its
		// directory alone says it is there.
		if err := cw.copySys("devices/system/cpu/" + c); err != nil {
			return err
		}
		for _, f := range cpuFiles {
			if err := cw.copySys("devices/system/cpu/" + c + "/" + f); err != nil {
				return err
			}
		}
	}
	for _, z := range cw.sysNames("class/thermal", "thermal_zone*") {
		for _, f := range []string{"type", "temp"} {
			if err := cw.copySys("class/thermal/" + z + "/" + f); err != nil {
				return err
			}
		}
	}
	if _, p, err := sys.RPiThrottled(); err == nil {
		if rel, err := filepath.Rel(sys.Root(), p); err == nil && !strings.HasPrefix(rel, "..") {
			if err := cw.copySys(filepath.ToSlash(rel)); err != nil {
				return err
			}
		}
	}
	return nil
}

// run runs a command in the source's network namespace and returns what
// it printed on stdout and stderr, in order. A non-zero exit is not an
// error: ethtool reports "Operation not supported" that way.
func (cw *captureWriter) run(name string, args ...string) ([]byte, error) {
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	var err error
	if l, ok := cw.src.(*Live); ok && l.ns != nil {
		// Started from the namespace's thread, the child is born inside it.
		if err = l.ns.Start(cmd); err == nil {
			err = cmd.Wait()
		}
	} else {
		err = cmd.Run()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = nil
	}
	return out.Bytes(), err
}

// tool finds a command for the capture, or "" to render text instead.
func tool(opt, name string) string {
	if opt == "-" {
		return ""
	}
	if opt != "" {
		return opt
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	return p
}

// ethtool writes dir/{i,k,...}.txt for iface, or only S.txt when onlyStats.
func (cw *captureWriter) ethtool(dir, iface string, onlyStats bool) error {
	cmd := tool(cw.opts.EthtoolCmd, "ethtool")
	if _, isLive := cw.src.(*Live); !isLive {
		cmd = "" // the command would describe this machine, not the source
	}
	for _, it := range ethtoolItems {
		if onlyStats && it.file != "S.txt" {
			continue
		}
		var out []byte
		var err error
		if cmd != "" {
			args := make([]string, len(it.args))
			for i, a := range it.args {
				if a == "" {
					a = iface
				}
				args[i] = a
			}
			out, err = cw.run(cmd, args...)
		} else {
			out, err = renderEthtool(cw.src.Ethtool(), iface, it.file)
		}
		if err != nil {
			return fmt.Errorf("ethtool %s of %s: %w", it.file, iface, err)
		}
		if err := cw.w.WriteFile(dir+"/"+it.file, out); err != nil {
			return err
		}
	}
	return nil
}

func (cw *captureWriter) ipLink() error {
	var out []byte
	if cmd := tool(cw.opts.IPCmd, "ip"); cmd != "" {
		if _, isLive := cw.src.(*Live); isLive {
			b, err := cw.run(cmd, "-d", "link", "show")
			if err != nil {
				return fmt.Errorf("ip -d link show: %w", err)
			}
			out = b
		}
	}
	if out == nil {
		ll, ok := cw.src.(LinkLister)
		if !ok {
			return nil
		}
		links, err := ll.Links()
		if err != nil {
			return nil // not known here: inspect says so
		}
		var buf bytes.Buffer
		if err := RenderIPLink(&buf, links); err != nil {
			return err
		}
		out = buf.Bytes()
	}
	return cw.w.WriteFile("ip/link.txt", out)
}

// samples takes opts.Samples snapshots of the counter files, one every
// opts.Interval, the first at once.
func (cw *captureWriter) samples(ctx context.Context, ifaces []string) error {
	n := cw.opts.Samples
	if n <= 0 {
		return nil
	}
	interval := cw.opts.Interval
	if interval <= 0 {
		interval = time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := range n {
		if i > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
		dir := fmt.Sprintf("samples/%03d", i)
		now := time.Now()
		for _, f := range counterFiles {
			t, rel := procFile(cw.src, f)
			if err := cw.copyFile(t, rel, dir+"/proc/"+f); err != nil {
				return err
			}
		}
		for _, iface := range ifaces {
			if err := cw.ethtool(dir+"/ethtool/"+iface, iface, true); err != nil {
				return err
			}
		}
		if err := cw.w.WriteFile(dir+"/time", []byte(now.Format(time.RFC3339Nano)+"\n")); err != nil {
			return err
		}
		if cw.opts.Progress != nil {
			fmt.Fprintf(cw.opts.Progress, "sample %d/%d at %s\n", i+1, n, now.Format("15:04:05.000"))
		}
	}
	return nil
}
