package tune

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"linerate/diagnose"
)

// The tuned target writes a profile directory: tuned.conf holds what
// tuned's own plugins do (sysctl; net for coalescing, rings, channels,
// features and MTU), and its [script] unit runs linerate.sh, which applies
// the rest (RPS/XPS masks, IRQs by name, RSS, flow hashing, governors)
// from the profile's own plan file. `tuned-adm profile linerate` makes it
// the active profile; linerate does not switch profiles for the user.
const (
	tunedDir    = "etc/tuned/linerate"
	tunedConf   = tunedDir + "/tuned.conf"
	tunedScript = tunedDir + "/linerate.sh"
	tunedPlan   = tunedDir + "/linerate-plan.json"
)

var tunedFiles = []string{tunedConf, tunedScript, tunedPlan}

// The option names of tuned 2.20's net plugin (tuned/plugins/plugin_net.py:
// _get_config_options and _get_config_options_coalesce, _ring, _channels),
// and the linerate kind each stands for. Its values are "PARAM VALUE PARAM
// VALUE ...", passed to ethtool -C, -G, -L and -K.
var tunedNet = []struct {
	option string
	kind   diagnose.FixKind
	params []string // nil: any (features take ethtool -K's names)
}{
	{"coalesce", diagnose.FixCoalesce, []string{"adaptive-rx", "adaptive-tx", "rx-usecs", "rx-frames", "rx-usecs-irq",
		"rx-frames-irq", "tx-usecs", "tx-frames", "tx-usecs-irq", "tx-frames-irq", "stats-block-usecs", "pkt-rate-low",
		"rx-usecs-low", "rx-frames-low", "tx-usecs-low", "tx-frames-low", "pkt-rate-high", "rx-usecs-high",
		"rx-frames-high", "tx-usecs-high", "tx-frames-high", "sample-interval"}},
	{"ring", diagnose.FixRings, []string{"rx", "rx-mini", "rx-jumbo", "tx"}},
	{"channels", diagnose.FixChannels, []string{"rx", "tx", "other", "combined"}},
	{"features", diagnose.FixFeature, nil},
	{"mtu", diagnose.FixMTU, nil},
	{"txqueuelen", diagnose.FixTxQueueLen, nil},
}

// tunedPairs turns an item into PARAM VALUE pairs of the net plugin's
// option, false when tuned's option cannot say it (a parameter tuned does
// not know, "max", which tuned does not resolve).
func tunedPairs(it Item) (option string, pairs []string, ok bool) {
	for _, n := range tunedNet {
		if n.kind != it.Kind {
			continue
		}
		switch it.Kind {
		case diagnose.FixMTU, diagnose.FixTxQueueLen:
			return n.option, []string{it.Value}, true
		case diagnose.FixFeature:
			if _, name, one := strings.Cut(it.Target, "/"); one {
				return n.option, []string{name, it.Value}, true
			}
		}
		for _, kv := range strings.Split(it.Value, ",") {
			k, v, found := strings.Cut(kv, "=")
			if !found || v == "max" || n.params != nil && !slices.Contains(n.params, k) {
				return "", nil, false
			}
			pairs = append(pairs, k, v)
		}
		return n.option, pairs, true
	}
	return "", nil, false
}

// writeTuned writes the profile directory.
func (res *PersistResult) writeTuned(w *writer, opt PersistOptions) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n[main]\nsummary=linerate: network tuning applied with linerate tune\n", persistMark)
	if len(res.Sysctls) > 0 {
		b.WriteString("\n[sysctl]\n")
		for _, l := range res.Sysctls {
			k, v, _ := strings.Cut(l, " = ")
			fmt.Fprintf(&b, "%s=%s\n", k, v)
		}
	}
	net := map[string]map[string][]string{} // iface → option → pairs
	var ifaces, rest []Item
	for _, it := range res.Items {
		option, pairs, ok := tunedPairs(it)
		if !ok {
			rest = append(rest, it)
			continue
		}
		iface := ItemIface(it)
		if net[iface] == nil {
			net[iface] = map[string][]string{}
			ifaces = append(ifaces, it)
		}
		net[iface][option] = append(net[iface][option], pairs...)
	}
	for _, it := range ifaces {
		iface := ItemIface(it)
		// One unit per interface: a unit's options apply to all its devices.
		fmt.Fprintf(&b, "\n[net_%s]\ntype=net\ndevices=%s\n", iface, iface)
		for _, n := range tunedNet {
			if p := net[iface][n.option]; len(p) > 0 {
				fmt.Fprintf(&b, "%s=%s\n", n.option, strings.Join(p, " "))
			}
		}
	}
	if len(rest) > 0 {
		fmt.Fprintf(&b, "\n# What tuned's plugins have no option for (RPS/XPS masks, IRQs by name, RSS, ...).\n[script]\nscript=${i:PROFILE_DIR}/linerate.sh\n")
		w.plan(tunedPlan, rest)
		w.script(tunedScript, fmt.Sprintf(`#!/bin/sh
%s
# tuned runs this with "start" when the profile is applied and "stop" when
# it is unloaded. The values stay after stop: 'linerate tune rollback'
# restores them.
if [ "$1" = start ]; then
	%s
fi
exit 0
`, persistMark, reapplyCmd(opt, tunedPlan)))
	}
	w.file(tunedConf, b.String())
	res.Next = append(res.Next, "activate it: tuned-adm profile linerate (or add linerate to the active profiles: tuned-adm profile CURRENT linerate)")
}

// Persisted reads back the items a persistence target holds under root:
// the plan file and the sysctl.d file (systemd, openwrt), or the tuned
// profile (tuned.conf and its plan file). A target with nothing written
// gives no items and no error.
func Persisted(root, target string) ([]Item, error) {
	var items []Item
	read := func(rel string) ([]byte, bool, error) {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if os.IsNotExist(err) {
			return nil, false, nil
		}
		return b, err == nil, err
	}
	plan := func(rel string) error {
		b, ok, err := read(rel)
		if !ok {
			return err
		}
		pf, err := ReadPlanFile(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("/%s: %w", rel, err)
		}
		items = append(items, pf.Items...)
		return nil
	}
	switch target {
	case TargetSystemd, TargetOpenWrt:
		b, ok, err := read(sysctlDPath)
		if err != nil {
			return nil, err
		}
		if ok {
			items = append(items, sysctlLines(b, " = ")...)
		}
		return items, plan(planPath)
	case TargetTuned:
		b, ok, err := read(tunedConf)
		if !ok {
			return nil, err
		}
		items, err = parseTunedConf(b)
		if err != nil {
			return nil, fmt.Errorf("/%s: %w", tunedConf, err)
		}
		return items, plan(tunedPlan)
	}
	return nil, fmt.Errorf("no persistence target %q", target)
}

// sysctlLines reads "name SEP value" lines as sysctl items.
func sysctlLines(b []byte, sep string) []Item {
	var out []Item
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(l, sep); ok && !strings.HasPrefix(l, "#") {
			out = append(out, Item{Kind: diagnose.FixSysctl, Target: strings.TrimSpace(k), Value: strings.TrimSpace(v)})
		}
	}
	return out
}

// parseTunedConf reads the [sysctl] and net units of a tuned.conf as
// Persist writes it back into items.
func parseTunedConf(b []byte) ([]Item, error) {
	type unit struct {
		name string
		opts map[string]string
		keys []string
	}
	var units []*unit
	var cur *unit
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			cur = &unit{name: l[1 : len(l)-1], opts: map[string]string{}}
			units = append(units, cur)
		case cur != nil:
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return nil, fmt.Errorf("line %q: want KEY=VALUE", l)
			}
			k = strings.TrimSpace(k)
			cur.opts[k] = strings.TrimSpace(v)
			cur.keys = append(cur.keys, k)
		}
	}
	var items []Item
	for _, u := range units {
		typ := u.opts["type"]
		if typ == "" {
			typ = u.name
		}
		switch typ {
		case "sysctl":
			for _, k := range u.keys {
				items = append(items, Item{Kind: diagnose.FixSysctl, Target: k, Value: u.opts[k]})
			}
		case "net":
			iface := u.opts["devices"]
			if iface == "" || strings.ContainsAny(iface, ", *") {
				return nil, fmt.Errorf("[%s]: devices=%q: want one interface", u.name, iface)
			}
			for _, n := range tunedNet {
				v, ok := u.opts[n.option]
				if !ok {
					continue
				}
				if n.kind == diagnose.FixMTU || n.kind == diagnose.FixTxQueueLen {
					items = append(items, Item{Kind: n.kind, Target: iface, Value: v})
					continue
				}
				f := strings.Fields(v)
				if len(f)%2 != 0 {
					return nil, fmt.Errorf("[%s] %s=%q: want PARAM VALUE pairs", u.name, n.option, v)
				}
				var kv []string
				for i := 0; i < len(f); i += 2 {
					kv = append(kv, f[i]+"="+f[i+1])
				}
				if n.kind == diagnose.FixFeature {
					sort.Strings(kv)
				}
				items = append(items, Item{Kind: n.kind, Target: iface, Value: strings.Join(kv, ",")})
			}
		}
	}
	return items, nil
}
