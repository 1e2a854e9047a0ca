package tune

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"linerate/diagnose"
)

// Where the openwrt target writes. /etc/init.d/linerate-tune is a procd
// init script (what `/etc/init.d/linerate-tune enable` links as
// /etc/rc.d/S99linerate-tune); procd's hotplug-call sources the scripts of
// /etc/hotplug.d/SUBSYSTEM/ with the event in its environment: net with
// ACTION=add and INTERFACE (and DEVICENAME) when a device appears, iface
// with ACTION=ifup and DEVICE when netifd brings a logical interface up.
const (
	openwrtInit    = "etc/init.d/linerate-tune"
	openwrtRcLink  = "etc/rc.d/S99linerate-tune"
	openwrtNetHook = "etc/hotplug.d/net/90-linerate-tune"
	openwrtIfHook  = "etc/hotplug.d/iface/90-linerate-tune"
	openwrtNetwork = "etc/config/network"
)

var openwrtFiles = []string{openwrtInit, openwrtRcLink, openwrtNetHook, openwrtIfHook}

// PacketSteeringOff is the command that turns OpenWrt's packet steering
// off.
const PacketSteeringOff = "uci set network.globals.packet_steering=0 && uci commit network"

// writeOpenWrt writes the init script, its rc.d link and the hotplug
// scripts, and names OpenWrt's packet steering when it would undo the
// persisted RPS/XPS items.
func (res *PersistResult) writeOpenWrt(w *writer, opt PersistOptions) {
	reapply := reapplyCmd(opt, planPath)
	if len(res.Items) > 0 {
		w.script(openwrtInit, fmt.Sprintf(`#!/bin/sh /etc/rc.common
%s
# Re-applies the persisted tuning once at boot, after the network (which starts at 20).
START=99
USE_PROCD=1

start_service() {
	procd_open_instance linerate-tune
	procd_set_param command %s
	procd_set_param stdout 1
	procd_set_param stderr 1
	procd_close_instance
}
`, persistMark, reapply))
		w.link(openwrtRcLink, "../init.d/linerate-tune")
		// Sourced by hotplug-call: no exit, which would end the caller.
		w.script(openwrtNetHook, fmt.Sprintf(`#!/bin/sh
%s
# A network device appeared (boot, driver reload, USB replug): put its
# persisted settings back.
if [ "$ACTION" = add ] && [ -n "${INTERFACE:-$DEVICENAME}" ]; then
	%s "${INTERFACE:-$DEVICENAME}"
fi
`, persistMark, reapply))
		w.script(openwrtIfHook, fmt.Sprintf(`#!/bin/sh
%s
# netifd brought an interface up: drivers that reset on link up lose
# rings, coalescing and channels; put them back.
if [ "$ACTION" = ifup ] && [ -n "$DEVICE" ]; then
	%s "$DEVICE"
fi
`, persistMark, reapply))
	}
	if steering := packetSteering(w.root); steering != "" && steers(res.Items) {
		res.Conflicts = append(res.Conflicts, fmt.Sprintf(
			"network.globals.packet_steering=%s in /%s: OpenWrt's packet steering rewrites every interface's rps_cpus and xps_cpus when the network (re)starts, undoing the persisted rps/xps items; turn it off: %s",
			steering, openwrtNetwork, PacketSteeringOff))
	}
}

// steers reports whether items set RPS or XPS masks.
func steers(items []Item) bool {
	for _, it := range items {
		switch it.Kind {
		case diagnose.FixRPS, diagnose.FixXPS:
			return true
		}
	}
	return false
}

// packetSteering reads network.globals.packet_steering from the root's
// /etc/config/network; "" when unset or "0" (off). A UCI file is a list
// of `config TYPE ['NAME']` sections of `option KEY 'VALUE'` lines
// (openwrt.org/docs/guide-user/base-system/uci); one option of one
// section does not earn a UCI library.
func packetSteering(root string) string {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(openwrtNetwork)))
	if err != nil {
		return ""
	}
	section, value := "", ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch {
		case f[0] == "config" && len(f) >= 2:
			section = uciUnquote(f[1])
		case f[0] == "option" && len(f) >= 3 && section == "globals" && uciUnquote(f[1]) == "packet_steering":
			value = uciUnquote(f[2])
		}
	}
	if value == "0" {
		return ""
	}
	return value
}

func uciUnquote(s string) string { return strings.Trim(s, `'"`) }
