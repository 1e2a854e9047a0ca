package tune

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"linerate/diagnose"
	"linerate/internal/usage"
	"linerate/source/ethtool"
)

// The kinds changed through ethtool (coalesce, rings, channels, rss-equal,
// rss-table, flow-hash, feature) and through netlink (mtu).

func init() {
	builders[diagnose.FixCoalesce] = buildCoalesce
	builders[diagnose.FixRings] = buildRings
	builders[diagnose.FixChannels] = buildChannels
	builders[diagnose.FixRSSEqual] = buildRSSEqual
	builders[diagnose.FixRSSTable] = buildRSSTable
	builders[diagnose.FixFlowHash] = buildFlowHash
	builders[diagnose.FixFeature] = buildFeature
	builders[diagnose.FixMTU] = buildMTU
}

// nicAction is a change made through ethtool or netlink: set makes it,
// check reads the interface and says whether it holds the new value.
type nicAction struct {
	sys   System
	c     Change
	set   func() error
	check func() (bool, error)
	// said is what Apply found worth reporting (Said).
	said string
}

// Said is what the driver kept instead of the value asked, if anything.
func (a *nicAction) Said() string { return a.said }

func (a *nicAction) Describe() Change { return a.c }

func (a *nicAction) Apply(ctx context.Context) (Undo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ok, err := a.check()
	if err != nil {
		return nil, err
	}
	if ok {
		return noUndo, nil
	}
	undo := undoWith(a.sys, *a.c.Restore)
	if err := a.set(); err != nil {
		return undo, err
	}
	ok, err = a.check()
	if err != nil {
		return undo, fmt.Errorf("read back: %w", err)
	}
	if !ok {
		cur := "?"
		if acts, err := Build(a.sys, a.c.Item()); err == nil && len(acts) == 1 {
			cur = acts[0].Describe().From
		}
		if roundingKinds[a.c.Kind] && cur != "?" && cur != a.c.From {
			// The driver took the call and kept a value of its own
			// near the one asked: that is the new value, said as such.
			a.said = keptNote(a.c.Target, a.c.To, cur)
			a.c.To = cur
			return undo, nil
		}
		return undo, fmt.Errorf("%s %s reads %s after setting %s", a.c.Kind, a.c.Target, cur, a.c.To)
	}
	return undo, nil
}

// ethtoolOf returns the system's ethtool after checking the interface.
func ethtoolOf(sys System, iface string) (Ethtool, error) {
	if err := checkIface(sys, iface); err != nil {
		return nil, err
	}
	return sys.Ethtool()
}

// unsupported turns a driver's "not supported" into bad input naming the
// driver, and passes other errors on.
func unsupported(et Ethtool, iface, what string, err error) error {
	if errors.Is(err, ethtool.ErrNotSupported) {
		drv := "this driver"
		if d, derr := et.DriverInfo(iface); derr == nil && d.Driver != "" {
			drv = "driver " + d.Driver
		}
		return usage.Errorf("%s: %s not supported by %s", iface, what, drv)
	}
	if errors.Is(err, ethtool.ErrNoInterface) {
		return usage.Errorf("no interface %s", iface)
	}
	return err
}

// keyValues parses "a=1,b=2" keeping order; keys must be in allowed.
func keyValues(v string, allowed []string) ([][2]string, error) {
	var out [][2]string
	seen := map[string]bool{}
	for part := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" || val == "" {
			return nil, usage.Errorf("value %q: want KEY=VALUE[,KEY=VALUE...]", v)
		}
		if !slices.Contains(allowed, k) {
			return nil, usage.Errorf("value %q: unknown key %q (keys: %s)", v, k, strings.Join(allowed, ", "))
		}
		if seen[k] {
			return nil, usage.Errorf("value %q: %s given twice", v, k)
		}
		seen[k] = true
		out = append(out, [2]string{k, val})
	}
	return out, nil
}

func joinKV(kv [][2]string) string {
	parts := make([]string, len(kv))
	for i, p := range kv {
		parts[i] = p[0] + "=" + p[1]
	}
	return strings.Join(parts, ",")
}

func parseU32(key, v string) (uint32, error) {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, usage.Errorf("%s=%s: want a number", key, v)
	}
	return uint32(n), nil
}

func parseOnOff(key, v string) (bool, error) {
	switch v {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, usage.Errorf("%s=%s: want on or off", key, v)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// coalesce: ethtool -C. Keys are ethtool's parameter names plus
// adaptive-rx and adaptive-tx.
func buildCoalesce(sys System, it Item) ([]Action, error) {
	iface := it.Target
	et, err := ethtoolOf(sys, iface)
	if err != nil {
		return nil, err
	}
	keys := append([]string{"adaptive-rx", "adaptive-tx"}, ethtool.CoalesceParams...)
	kv, err := keyValues(it.Value, keys)
	if err != nil {
		return nil, err
	}
	cur, err := et.Coalesce(iface)
	if err != nil {
		return nil, unsupported(et, iface, "interrupt coalescing", err)
	}
	want := ethtool.Coalesce{AdaptiveRX: cur.AdaptiveRX, AdaptiveTX: cur.AdaptiveTX, Params: map[string]uint32{}}
	var from [][2]string
	for _, p := range kv {
		switch p[0] {
		case "adaptive-rx", "adaptive-tx":
			on, err := parseOnOff(p[0], p[1])
			if err != nil {
				return nil, err
			}
			if p[0] == "adaptive-rx" {
				want.AdaptiveRX = on
				from = append(from, [2]string{p[0], onOff(cur.AdaptiveRX)})
			} else {
				want.AdaptiveTX = on
				from = append(from, [2]string{p[0], onOff(cur.AdaptiveTX)})
			}
		default:
			n, err := parseU32(p[0], p[1])
			if err != nil {
				return nil, err
			}
			want.Params[p[0]] = n
			from = append(from, [2]string{p[0], strconv.FormatUint(uint64(cur.Params[p[0]]), 10)})
		}
	}
	holds := func(c ethtool.Coalesce) bool {
		if c.AdaptiveRX != want.AdaptiveRX || c.AdaptiveTX != want.AdaptiveTX {
			return false
		}
		for k, v := range want.Params {
			if c.Params[k] != v {
				return false
			}
		}
		return true
	}
	c := Change{Kind: it.Kind, Target: iface, From: joinKV(from), To: joinKV(kv), Note: it.Note, Unchanged: holds(cur)}
	c.Restore = &Item{Kind: it.Kind, Target: iface, Value: c.From}
	return []Action{&nicAction{sys: sys, c: c,
		set: func() error { return et.SetCoalesce(iface, want) },
		check: func() (bool, error) {
			now, err := et.Coalesce(iface)
			return err == nil && holds(now), err
		}}}, nil
}

// rings: ethtool -G, keys rx, rx-mini, rx-jumbo, tx; a value may be "max".
// Resizing rings restarts the NIC on most drivers: the link goes down.
func buildRings(sys System, it Item) ([]Action, error) {
	iface := it.Target
	et, err := ethtoolOf(sys, iface)
	if err != nil {
		return nil, err
	}
	kv, err := keyValues(it.Value, []string{"rx", "rx-mini", "rx-jumbo", "tx"})
	if err != nil {
		return nil, err
	}
	cur, err := et.Rings(iface)
	if err != nil {
		return nil, unsupported(et, iface, "ring sizes", err)
	}
	want := cur
	from, to, err := setCounts(kv, map[string]countField{
		"rx":       {&want.RX, cur.RX, cur.RXMax},
		"rx-mini":  {&want.RXMini, cur.RXMini, cur.RXMiniMax},
		"rx-jumbo": {&want.RXJumbo, cur.RXJumbo, cur.RXJumboMax},
		"tx":       {&want.TX, cur.TX, cur.TXMax},
	}, func(k, v string, maxV uint32) error {
		return usage.Errorf("%s=%s: the %s %s ring takes 1 to %d", k, v, iface, k, maxV)
	}, false)
	if err != nil {
		return nil, err
	}
	holds := func(r ethtool.Rings) bool {
		return r.RX == want.RX && r.TX == want.TX && r.RXMini == want.RXMini && r.RXJumbo == want.RXJumbo
	}
	c := Change{Kind: it.Kind, Target: iface, From: joinKV(from), To: joinKV(to), Note: it.Note,
		Unchanged: holds(cur), ResetsLink: true}
	c.Restore = &Item{Kind: it.Kind, Target: iface, Value: c.From}
	return []Action{&nicAction{sys: sys, c: c,
		set: func() error { return et.SetRings(iface, want) },
		check: func() (bool, error) {
			now, err := et.Rings(iface)
			return err == nil && holds(now), err
		}}}, nil
}

// channels: ethtool -L, keys rx, tx, other, combined. The restore item
// names all four counts, so it puts back exactly what was there. Changing
// channels reallocates the queues: the link goes down on most drivers.
func buildChannels(sys System, it Item) ([]Action, error) {
	iface := it.Target
	et, err := ethtoolOf(sys, iface)
	if err != nil {
		return nil, err
	}
	kv, err := keyValues(it.Value, []string{"rx", "tx", "other", "combined"})
	if err != nil {
		return nil, err
	}
	cur, err := et.Channels(iface)
	if err != nil {
		return nil, unsupported(et, iface, "channels", err)
	}
	want := cur
	from, to, err := setCounts(kv, map[string]countField{
		"rx":       {&want.RX, cur.RX, cur.MaxRX},
		"tx":       {&want.TX, cur.TX, cur.MaxTX},
		"other":    {&want.Other, cur.Other, cur.MaxOther},
		"combined": {&want.Combined, cur.Combined, cur.MaxCombined},
	}, func(k, v string, maxV uint32) error {
		if maxV == 0 {
			return usage.Errorf("%s=%s: %s has no %s channels", k, v, iface, k)
		}
		return usage.Errorf("%s=%s: %s takes at most %d", k, v, iface, maxV)
	}, true)
	if err != nil {
		return nil, err
	}
	if want.RX+want.Combined == 0 {
		return nil, usage.Errorf("value %q: %s would have no receive queue", it.Value, iface)
	}
	holds := func(ch ethtool.Channels) bool {
		return ch.RX == want.RX && ch.TX == want.TX && ch.Other == want.Other && ch.Combined == want.Combined
	}
	c := Change{Kind: it.Kind, Target: iface, From: joinKV(from), To: joinKV(to), Note: it.Note,
		Unchanged: holds(cur), ResetsLink: true}
	all := fmt.Sprintf("rx=%d,tx=%d,other=%d,combined=%d", cur.RX, cur.TX, cur.Other, cur.Combined)
	c.Restore = &Item{Kind: it.Kind, Target: iface, Value: all}
	return []Action{&nicAction{sys: sys, c: c,
		set: func() error { return et.SetChannels(iface, want) },
		check: func() (bool, error) {
			now, err := et.Channels(iface)
			return err == nil && holds(now), err
		}}}, nil
}

// countField is one count an ethtool -G or -L item sets: where the new
// value goes, the current value and the driver's maximum.
type countField struct {
	dst      *uint32
	cur, max uint32
}

// setCounts applies "key=value" pairs (a value may be "max") to their
// fields and returns the pairs before and after. tooBig words the error for
// a value over the maximum (or zero, unless zeroOK).
func setCounts(kv [][2]string, fields map[string]countField, tooBig func(k, v string, maxV uint32) error, zeroOK bool) (from, to [][2]string, err error) {
	for _, p := range kv {
		f := fields[p[0]]
		n := f.max
		if p[1] != "max" {
			if n, err = parseU32(p[0], p[1]); err != nil {
				return nil, nil, err
			}
		}
		if n > f.max || (n == 0 && !zeroOK) {
			return nil, nil, tooBig(p[0], p[1], f.max)
		}
		*f.dst = n
		from = append(from, [2]string{p[0], strconv.FormatUint(uint64(f.cur), 10)})
		to = append(to, [2]string{p[0], strconv.FormatUint(uint64(n), 10)})
	}
	return from, to, nil
}

// rssTable reads the device's indirection table.
func rssTable(sys System, it Item) (Ethtool, ethtool.RSS, error) {
	et, err := ethtoolOf(sys, it.Target)
	if err != nil {
		return nil, ethtool.RSS{}, err
	}
	rss, err := et.RSS(it.Target)
	if err == nil && len(rss.Indirection) == 0 {
		err = fmt.Errorf("no indirection table: %w", ethtool.ErrNotSupported)
	}
	if err != nil {
		return nil, rss, unsupported(et, it.Target, "RSS indirection table", err)
	}
	return et, rss, nil
}

func tableString(t []uint32) string {
	parts := make([]string, len(t))
	for i, q := range t {
		parts[i] = strconv.FormatUint(uint64(q), 10)
	}
	return strings.Join(parts, ",")
}

// describeTable says how a table spreads buckets: "equal 4" when it is
// what `ethtool -X equal 4` writes, else the share of each queue.
func describeTable(t []uint32) string {
	for n := 1; n <= len(t); n++ {
		if slices.Equal(t, ethtool.EqualTable(len(t), n)) {
			return "equal " + strconv.Itoa(n)
		}
	}
	share := ethtool.RSS{Indirection: t}.QueueShare()
	parts := make([]string, len(share))
	for i, s := range share {
		parts[i] = strconv.Itoa(s)
	}
	return "custom, buckets per queue " + strings.Join(parts, "/")
}

func rssAction(sys System, et Ethtool, it Item, cur, want []uint32, to string) Action {
	iface := it.Target
	c := Change{Kind: it.Kind, Target: iface, From: describeTable(cur), To: to, Note: it.Note,
		Unchanged: slices.Equal(cur, want)}
	c.Restore = &Item{Kind: diagnose.FixRSSTable, Target: iface, Value: tableString(cur)}
	return &nicAction{sys: sys, c: c,
		set: func() error { return et.SetIndirection(iface, want) },
		check: func() (bool, error) {
			now, err := et.RSS(iface)
			return err == nil && slices.Equal(now.Indirection, want), err
		}}
}

// rss-equal: ethtool -X IFACE equal N.
func buildRSSEqual(sys System, it Item) ([]Action, error) {
	n, err := strconv.Atoi(it.Value)
	if err != nil || n < 1 {
		return nil, usage.Errorf("value %q: want a number of queues, 1 or more", it.Value)
	}
	et, rss, err := rssTable(sys, it)
	if err != nil {
		return nil, err
	}
	if n > rss.RXRings {
		return nil, usage.Errorf("value %d: %s has %d rx rings", n, it.Target, rss.RXRings)
	}
	want := ethtool.EqualTable(len(rss.Indirection), n)
	a := rssAction(sys, et, it, rss.Indirection, want, it.Value)
	return []Action{a}, nil
}

// rss-table: a whole indirection table, one queue per bucket, as the
// journal restores it.
func buildRSSTable(sys System, it Item) ([]Action, error) {
	var want []uint32
	for f := range strings.SplitSeq(it.Value, ",") {
		q, err := strconv.ParseUint(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return nil, usage.Errorf("value: %q is not a queue number", f)
		}
		want = append(want, uint32(q))
	}
	et, rss, err := rssTable(sys, it)
	if err != nil {
		return nil, err
	}
	if len(want) != len(rss.Indirection) {
		return nil, usage.Errorf("value has %d buckets, %s's table has %d", len(want), it.Target, len(rss.Indirection))
	}
	for i, q := range want {
		if int(q) >= rss.RXRings {
			return nil, usage.Errorf("bucket %d names queue %d, %s has %d rx rings", i, q, it.Target, rss.RXRings)
		}
	}
	return []Action{rssAction(sys, et, it, rss.Indirection, want, tableString(want))}, nil
}

// flow-hash: ethtool -N IFACE rx-flow-hash FLOW LETTERS.
func buildFlowHash(sys System, it Item) ([]Action, error) {
	iface, flow, ok := strings.Cut(it.Target, "/")
	ft := ethtool.FlowType(flow)
	if !ok || !slices.Contains(ethtool.FlowTypes, ft) {
		return nil, usage.Errorf("target %q: want IFACE/tcp4, /udp4, /tcp6 or /udp6", it.Target)
	}
	want, err := ethtool.ParseFlowHashLetters(it.Value)
	if err != nil || want == 0 {
		return nil, usage.Errorf("value %q: want rx-flow-hash letters such as sdfn", it.Value)
	}
	et, err := ethtoolOf(sys, iface)
	if err != nil {
		return nil, err
	}
	cur, err := et.FlowHash(iface, ft)
	if err != nil {
		return nil, unsupported(et, iface, "rx-flow-hash "+flow, err)
	}
	c := Change{Kind: it.Kind, Target: it.Target, From: cur.Letters(), To: want.Letters(), Note: it.Note,
		Unchanged: cur == want}
	c.Restore = &Item{Kind: it.Kind, Target: it.Target, Value: cur.Letters()}
	return []Action{&nicAction{sys: sys, c: c,
		set: func() error { return et.SetFlowHash(iface, ft, want) },
		check: func() (bool, error) {
			now, err := et.FlowHash(iface, ft)
			return err == nil && now == want, err
		}}}, nil
}

// featureView indexes `ethtool -k` lines: groups (lines other lines name
// as their parent) and the features under each.
type featureView struct {
	byName  map[string]ethtool.Feature
	members map[string][]ethtool.Feature
}

func viewFeatures(fs ethtool.Features) featureView {
	v := featureView{byName: map[string]ethtool.Feature{}, members: map[string][]ethtool.Feature{}}
	for _, f := range fs {
		v.byName[f.Name] = f
		if f.Parent != "" {
			v.members[f.Parent] = append(v.members[f.Parent], f)
		}
	}
	return v
}

// holds reports whether the feature (or every changeable feature of the
// group) is in state on.
func (v featureView) holds(name string, on bool) bool {
	if ms, ok := v.members[name]; ok {
		for _, m := range ms {
			if !m.Fixed && m.On != on {
				return false
			}
		}
		return true
	}
	f, ok := v.byName[name]
	return ok && f.On == on
}

// snapshot is every changeable single feature whose requested state is
// the active one, as NAME=on|off: setting it again puts the interface's
// offloads back as they were, including features that a change of
// another one switched as a dependency.
func (v featureView) snapshot(fs ethtool.Features) string {
	var parts []string
	for _, f := range fs {
		if _, group := v.members[f.Name]; group || f.Fixed || f.Requested != "" {
			continue
		}
		parts = append(parts, f.Name+"="+onOff(f.On))
	}
	return strings.Join(parts, ",")
}

// feature: ethtool -K. Target IFACE/NAME with value on|off, or IFACE with
// value NAME=on,NAME=off; names as `ethtool -k` prints them.
func buildFeature(sys System, it Item) ([]Action, error) {
	iface, name, single := strings.Cut(it.Target, "/")
	want := map[string]bool{}
	var order []string
	if single {
		on, err := parseOnOff(name, it.Value)
		if err != nil {
			return nil, err
		}
		want[name], order = on, []string{name}
	} else {
		for part := range strings.SplitSeq(it.Value, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok {
				return nil, usage.Errorf("value %q: want on/off for IFACE/FEATURE, or FEATURE=on,FEATURE=off for IFACE", it.Value)
			}
			on, err := parseOnOff(k, v)
			if err != nil {
				return nil, err
			}
			if _, dup := want[k]; dup {
				return nil, usage.Errorf("value %q: %s given twice", it.Value, k)
			}
			want[k] = on
			order = append(order, k)
		}
	}
	et, err := ethtoolOf(sys, iface)
	if err != nil {
		return nil, err
	}
	fs, err := et.Features(iface)
	if err != nil {
		return nil, unsupported(et, iface, "offload features", err)
	}
	v := viewFeatures(fs)
	var from []string
	unchanged := true
	for _, n := range order {
		f, ok := v.byName[n]
		if !ok {
			return nil, usage.Errorf("%s has no feature %q (names as `ethtool -k %s` prints them)", iface, n, iface)
		}
		if f.Fixed && f.On != want[n] {
			return nil, usage.Errorf("%s: feature %s is fixed %s by driver", iface, n, onOff(f.On))
		}
		if !v.holds(n, want[n]) {
			unchanged = false
		}
		if single {
			from = append(from, onOff(f.On))
		} else {
			from = append(from, n+"="+onOff(f.On))
		}
	}
	c := Change{Kind: it.Kind, Target: it.Target, From: strings.Join(from, ","), To: it.Value, Note: it.Note,
		Unchanged: unchanged}
	c.Restore = &Item{Kind: it.Kind, Target: iface, Value: v.snapshot(fs)}
	if c.Restore.Value == "" {
		return nil, usage.Errorf("%s: no feature can change", iface)
	}
	sort.Strings(order)
	return []Action{&nicAction{sys: sys, c: c,
		set: func() error { return et.SetFeatures(iface, want) },
		check: func() (bool, error) {
			now, err := et.Features(iface)
			if err != nil {
				return false, err
			}
			nv := viewFeatures(now)
			for _, n := range order {
				if !nv.holds(n, want[n]) {
					return false, nil
				}
			}
			return true, nil
		}}}, nil
}

// mtu: netlink RTM_SETLINK. Physical NICs usually reallocate their
// buffers for a new MTU and drop the link meanwhile; virtual ones do not.
func buildMTU(sys System, it Item) ([]Action, error) {
	iface := it.Target
	mtu, err := strconv.Atoi(it.Value)
	if err != nil || mtu <= 0 {
		return nil, usage.Errorf("value %q: want an MTU in bytes, e.g. 9000", it.Value)
	}
	if err := checkIface(sys, iface); err != nil {
		return nil, err
	}
	links, err := sys.Links()
	if err != nil {
		return nil, err
	}
	cur, err := links.Link(iface)
	if err != nil {
		return nil, err
	}
	if cur.MinMTU > 0 && mtu < cur.MinMTU || cur.MaxMTU > 0 && mtu > cur.MaxMTU {
		return nil, usage.Errorf("value %d: %s takes an MTU from %d to %d", mtu, iface, cur.MinMTU, cur.MaxMTU)
	}
	_, derr := sys.ReadDir("sys/class/net/" + iface + "/device")
	physical := derr == nil
	c := Change{Kind: it.Kind, Target: iface, From: strconv.Itoa(cur.MTU), To: strconv.Itoa(mtu), Note: it.Note,
		Unchanged: cur.MTU == mtu, ResetsLink: physical}
	if physical {
		c.Note = joinNote(c.Note, "most NIC drivers restart the link for a new MTU")
	}
	c.Restore = &Item{Kind: it.Kind, Target: iface, Value: c.From}
	return []Action{&nicAction{sys: sys, c: c,
		set: func() error { return links.SetMTU(iface, mtu) },
		check: func() (bool, error) {
			now, err := links.Link(iface)
			return err == nil && now.MTU == mtu, err
		}}}, nil
}
