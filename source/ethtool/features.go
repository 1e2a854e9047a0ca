package ethtool

import (
	"fmt"
	"sort"
	"strings"
)

// legacyFlag is one of the offload switches ethtool had before the kernel
// named each feature. `ethtool -k` still lists them first, with the kernel
// features they cover, and `ethtool -K` accepts their long and short names.
// The table is ethtool's off_flag_def (ethtool.c, ethtool 6.1): a pattern
// with '*' matches any run of characters.
type legacyFlag struct {
	long, short, pattern string
}

var legacyFlags = []legacyFlag{
	{"rx-checksumming", "rx", "rx-checksum"},
	{"tx-checksumming", "tx", "tx-checksum-*"},
	{"scatter-gather", "sg", "tx-scatter-gather*"},
	{"tcp-segmentation-offload", "tso", "tx-tcp*-segmentation"},
	{"udp-fragmentation-offload", "ufo", "tx-udp-fragmentation"},
	{"generic-segmentation-offload", "gso", "tx-generic-segmentation"},
	{"generic-receive-offload", "gro", "rx-gro"},
	{"large-receive-offload", "lro", "rx-lro"},
	{"rx-vlan-offload", "rxvlan", "rx-vlan-hw-parse"},
	{"tx-vlan-offload", "txvlan", "tx-vlan-hw-insert"},
	{"ntuple-filters", "ntuple", "rx-ntuple-filter"},
	{"receive-hashing", "rxhash", "rx-hashing"},
}

// ufoFlag is skipped when listing: ethtool's netlink code never prints it
// because no kernel with the netlink interface has UDP fragmentation offload.
const ufoFlag = "udp-fragmentation-offload"

// patternMatch reports whether a kernel feature name matches a legacy
// pattern (at most one '*', matching any run of characters, even empty).
func patternMatch(name, pattern string) bool {
	i := strings.IndexByte(pattern, '*')
	if i < 0 {
		return name == pattern
	}
	prefix, suffix := pattern[:i], pattern[i+1:]
	return len(name) >= len(prefix)+len(suffix) &&
		strings.HasPrefix(name, prefix) && strings.HasSuffix(name, suffix)
}

// legacyOf returns, for each kernel feature, the index in legacyFlags of
// the first flag whose pattern it matches, or -1.
func legacyOf(names []string) []int {
	out := make([]int, len(names))
	for i, name := range names {
		out[i] = -1
		if name == "" {
			continue
		}
		for j, f := range legacyFlags {
			if patternMatch(name, f.pattern) {
				out[i] = j
				break
			}
		}
	}
	return out
}

func (s featureState) fixed() bool { return !s.available || s.neverChanged }

// one is the line of a single kernel feature under the given name.
func (s featureState) one(name, parent string) Feature {
	f := Feature{Name: name, On: s.active, Fixed: s.fixed(), Parent: parent}
	if !f.Fixed && s.requested != s.active {
		f.Requested = onOff(s.requested)
	}
	return f
}

// arrangeFeatures lists kernel features the way `ethtool -k` prints them:
// each legacy flag first (under its long name when it covers one feature,
// else as a group line followed by its features, indented), then every
// remaining feature in kernel order. names and states are indexed by
// kernel feature bit.
func arrangeFeatures(names []string, states []featureState) Features {
	legacy := legacyOf(names)
	var out Features
	for j, flag := range legacyFlags {
		if flag.long == ufoFlag {
			continue
		}
		var members []int
		for i, l := range legacy {
			if l == j {
				members = append(members, i)
			}
		}
		if len(members) == 1 {
			out = append(out, states[members[0]].one(flag.long, ""))
			continue
		}
		group := Feature{Name: flag.long}
		if len(members) > 0 {
			group.Fixed = true
		}
		for _, i := range members {
			group.On = group.On || states[i].active
			group.Fixed = group.Fixed && states[i].fixed()
		}
		out = append(out, group)
		for _, i := range members {
			out = append(out, states[i].one(names[i], flag.long))
		}
	}
	for i, name := range names {
		if name != "" && legacy[i] < 0 {
			out = append(out, states[i].one(name, ""))
		}
	}
	return out
}

// featureChange is what SFEATURES needs: for each kernel feature bit to
// change, its wanted value.
type featureChange map[int]bool

// resolveFeatures turns names as `ethtool -K` accepts them (kernel names,
// legacy long names, legacy short names) into kernel feature bits. A legacy
// name covers every feature of its group that the driver lets change. It
// fails before anything changes: on an unknown name, on a fixed feature
// asked to change, or on a feature asked both on and off.
func resolveFeatures(iface string, names []string, states []featureState, want map[string]bool) (featureChange, error) {
	index := make(map[string]int, len(names))
	for i, n := range names {
		if n != "" {
			index[n] = i
		}
	}
	change := featureChange{}
	asked := map[int]bool{}
	add := func(i int, on bool, via string) error {
		if prev, ok := asked[i]; ok && prev != on {
			return fmt.Errorf("%s: feature %s asked both on and off (via %s)", iface, names[i], via)
		}
		asked[i] = on
		if states[i].active != on {
			change[i] = on
		}
		return nil
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, name := range keys {
		on := want[name]
		if i, ok := index[name]; ok {
			if states[i].fixed() && states[i].active == on {
				continue
			}
			if states[i].fixed() {
				return nil, fmt.Errorf("%s: feature %s is fixed %s: %w", iface, name, onOff(states[i].active), ErrNotSupported)
			}
			if err := add(i, on, name); err != nil {
				return nil, err
			}
			continue
		}
		flag, ok := legacyByName(name)
		if !ok {
			return nil, fmt.Errorf("%s: unknown feature %q (names as `ethtool -k` prints them)", iface, name)
		}
		var changeable, differ int
		for i, n := range names {
			if n == "" || !patternMatch(n, flag.pattern) {
				continue
			}
			if states[i].fixed() {
				if states[i].active != on {
					differ++
				}
				continue
			}
			changeable++
			if err := add(i, on, name); err != nil {
				return nil, err
			}
		}
		if changeable == 0 && differ > 0 {
			return nil, fmt.Errorf("%s: feature %s is fixed %s: %w", iface, name, onOff(!on), ErrNotSupported)
		}
		if changeable == 0 && differ == 0 && !anyMatch(names, flag.pattern) {
			return nil, fmt.Errorf("%s: feature %s: %w", iface, name, ErrNotSupported)
		}
	}
	return change, nil
}

func legacyByName(name string) (legacyFlag, bool) {
	for _, f := range legacyFlags {
		if f.long == name || f.short == name {
			return f, true
		}
	}
	return legacyFlag{}, false
}

func anyMatch(names []string, pattern string) bool {
	for _, n := range names {
		if n != "" && patternMatch(n, pattern) {
			return true
		}
	}
	return false
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
