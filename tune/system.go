package tune

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"linerate/source/ethtool"
	"linerate/source/sysfs"
)

// System is the machine tune reads and changes. File names are
// slash-separated and relative to the system's root, laid out as on a
// live machine: "proc/irq/41/smp_affinity_list",
// "sys/class/net/eth1/queues/rx-0/rps_cpus", "proc/sys/net/core/rmem_max".
type System interface {
	// Name is "live", "live netns NAME" or "dir ROOT".
	Name() string
	// Netns is the network namespace changes happen in; "" for the host's.
	Netns() string
	ReadFile(name string) ([]byte, error)
	// WriteFile writes data to an existing file (as echo > file does); it
	// never creates one.
	WriteFile(name string, data []byte) error
	// ReadDir lists the names in a directory, sorted.
	ReadDir(name string) ([]string, error)
	// SysFS calls fn with the system's /sys, where its links are followed
	// (a device's parent is found as the kernel links it).
	SysFS(fn func(sysfs.FS) error) error
	// Ethtool returns the ethtool client of the system's namespace, or an
	// error wrapping ethtool.ErrNotSupported when there is none.
	Ethtool() (Ethtool, error)
	// Links returns the netlink view of the interfaces, or an error
	// wrapping ethtool.ErrNotSupported when there is none.
	Links() (Links, error)
	// Services returns the service manager, or an error wrapping
	// ethtool.ErrNotSupported when there is none.
	Services() (Services, error)
	// Tc runs iproute2's tc with args in the system's network namespace
	// and returns what it printed, or an error wrapping
	// ethtool.ErrNotSupported when the system has no tc.
	Tc(args ...string) ([]byte, error)
	Close() error
}

// Ethtool reads and changes ethtool settings.
type Ethtool interface {
	ethtool.Client
	ethtool.Setter
}

// Link is what netlink says about an interface's MTU.
type Link struct {
	Name string
	MTU  int
	// MinMTU and MaxMTU are the range the driver accepts; 0 when the kernel
	// does not report it.
	MinMTU, MaxMTU int
}

// Links reads and sets interface MTUs.
type Links interface {
	Link(name string) (Link, error)
	SetMTU(name string, mtu int) error
}

// Services starts and stops system services (irqbalance).
type Services interface {
	// State reports the unit's state; a unit that is not installed is
	// Loaded false.
	State(unit string) (ServiceState, error)
	Start(unit string) error
	Stop(unit string) error
}

// ServiceState is what the service manager says about a unit.
type ServiceState struct {
	Loaded bool
	// Active is "active", "inactive", "failed", ...
	Active string
}

// errNone marks a facility a system does not have.
func errNone(what, sys string) error {
	return fmt.Errorf("%s on %s: %w", what, sys, ethtool.ErrNotSupported)
}

// noneError is a facility a system does not have, said in its own words
// (not a driver's): errors.Is(err, ethtool.ErrNotSupported) holds.
type noneError struct{ why string }

func (e noneError) Error() string { return e.why }
func (e noneError) Unwrap() error { return ethtool.ErrNotSupported }

// cleanName checks a root-relative name and returns it cleaned.
func cleanName(name string) (string, error) {
	c := path.Clean("/" + name)[1:]
	if c == "" || name != c && name != c+"/" {
		return "", fmt.Errorf("path %q: want a clean path relative to the root", name)
	}
	return c, nil
}

// Dir is a System on a directory laid out like / (proc/..., sys/...). It
// has no ethtool, netlink or service manager unless given one; tests and
// dry runs on a copy of a machine's files use it.
type Dir struct {
	root string
	svc  Services
	et   Ethtool
}

// NewDir returns a System on the directory root.
func NewDir(root string) *Dir { return &Dir{root: root} }

// SetServices gives the directory system a service manager.
func (d *Dir) SetServices(s Services) { d.svc = s }

// SetEthtool gives the directory system an ethtool (for drivers the test
// machine does not have).
func (d *Dir) SetEthtool(e Ethtool) { d.et = e }

func (d *Dir) Name() string  { return "dir " + d.root }
func (d *Dir) Netns() string { return "" }
func (d *Dir) Close() error  { return nil }

func (d *Dir) path(name string) (string, error) {
	c, err := cleanName(name)
	if err != nil {
		return "", err
	}
	return filepath.Join(d.root, filepath.FromSlash(c)), nil
}

func (d *Dir) ReadFile(name string) ([]byte, error) {
	p, err := d.path(name)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

func (d *Dir) WriteFile(name string, data []byte) error {
	p, err := d.path(name)
	if err != nil {
		return err
	}
	return writeExisting(p, data)
}

func (d *Dir) ReadDir(name string) ([]string, error) {
	p, err := d.path(name)
	if err != nil {
		return nil, err
	}
	return readDirNames(p)
}

func (d *Dir) SysFS(fn func(sysfs.FS) error) error {
	return fn(sysfs.NewFS(filepath.Join(d.root, "sys")))
}

func (d *Dir) Ethtool() (Ethtool, error) {
	if d.et == nil {
		return nil, errNone("ethtool", d.Name())
	}
	return d.et, nil
}
func (d *Dir) Links() (Links, error) { return nil, errNone("netlink", d.Name()) }

func (d *Dir) Tc(...string) ([]byte, error) { return nil, errNone("tc", d.Name()) }

func (d *Dir) Services() (Services, error) {
	if d.svc == nil {
		return nil, errNone("service manager", d.Name())
	}
	return d.svc, nil
}

// writeExisting writes data to an existing file in one write(2), as the
// kernel's proc and sysfs files want, and reports the error of the write
// itself (where the kernel says EINVAL or EIO).
func writeExisting(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

func readDirNames(p string) ([]string, error) {
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out, nil
}

// readTrim reads a one-value file and trims white space.
func readTrim(sys System, name string) (string, error) {
	b, err := sys.ReadFile(name)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
