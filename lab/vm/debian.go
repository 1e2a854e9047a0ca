package vm

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"linerate/internal/usage"
)

// The Debian guest image: a root file system with systemd, built once by
// mmdebstrap from Debian's archive, with the host kernel's modules the
// guest needs, written to an ext4 disk image kept in the cache. Each
// guest boots a copy-on-write layer over it (Overlay), so what a guest
// writes (a persisted tuning, a systemd unit) survives its reboots and
// goes with its lab.

// debianPackages are installed besides the "apt" variant's essentials.
var debianPackages = []string{"systemd-sysv", "udev", "iproute2", "ethtool", "kmod", "procps", "nftables"}

// debianModuleTrees are the parts of the kernel's module tree copied into
// the image: networking, NIC drivers and what they load.
var debianModuleTrees = []string{
	"kernel/net", "kernel/lib", "kernel/crypto", "kernel/arch",
	"kernel/drivers/net", "kernel/drivers/virtio", "kernel/drivers/char",
	"kernel/drivers/block", "kernel/drivers/ptp", "kernel/drivers/pps",
	"kernel/fs/ext4", "kernel/fs/jbd2", "kernel/fs/mbcache.ko",
}

// debianImageVersion changes whenever what the image holds changes, so a
// cached image of an older recipe is built again.
const debianImageVersion = "1"

// guestUnit runs linerate's agent in a Debian guest.
const guestUnit = `[Unit]
Description=linerate lab guest agent (talks to the host over virtio-serial)
DefaultDependencies=no
After=systemd-udevd.service
Wants=systemd-udevd.service

[Service]
ExecStart=` + GuestBinary + ` lab guest
Restart=always
RestartSec=200ms

[Install]
WantedBy=multi-user.target
`

// DebianImagePath is where the image for kernel k lives in cacheDir.
func DebianImagePath(cacheDir string, k Kernel) string {
	return filepath.Join(cacheDir, fmt.Sprintf("debian-%s-v%s.img", k.Version, debianImageVersion))
}

// DebianImage returns the cached Debian image for kernel k, building it
// first if it is not there (a few minutes: mmdebstrap downloads the
// packages). progress gets mmdebstrap's output.
func DebianImage(ctx context.Context, cacheDir string, k Kernel, progress io.Writer) (string, error) {
	p := DebianImagePath(cacheDir, k)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return p, BuildDebianImage(ctx, cacheDir, k, progress)
}

// needTool finds a program or names the Debian package that has it.
func needTool(bin, pkg, what string) (string, error) {
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", usage.Errorf("no %s to %s: install Debian's %s (make deps does)", bin, what, pkg)
	}
	return p, nil
}

// BuildDebianImage builds the Debian image for kernel k in cacheDir,
// replacing one that is there.
func BuildDebianImage(ctx context.Context, cacheDir string, k Kernel, progress io.Writer) error {
	mmdebstrap, err := needTool("mmdebstrap", "mmdebstrap", "build a Debian guest")
	if err != nil {
		return err
	}
	mkfs, err := needTool("mkfs.ext4", "e2fsprogs", "make a guest's disk")
	if err != nil {
		return err
	}
	depmod, err := needTool("depmod", "kmod", "index a guest's modules")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return fmt.Errorf("cache of guest images: %w", err)
	}
	work, err := os.MkdirTemp(cacheDir, ".debian-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	root := filepath.Join(work, "root")
	fmt.Fprintf(progress, "building the Debian guest image with mmdebstrap (once; kept in %s)\n", cacheDir)
	cmd := exec.CommandContext(ctx, mmdebstrap, "--variant=apt", "--include="+strings.Join(debianPackages, ","),
		"--dpkgopt=path-exclude=/usr/share/{doc,man,locale}/*", hostSuite(), root)
	cmd.Stdout, cmd.Stderr = progress, progress
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mmdebstrap: %w", err)
	}
	if err := copyModules(k, root); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, depmod, "-b", root, k.Version).CombinedOutput(); err != nil {
		return fmt.Errorf("depmod: %v: %s", err, out)
	}
	if err := customise(root); err != nil {
		return err
	}
	img := filepath.Join(work, "disk.img")
	if out, err := exec.CommandContext(ctx, mkfs, "-q", "-F", "-L", "linerate", "-d", root, img, "2G").CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4: %v: %s", err, out)
	}
	return os.Rename(img, DebianImagePath(cacheDir, k))
}

// hostSuite is the Debian release the host runs (VERSION_CODENAME of
// /etc/os-release), bookworm when it says none.
func hostSuite() string {
	b, err := os.ReadFile("/etc/os-release")
	if err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VERSION_CODENAME="); ok && v != "" {
				return strings.Trim(v, `"`)
			}
		}
	}
	return "bookworm"
}

// copyModules copies the parts of k's module tree a guest uses.
func copyModules(k Kernel, root string) error {
	dst := filepath.Join(root, "lib/modules", k.Version)
	for _, t := range debianModuleTrees {
		src := filepath.Join(k.Modules, t)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, t)), 0o755); err != nil {
			return err
		}
		if out, err := exec.Command("cp", "-a", src, filepath.Join(dst, t)).CombinedOutput(); err != nil {
			return fmt.Errorf("copy modules %s: %v: %s", t, err, out)
		}
	}
	for _, f := range []string{"modules.order", "modules.builtin", "modules.builtin.modinfo"} {
		if b, err := os.ReadFile(filepath.Join(k.Modules, f)); err == nil {
			if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// customise makes the root a lab guest's: its disk in fstab, the agent's
// unit enabled, and the services a lab guest has no use for (time sync,
// apt's timers) left off, so it boots sooner.
func customise(root string) error {
	files := map[string]string{
		"etc/fstab":    "/dev/vda / ext4 rw,relatime 0 1\n",
		"etc/hostname": "linerate-guest\n",
		"etc/systemd/system/linerate-guest.service": guestUnit,
	}
	for p, body := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			return err
		}
	}
	links := map[string]string{
		"etc/systemd/system/multi-user.target.wants/linerate-guest.service": "/etc/systemd/system/linerate-guest.service",
		"etc/systemd/system/apt-daily.timer":                                "/dev/null",
		"etc/systemd/system/apt-daily-upgrade.timer":                        "/dev/null",
		"etc/systemd/system/systemd-timesyncd.service":                      "/dev/null",
		"etc/systemd/system/e2scrub_reap.service":                           "/dev/null",
	}
	for p, target := range links {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		os.Remove(full)
		if err := os.Symlink(target, full); err != nil {
			return err
		}
	}
	return nil
}

// Overlay makes a guest's disk: a qcow2 layer whose reads fall through to
// the cached base image and whose writes stay in the layer.
func Overlay(base, path string) error {
	qemuImg, err := needTool("qemu-img", "qemu-utils", "make a guest's disk")
	if err != nil {
		return err
	}
	os.Remove(path)
	if out, err := exec.Command(qemuImg, "create", "-q", "-f", "qcow2", "-F", "raw", "-b", base, path).CombinedOutput(); err != nil {
		return fmt.Errorf("qemu-img create: %v: %s", err, out)
	}
	return nil
}
