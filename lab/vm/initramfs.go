package vm

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"linerate/internal/usage"
)

// GuestBinary is where linerate lives inside every guest.
const GuestBinary = "/usr/local/bin/linerate"

// busyboxPath is the static busybox Debian's busybox-static installs.
const busyboxPath = "/bin/busybox"

// guestModules are the modules every guest loads at boot, besides its
// NICs' drivers: the virtio transport and the serial port linerate talks
// through, the qdiscs and NAT a lab node uses, and what a guest with a
// root disk needs to mount it.
var guestModules = []string{
	// libcrc32c (conntrack's) and ext4 ask for crc32c with a soft
	// dependency (modules.softdep), which a plain insmod does not follow.
	"crc32c_generic",
	"virtio_pci", "virtio_console",
	"sch_tbf", "sch_fq_codel", "sch_fq", "sch_htb",
	"nft_masq", "nft_chain_nat",
	"virtio_blk", "ext4",
}

// hostPrograms are programs of the host copied into the initramfs, with
// the libraries they load, when the host has them: so that `lab exec`
// in a guest can run the tools a user checks linerate against.
var hostPrograms = []string{"ethtool", "ip", "tc"}

// libDirs are where the dynamic loader finds libraries on Debian.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/lib", "/usr/lib"}

// Initramfs says what goes into a guest's initramfs.
type Initramfs struct {
	Kernel Kernel
	// Binary is the linerate the guest runs (GuestBinary inside).
	Binary string
	// Models are the NIC models whose drivers are loaded at boot.
	Models []Model
}

// initScript is the initramfs's /init. A guest with a root disk
// (linerate.root= on the kernel's command line) mounts it, puts this
// lab's linerate in it and hands over to its own init (systemd); any other
// guest runs busybox's init, which starts linerate's guest agent and
// starts it again should it end.
var initScript = `#!/bin/busybox sh
# The init of a linerate lab guest (linerate lab up --vm).
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s
for m in $(cat /etc/linerate/modules); do
	insmod /lib/modules/$(uname -r)/$m || echo "linerate init: insmod $m failed"
done
root=$(sed -n 's/.*linerate\.root=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$root" ]; then
	mkdir -p /newroot
	if mount -t ext4 "$root" /newroot; then
		mkdir -p /newroot` + path.Dir(GuestBinary) + `
		cp /bin/linerate /newroot` + GuestBinary + `.new && mv /newroot` + GuestBinary + `.new /newroot` + GuestBinary + `
		mount --move /dev /newroot/dev
		umount /proc /sys
		exec switch_root /newroot /sbin/init
	fi
	echo "linerate init: cannot mount $root: staying in the initramfs"
fi
exec /bin/busybox init
`

// rcS is run once by busybox's init before the agent starts.
const rcS = `#!/bin/sh
mkdir -p /dev/pts /dev/shm /run /tmp /sys/fs/bpf
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t bpf bpf /sys/fs/bpf
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
hostname "$(sed -n 's/.*linerate\.node=\([^ ]*\).*/\1/p' /proc/cmdline)"
ip link set lo up
`

// inittab is busybox init's table: the agent is respawned if it ends.
const inittab = `::sysinit:/etc/linerate/rcS
::respawn:/bin/linerate lab guest
::ctrlaltdel:/bin/reboot -f
::shutdown:/bin/umount -a -r
`

// Build writes the initramfs into dir (a cache), named after a hash of
// everything in it, unless it is there already, and returns its path.
func (r Initramfs) Build(dir string) (string, error) {
	files, err := r.files()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%o\x00%s\x00%d\x00", f.path, f.mode, f.link, len(f.data))
		h.Write(f.data)
	}
	p := filepath.Join(dir, initramfsPrefix+hex.EncodeToString(h.Sum(nil))[:16]+".cpio")
	if _, err := os.Stat(p); err == nil {
		now := time.Now()
		os.Chtimes(p, now, now) // recently used: pruned last
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cache of guest images: %w", err)
	}
	var buf bytes.Buffer
	c := newCPIO(&buf)
	for _, d := range []string{"proc", "sys", "dev", "run", "tmp", "newroot", "root", "etc", "var", "bin", "sbin", "usr/bin", "usr/sbin"} {
		c.mkdirAll(d)
	}
	for _, f := range files {
		if f.link != "" {
			c.symlink(f.path, f.link)
		} else {
			c.file(f.path, f.mode, f.data)
		}
	}
	if err := c.close(); err != nil {
		return "", err
	}
	if err := writeAtomic(p, buf.Bytes()); err != nil {
		return "", fmt.Errorf("write initramfs: %w", err)
	}
	pruneInitramfs(dir, keepInitramfs)
	return p, nil
}

// initramfsPrefix starts the name of every cached initramfs.
const initramfsPrefix = "initramfs-"

// keepInitramfs is how many initramfs images the cache keeps: each build
// of linerate makes a new one (the binary is in it), and a running guest
// needs its own only while QEMU loads it.
const keepInitramfs = 4

// pruneInitramfs removes all but the keep most recently used images.
func pruneInitramfs(dir string, keep int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type img struct {
		path string
		mod  time.Time
	}
	var imgs []img
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), initramfsPrefix) {
			continue
		}
		if fi, err := e.Info(); err == nil {
			imgs = append(imgs, img{filepath.Join(dir, e.Name()), fi.ModTime()})
		}
	}
	slices.SortFunc(imgs, func(a, b img) int { return b.mod.Compare(a.mod) })
	for _, i := range imgs[min(keep, len(imgs)):] {
		os.Remove(i.path)
	}
}

// cpioFileSpec is one entry of the initramfs.
type cpioFileSpec struct {
	path string
	mode fs.FileMode
	data []byte
	link string
}

// files gathers every entry, sorted by path.
func (r Initramfs) files() ([]cpioFileSpec, error) {
	var out []cpioFileSpec
	add := func(p string, mode fs.FileMode, data []byte) {
		out = append(out, cpioFileSpec{path: p, mode: mode, data: data})
	}
	bb, err := staticBusybox()
	if err != nil {
		return nil, err
	}
	add("/bin/busybox", 0o755, bb)
	add("/init", 0o755, []byte(initScript))
	add("/etc/linerate/rcS", 0o755, []byte(rcS))
	add("/etc/inittab", 0o644, []byte(inittab))
	add("/etc/hosts", 0o644, []byte("127.0.0.1\tlocalhost\n"))
	add("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n"))
	add("/etc/group", 0o644, []byte("root:x:0:\n"))
	bin, err := os.ReadFile(r.Binary)
	if err != nil {
		return nil, fmt.Errorf("linerate for the guest: %w", err)
	}
	add("/bin/linerate", 0o755, bin)
	out = append(out, cpioFileSpec{path: GuestBinary, link: "/bin/linerate"})

	mods, err := readModules(r.Kernel.Modules)
	if err != nil {
		return nil, fmt.Errorf("modules of kernel %s: %w", r.Kernel.Version, err)
	}
	names := slices.Clone(guestModules)
	for _, m := range r.Models {
		names = append(names, m.Module())
	}
	order, err := mods.loadOrder(names)
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", r.Kernel.Version, err)
	}
	for _, f := range order {
		data, err := os.ReadFile(filepath.Join(r.Kernel.Modules, f))
		if err != nil {
			return nil, fmt.Errorf("module of kernel %s: %w", r.Kernel.Version, err)
		}
		add(path.Join("/lib/modules", r.Kernel.Version, f), 0o644, data)
	}
	add("/etc/linerate/modules", 0o644, []byte(strings.Join(order, "\n")+"\n"))

	progs, err := hostProgramFiles(hostPrograms)
	if err != nil {
		return nil, err
	}
	out = append(out, progs...)
	slices.SortStableFunc(out, func(a, b cpioFileSpec) int { return strings.Compare(a.path, b.path) })
	return slices.CompactFunc(out, func(a, b cpioFileSpec) bool { return a.path == b.path }), nil
}

// staticBusybox reads busybox, which must be linked statically: the
// initramfs has no C library for it.
func staticBusybox() ([]byte, error) {
	missing := usage.Errorf("no static busybox at %s for the guest: install Debian's busybox-static (make deps does)", busyboxPath)
	f, err := elf.Open(busyboxPath)
	if err != nil {
		return nil, missing
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, missing
		}
	}
	return os.ReadFile(busyboxPath)
}

// hostProgramFiles copies the named programs found on the host's PATH,
// with the shared libraries and the dynamic loader they need, to the
// same paths in the initramfs. A program the host lacks is left out.
func hostProgramFiles(names []string) ([]cpioFileSpec, error) {
	var out []cpioFileSpec
	seen := map[string]bool{}
	var addELF func(p string) error
	addELF = func(p string) error {
		if seen[p] {
			return nil
		}
		seen[p] = true
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(real)
		if err != nil {
			return err
		}
		out = append(out, cpioFileSpec{path: p, mode: 0o755, data: data})
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		defer f.Close()
		for _, pr := range f.Progs {
			if pr.Type != elf.PT_INTERP {
				continue
			}
			b, err := io.ReadAll(pr.Open())
			if err != nil {
				return err
			}
			if err := addELF(strings.TrimRight(string(b), "\x00")); err != nil {
				return err
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, l := range libs {
			lp, ok := findLib(l)
			if !ok {
				return fmt.Errorf("%s needs %s, which is not in %s", p, l, strings.Join(libDirs, ", "))
			}
			if err := addELF(lp); err != nil {
				return err
			}
		}
		return nil
	}
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			continue
		}
		if err := addELF(p); err != nil {
			return nil, fmt.Errorf("copy %s into the guest: %w", n, err)
		}
	}
	return out, nil
}

func findLib(name string) (string, bool) {
	for _, d := range libDirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	return "", false
}

// writeAtomic writes a regular file of this package's own (a cache entry,
// a lab's file) through a temporary file renamed into place.
func writeAtomic(p string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
