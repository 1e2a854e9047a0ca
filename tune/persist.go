package tune

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"linerate/diagnose"
	"linerate/internal/usage"
)

// Where Persist writes, relative to the root ("/" on a live machine). The
// unit files are what `systemctl enable` would link; writing the links
// directly lets a test check them in a temporary root.
const (
	unitDir      = "etc/systemd/system"
	boxUnit      = "linerate-tune.service"
	ifaceUnit    = "linerate-tune@.service"
	planPath     = "etc/linerate/tune-plan.json"
	sysctlDPath  = "etc/sysctl.d/90-linerate.conf"
	multiUserDir = unitDir + "/multi-user.target.wants"
	persistMark  = "# Written by 'linerate tune persist'; 'linerate tune unpersist' removes it."
)

// Persistence targets: how the machine re-applies at boot.
const (
	// TargetSystemd: a sysctl.d file, linerate-tune.service for the
	// box-wide items and linerate-tune@.service bound to each tuned
	// interface's device.
	TargetSystemd = "systemd"
	// TargetOpenWrt: a procd init script and hotplug.d scripts for
	// interfaces that appear (net) or come up (iface).
	TargetOpenWrt = "openwrt"
	// TargetTuned: a tuned profile directory.
	TargetTuned = "tuned"
)

// Targets lists the persistence targets.
func Targets() []string { return []string{TargetSystemd, TargetOpenWrt, TargetTuned} }

// openwrtRelease marks an OpenWrt root.
const openwrtRelease = "etc/openwrt_release"

// DefaultTarget is the target for a root: openwrt where
// /etc/openwrt_release exists, else systemd.
func DefaultTarget(root string) string {
	if _, err := os.Stat(filepath.Join(root, openwrtRelease)); err == nil {
		return TargetOpenWrt
	}
	return TargetSystemd
}

// PersistOptions says where and how to persist.
type PersistOptions struct {
	// Root is the directory standing for / ("/" on a live machine; a
	// temporary directory in tests). systemctl daemon-reload runs only
	// when it is "/".
	Root string
	// Binary is the absolute path of the linerate the units run.
	Binary string
	// StateDir is the state directory the boot-time apply journals in.
	StateDir string
	// Target is one of Targets(); "" is DefaultTarget(Root).
	Target string
	// Here is the system persist runs on (the live host): a network
	// namespace other than the host's is refused, and records made in
	// another namespace than Here's are left out, whatever their name.
	// nil checks neither (a directory root in tests).
	Here System
}

// PersistResult says what Persist did.
type PersistResult struct {
	// Target is the persistence target written.
	Target string
	// Written lists the files and links written, as paths on the target.
	Written []string
	// Items are the items the units re-apply (sysctls excluded: they are
	// in the sysctl.d file).
	Items []Item
	// Sysctls are the lines of the sysctl.d file.
	Sysctls []string
	// Boot is the advice to follow by hand: boot items are never written.
	// Advice describes them against the root's files (the exact edit to
	// /boot/cmdline.txt or /boot/config.txt).
	Boot   []Item
	Advice []Change
	// Skipped says which records were left out, and why.
	Skipped []string
	// Conflicts name what on the target would undo the persisted items
	// (OpenWrt's packet steering), with the command that turns it off.
	Conflicts []string
	// Next says what is left to do for the target to take the files
	// (activate a tuned profile).
	Next []string
}

// Persist makes the applied set survive reboot the way the target
// expects (see the Target constants). The items go to a plan file, the
// sysctls to a sysctl.d file (a tuned profile holds both itself), and the
// hooks run `linerate tune reapply`, which applies the plan's items of
// the box or of one interface again. Earlier persisted files of every
// target are replaced.
func Persist(recs []*Record, opt PersistOptions) (*PersistResult, error) {
	if opt.Root == "" || opt.Binary == "" || opt.StateDir == "" {
		return nil, errors.New("persist: root, binary and state directory are required")
	}
	if !filepath.IsAbs(opt.Binary) {
		return nil, fmt.Errorf("persist: binary %q: want an absolute path", opt.Binary)
	}
	if opt.Target == "" {
		opt.Target = DefaultTarget(opt.Root)
	}
	if !slices.Contains(Targets(), opt.Target) {
		return nil, usage.Field("Target", "%q: want one of %s", opt.Target, strings.Join(Targets(), ", "))
	}
	here := ""
	if opt.Here != nil {
		if err := hostWide(opt.Here, "what runs at boot is the host's"); err != nil {
			return nil, err
		}
		here = netnsID(opt.Here)
	}
	res := &PersistResult{Target: opt.Target}
	ifaces, box := res.collect(recs, here)
	if _, err := Unpersist(opt.Root); err != nil {
		return nil, err
	}
	w := &writer{root: opt.Root}
	switch opt.Target {
	case TargetSystemd:
		res.writeCommon(w)
		writeSystemd(w, opt, ifaces, box)
	case TargetOpenWrt:
		res.writeCommon(w)
		res.writeOpenWrt(w, opt)
	case TargetTuned:
		res.writeTuned(w, opt)
	}
	if w.err != nil {
		return nil, w.err
	}
	res.Written = w.written
	if len(res.Boot) > 0 {
		if p, err := PlanFixes(NewDir(opt.Root), res.Boot); err == nil {
			res.Advice = p.Changes()
		}
	}
	if opt.Target == TargetSystemd {
		if err := daemonReload(opt.Root); err != nil {
			return res, err
		}
	}
	return res, nil
}

// collect keeps the latest item for each target of the applied host
// records (made in the network namespace whose identity is host, when it
// is known), sorted into sysctls, boot advice and the rest; it returns the
// interfaces the rest changes, and whether some of it is box-wide.
func (res *PersistResult) collect(recs []*Record, host string) (ifaces []string, box bool) {
	// Later records win over earlier ones for the same target.
	var order []string
	latest := map[string]Item{}
	for _, r := range recs {
		switch {
		case r.Netns != "":
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: netns %s does not survive a reboot", r.ID, r.Netns))
			continue
		case host != "" && r.NetnsID != "" && r.NetnsID != host:
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: made in network namespace %s, not the host's (%s; under 'ip netns exec'?): a namespace does not survive a reboot", r.ID, r.NetnsID, host))
			continue
		case r.State != RecApplied:
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: %s, not applied", r.ID, r.State))
			continue
		}
		for _, it := range r.Items {
			if _, ok := latest[it.key()]; !ok {
				order = append(order, it.key())
			}
			latest[it.key()] = it
		}
	}
	seen := map[string]bool{}
	for _, k := range order {
		it := latest[k]
		switch k := it.Kind; {
		case k.Advice():
			res.Boot = append(res.Boot, it)
		case k == diagnose.FixSysctl:
			res.Sysctls = append(res.Sysctls, it.Target+" = "+it.Value)
		default:
			res.Items = append(res.Items, it)
			if iface := ItemIface(it); iface == "" {
				box = true
			} else if !seen[iface] {
				seen[iface] = true
				ifaces = append(ifaces, iface)
			}
		}
	}
	sort.Strings(ifaces)
	return ifaces, box
}

// writeCommon writes the sysctl.d file and the plan file.
func (res *PersistResult) writeCommon(w *writer) {
	if len(res.Sysctls) > 0 {
		w.file(sysctlDPath, persistMark+"\n"+strings.Join(res.Sysctls, "\n")+"\n")
	}
	w.plan(planPath, res.Items)
}

// reapplyCmd is the command the hooks run, without its scope.
func reapplyCmd(opt PersistOptions, plan string) string {
	return fmt.Sprintf("%s tune reapply --plan /%s --state-dir %s", opt.Binary, plan, opt.StateDir)
}

// writeSystemd writes linerate-tune.service (box-wide items, at boot) and
// linerate-tune@.service, instantiated for each tuned interface and bound
// to its device unit, so that the interface's items are applied again
// whenever it appears.
func writeSystemd(w *writer, opt PersistOptions, ifaces []string, box bool) {
	reapply := reapplyCmd(opt, planPath)
	if box {
		w.file(unitDir+"/"+boxUnit, fmt.Sprintf(`%s
[Unit]
Description=linerate: re-apply box-wide network tuning
After=systemd-sysctl.service irqbalance.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=%s box

[Install]
WantedBy=multi-user.target
`, persistMark, reapply))
		w.link(multiUserDir+"/"+boxUnit, "/"+unitDir+"/"+boxUnit)
	}
	if len(ifaces) == 0 {
		return
	}
	// %i is the escaped instance (right for a unit name), %I the
	// interface name itself (systemd.unit(5), "Specifiers").
	w.file(unitDir+"/"+ifaceUnit, fmt.Sprintf(`%s
[Unit]
Description=linerate: re-apply network tuning of %%I
BindsTo=sys-subsystem-net-devices-%%i.device
After=sys-subsystem-net-devices-%%i.device

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=%s %%I

[Install]
WantedBy=sys-subsystem-net-devices-%%i.device
`, persistMark, reapply))
	for _, n := range ifaces {
		e := unitEscape(n)
		w.link(fmt.Sprintf("%s/sys-subsystem-net-devices-%s.device.wants/linerate-tune@%s.service", unitDir, e, e),
			"/"+unitDir+"/"+ifaceUnit)
	}
	writeLinkUpHooks(w, reapply, ifaces)
}

// The link-up hooks of a systemd box: a device unit runs when an
// interface appears, not when an existing one comes back up after its
// driver reset it (link down/up, which loses rings, coalescing and
// channels on some drivers). The network manager in charge says that:
// networkd-dispatcher runs carrier.d scripts with IFACE set when a link
// gains carrier; NetworkManager runs dispatcher.d scripts with the
// interface and the action ("up") as arguments. Only the one installed
// runs its script.
const (
	networkdHook = "etc/networkd-dispatcher/carrier.d/50-linerate-reapply"
	nmHook       = "etc/NetworkManager/dispatcher.d/50-linerate-reapply"
)

var linkUpHooks = []string{networkdHook, nmHook}

func writeLinkUpHooks(w *writer, reapply string, ifaces []string) {
	list := strings.Join(ifaces, " ")
	w.script(networkdHook, fmt.Sprintf(`#!/bin/sh
%s
# networkd-dispatcher: $IFACE gained carrier.
case " %s " in *" $IFACE "*) exec %s "$IFACE" ;; esac
`, persistMark, list, reapply))
	w.script(nmHook, fmt.Sprintf(`#!/bin/sh
%s
# NetworkManager dispatcher: $1 is the interface, $2 the action.
[ "$2" = up ] || exit 0
case " %s " in *" $1 "*) exec %s "$1" ;; esac
`, persistMark, list, reapply))
}

// Unpersist removes what Persist wrote and returns the paths removed. The
// live values stay as they are: that is rollback's job.
func Unpersist(root string) ([]string, error) {
	var removed []string
	var errs []error
	rm := func(rel string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.Remove(p); err == nil {
			removed = append(removed, "/"+rel)
		} else if !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, rel := range append([]string{multiUserDir + "/" + boxUnit, unitDir + "/" + boxUnit, planPath, sysctlDPath},
		append(append(openwrtFiles, tunedFiles...), linkUpHooks...)...) {
		rm(rel)
	}
	os.Remove(filepath.Join(root, filepath.FromSlash(tunedDir)))
	wants, _ := filepath.Glob(filepath.Join(root, unitDir, "sys-subsystem-net-devices-*.device.wants", "linerate-tune@*.service"))
	for _, p := range wants {
		rel, _ := filepath.Rel(root, p)
		rm(filepath.ToSlash(rel))
		// The .wants directory goes too once empty; Remove fails otherwise.
		os.Remove(filepath.Dir(p))
	}
	rm(unitDir + "/" + ifaceUnit)
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("unpersist: %w", err)
	}
	if slices.ContainsFunc(removed, func(p string) bool { return strings.HasPrefix(p, "/"+unitDir) }) {
		if err := daemonReload(root); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// daemonReload tells systemd about changed units, on the live root only.
func daemonReload(root string) error {
	if filepath.Clean(root) != hostRoot {
		return nil
	}
	if _, err := (Systemctl{}).run("daemon-reload"); err != nil {
		return fmt.Errorf("units written, but %w", err)
	}
	return nil
}

// writer writes files and links under a root, remembering the first error.
type writer struct {
	root    string
	written []string
	err     error
}

func (w *writer) file(rel, content string) {
	if w.err != nil {
		return
	}
	p := filepath.Join(w.root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.err = err
		return
	}
	tmp := p + ".linerate-tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		w.err = err
		return
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		w.err = err
		return
	}
	w.written = append(w.written, "/"+rel)
}

// plan writes a plan file of items, if there are any.
func (w *writer) plan(rel string, items []Item) {
	if len(items) == 0 || w.err != nil {
		return
	}
	var b bytes.Buffer
	if w.err = WritePlanFile(&b, PlanFile{Items: items}); w.err == nil {
		w.file(rel, b.String())
	}
}

// script writes an executable file.
func (w *writer) script(rel, content string) {
	w.file(rel, content)
	if w.err == nil {
		w.err = os.Chmod(filepath.Join(w.root, filepath.FromSlash(rel)), 0o755)
	}
}

func (w *writer) link(rel, target string) {
	if w.err != nil {
		return
	}
	p := filepath.Join(w.root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.err = err
		return
	}
	os.Remove(p)
	if err := os.Symlink(target, p); err != nil {
		w.err = err
		return
	}
	w.written = append(w.written, "/"+rel+" -> "+target)
}

// unitEscape escapes a name for a systemd unit name as systemd-escape
// does: bytes other than ASCII letters, digits, ':', '_' and '.' (and a
// leading '.') become \xNN; '/' would become '-' (systemd.unit(5),
// "String Escaping for Inclusion in Unit Names").
func unitEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '/':
			b.WriteByte('-')
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == ':', c == '_',
			c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	return b.String()
}
