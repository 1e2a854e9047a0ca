package source

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"linerate/internal/nsthread"
	"linerate/internal/version"
	"linerate/source/ethtool"
	"linerate/source/procfs"
	"linerate/source/sysfs"
)

// The live machine's mount points. These are the only places the source
// package names /proc and /sys.
const (
	procRoot = "/proc"
	sysRoot  = "/sys"
)

// Live reads the machine linerate runs on, or one of its network
// namespaces.
type Live struct {
	name  string
	netns string
	proc  procfs.FS
	sys   sysfs.FS
	et    ethtool.Client
	// ns is the thread in the network namespace; nil for the host.
	ns *nsthread.Thread
}

// NewLive returns a source for this machine as the calling process sees it.
func NewLive() (Source, error) {
	et, err := ethtool.NewLive()
	if err != nil {
		return nil, fmt.Errorf("ethtool: %w", err)
	}
	return &Live{
		name: "live",
		proc: procfs.NewFS(procRoot),
		sys:  sysfs.NewFS(sysRoot),
		et:   et,
	}, nil
}

// NewLiveNetns returns a source for the network namespace bound at
// /var/run/netns/NAME (as `ip netns add` makes).
//
// How it sees the namespace without moving the whole process into it: an
// nsthread.Thread, an OS thread inside the namespace with a mount namespace
// of its own where /sys is the namespace's sysfs.
//
//   - What depends on the caller's namespace runs on that thread: creating
//     the ethtool client (its socket stays in the namespace it was made
//     in, so calls work from any goroutine afterwards), the rtnetlink dump
//     behind Links, sysctl reads (/proc/sys/net answers for the namespace
//     of the thread that opens the file), and the commands a capture runs.
//   - /proc/PID/task/TID/net of that thread shows the namespace's /proc/net
//     files to any thread, and /proc/PID/task/TID/root/sys its sysfs, so
//     the procfs and sysfs readers use those and work from any goroutine.
//     The kernel follows sysfs's relative links inside the thread's mount
//     namespace, and the sysfs reader resolves links below its root itself;
//     only a resolver that re-reads the root link (filepath.EvalSymlinks
//     reads "/" there) would leave the namespace.
//   - Nothing is mounted where the rest of the system sees it, and nothing
//     outlives the thread: Close ends it, and so does a kill.
func NewLiveNetns(name string) (Source, error) {
	ns, err := nsthread.Open(name, nsthread.Options{})
	if err != nil {
		return nil, err
	}
	task := filepath.Join(procRoot, strconv.Itoa(os.Getpid()), "task", strconv.Itoa(ns.Tid()))
	l := &Live{
		name:  "live netns " + name,
		netns: name,
		ns:    ns,
		proc:  procfs.NewFS(procRoot).WithNetDir(filepath.Join(task, "net")),
		sys:   sysfs.NewFS(filepath.Join(task, "root", sysRoot)),
	}
	var et *ethtool.Live
	err = ns.Do(func() (err error) { et, err = ethtool.NewLive(); return err })
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("ethtool in netns %s: %w", name, err)
	}
	l.et = et
	return l, nil
}

func (l *Live) Name() string            { return l.name }
func (l *Live) Proc() procfs.FS         { return l.proc }
func (l *Live) Sys() sysfs.FS           { return l.sys }
func (l *Live) Ethtool() ethtool.Client { return l.et }

// Netns is the network namespace the source reads, "" for the host's.
func (l *Live) Netns() string { return l.netns }

// Meta describes this machine now. Fields that cannot be read stay empty.
func (l *Live) Meta() Meta {
	m := Meta{Time: time.Now(), Arch: runtime.GOARCH, Linerate: version.Version, Netns: l.netns}
	m.Host, _ = l.proc.Hostname()
	m.Kernel, _ = l.proc.Kernel()
	m.MachineID = MachineID()
	return m
}

// MachineID names this installation: an HMAC-SHA256 keyed with
// /etc/machine-id (systemd's, or dbus's older copy) of linerate's own
// name, as systemd's sd_id128_get_machine_app_specific() derives IDs:
// stable for the machine, and the confidential ID itself (machine-id(5))
// never leaves it in a capture. "" when there is none.
func MachineID() string {
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if id := strings.TrimSpace(string(b)); id != "" {
			m := hmac.New(sha256.New, []byte(id))
			m.Write([]byte("linerate machine"))
			return hex.EncodeToString(m.Sum(nil)[:16])
		}
	}
	return ""
}

// PCIConfig reads the config space through sysfs: 256 or 4096 bytes as
// root, the first 64 bytes otherwise.
func (l *Live) PCIConfig(addr string) ([]byte, error) { return l.sys.PCIConfig(addr) }

// Samples is empty: a live source has no recorded samples.
func (l *Live) Samples() ([]Sample, error) { return nil, nil }

// SysctlHostWide reports whether name, read from the namespace, is the
// host's value (see SysctlHostWide).
func (l *Live) SysctlHostWide(name string) bool {
	if l.ns == nil {
		return false
	}
	if !strings.HasPrefix(name, "net.") {
		return true
	}
	var err error
	if derr := l.ns.Do(func() error { _, err = l.proc.Sysctl(name); return nil }); derr != nil {
		return false
	}
	return errors.Is(err, os.ErrNotExist)
}

// Sysctl reads a sysctl as seen from the source's network namespace. A
// setting the namespace has no copy of (net.core.netdev_max_backlog,
// netdev_budget and the other global ones are shown only in the initial
// namespace) is read from the host: that global value is the one in force
// inside the namespace too.
func (l *Live) Sysctl(name string) (v string, err error) {
	if l.ns == nil {
		return l.proc.Sysctl(name)
	}
	if derr := l.ns.Do(func() error { v, err = l.proc.Sysctl(name); return nil }); derr != nil {
		return "", derr
	}
	if errors.Is(err, os.ErrNotExist) && strings.HasPrefix(name, "net.") {
		if hv, herr := l.proc.Sysctl(name); herr == nil {
			return hv, nil
		}
	}
	return v, err
}

// Links lists the interfaces with rtnetlink, in the source's namespace.
func (l *Live) Links() (links map[string]Link, err error) {
	if l.ns == nil {
		return DumpLinks()
	}
	err = l.ns.Do(func() (err error) { links, err = DumpLinks(); return err })
	return links, err
}

// Close releases the ethtool client and the namespace's thread (its sysfs
// goes with it).
func (l *Live) Close() error {
	var errs []error
	if l.et != nil {
		errs = append(errs, l.et.Close())
		l.et = nil
	}
	if l.ns != nil {
		errs = append(errs, l.ns.Close())
		l.ns = nil
	}
	return errors.Join(errs...)
}
