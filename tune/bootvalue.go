package tune

import (
	"fmt"
	"slices"
	"strings"

	"linerate/internal/usage"
)

// The values of boot items land in files that other programs read, each
// with its own grammar: cmdline.txt is one line the firmware hands to the
// kernel, /etc/default/grub is sourced by sh (grub-mkconfig) and its value
// then pasted into grub.cfg, whose script language has its own quotes and
// separators, and config.txt is read line by line by the firmware, where
// a line can open a section or include a file. So a value is read by a
// grammar of its own before it is used: kernel parameters are
// name[=value] tokens of a charset none of those readers treats as
// special, and config.txt lines are KEY=INTEGER for a known set of keys.
// What falls outside is refused with the reason, never quoted or escaped:
// a value that needs quoting is not one linerate proposes.

// Bounds of a boot item's value: the kernel's command line is 2048 bytes
// on most architectures (COMMAND_LINE_SIZE), the whole line and not one
// item.
const (
	maxBootValue  = 1024
	maxBootParams = 32
)

// paramNameChars may appear in a kernel parameter's name (after a first
// lower-case letter), valueChars in its value: none is special to sh
// within double or single quotes or outside them, nor to GRUB's script
// language, nor a space or a line break.
const (
	paramNameChars  = "abcdefghijklmnopqrstuvwxyz0123456789_.-"
	paramValueChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:/+-=@%"
)

// refusedParams are kernel parameters a boot item may not set, by their
// names with dashes as underscores (the kernel takes either): what the box
// runs at boot (PID 1, the root it mounts, a shell in the initramfs or
// systemd, the runlevel words the kernel passes to init), and the switches
// of its protections (security modules, lockdown, module signatures, the
// CPU mitigations, the debuggers). They are set by hand or not at all.
var refusedParams = map[string]string{
	"init": "runs", "rdinit": "runs", "root": "mounts", "rootfstype": "mounts",
	"rootflags": "mounts", "nfsroot": "mounts", "nfsrootdebug": "mounts", "resume": "boots",
	"resume_offset": "boots", "boot": "runs", "break": "runs", "single": "runs",
	"s": "runs", "emergency": "runs", "rescue": "runs",
	"module_blacklist": "protects", "modprobe.blacklist": "protects",
	"selinux": "protects", "enforcing": "protects", "apparmor": "protects",
	"security": "protects", "lsm": "protects", "lockdown": "protects",
	"module.sig_enforce": "protects", "evm": "protects", "mitigations": "protects",
	"sysrq_always_enabled": "protects", "kdb": "protects",
}

// refusedPrefixes are families of parameters refused as refusedParams:
// systemd's (systemd.unit, systemd.run, systemd.debug_shell,
// systemd.setenv) and dracut's (rd.break, rd.shell), IMA's and kgdb's.
var refusedPrefixes = []struct{ prefix, what string }{
	{"systemd.", "runs"}, {"rd.", "runs"}, {"ima_", "protects"}, {"kgdb", "protects"}, {"ekgdb", "protects"},
}

// kernelParams reads a cmdline.txt or grub value: kernel parameters
// separated by spaces, each name[=value].
func kernelParams(value string) ([]string, error) {
	if len(value) > maxBootValue {
		return nil, usage.Errorf("%d bytes of kernel parameters: at most %d", len(value), maxBootValue)
	}
	for _, r := range value {
		if r != ' ' && (r < 0x21 || r > 0x7e) {
			return nil, usage.Errorf("value %q: a kernel parameter is printable ASCII separated by spaces (a tab, a line break or a control character is not one)", value)
		}
	}
	params := strings.Fields(value)
	switch {
	case len(params) == 0:
		return nil, usage.Errorf("no kernel parameter")
	case len(params) > maxBootParams:
		return nil, usage.Errorf("%d kernel parameters: at most %d", len(params), maxBootParams)
	}
	for _, p := range params {
		if err := checkParam(p); err != nil {
			return nil, err
		}
	}
	return params, nil
}

// checkParam checks one kernel parameter: name[=value].
func checkParam(p string) error {
	name, val, _ := strings.Cut(p, "=")
	switch {
	case name == "" || name[0] < 'a' || name[0] > 'z' || strings.Trim(name, paramNameChars) != "":
		return usage.Errorf("kernel parameter %q: its name must be lower-case letters, digits, '_', '.' or '-', starting with a letter", p)
	case strings.Trim(val, paramValueChars) != "":
		return usage.Errorf("kernel parameter %q: its value may hold letters, digits and _ . , : / + - = @ %% only (no quotes, spaces, $, ;, # or backslashes)", p)
	}
	key := strings.ReplaceAll(name, "-", "_")
	what := refusedParams[key]
	for _, r := range refusedPrefixes {
		if what == "" && strings.HasPrefix(key, r.prefix) {
			what = r.what
		}
	}
	if what == "" {
		return nil
	}
	why := map[string]string{
		"runs":     "it changes what the box runs at boot",
		"mounts":   "it changes the root the box boots from",
		"boots":    "it changes what the box boots",
		"protects": "it changes how the kernel protects the box",
	}[what]
	return usage.Errorf("kernel parameter %q is not set by linerate: %s; edit the file by hand if it is meant", p, why)
}

// configKeys are the config.txt keys a boot item may set: the clocks,
// voltages, turbo and thermal limits of a Raspberry Pi's firmware, each a
// whole number. The rest (kernel, initramfs, cmdline, include, dtoverlay,
// sections) changes what boots and is refused.
var configKeys = []string{
	"arm_freq", "arm_freq_min", "arm_boost", "core_freq", "core_freq_min",
	"gpu_freq", "gpu_freq_min", "h264_freq", "hevc_freq", "isp_freq", "v3d_freq",
	"sdram_freq", "sdram_freq_min", "over_voltage", "over_voltage_min",
	"over_voltage_delta", "over_voltage_sdram", "force_turbo", "initial_turbo",
	"temp_limit", "temp_soft_limit",
}

// configLines reads a config.txt value: KEY=VALUE[,KEY=VALUE...], each key
// one of configKeys, once, and each value a whole number. It returns the
// lines and their keys, in the order given.
func configLines(value string) (lines, keys []string, err error) {
	if len(value) > maxBootValue {
		return nil, nil, usage.Errorf("%d bytes of lines: at most %d", len(value), maxBootValue)
	}
	for _, kv := range strings.Split(value, ",") {
		kv = strings.TrimSpace(kv)
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
			return nil, nil, usage.Errorf("value %q: want KEY=VALUE[,KEY=VALUE...] lines for config.txt", value)
		case !slices.Contains(configKeys, k):
			return nil, nil, usage.Errorf("key %.40q is not set by linerate (it sets %s); edit the file by hand if it is meant", k, strings.Join(configKeys, ", "))
		case !wholeNumber(v):
			return nil, nil, usage.Errorf("%s=%.40q: want a whole number", k, v)
		case slices.Contains(keys, k):
			return nil, nil, usage.Errorf("%s given twice", k)
		}
		lines, keys = append(lines, k+"="+v), append(keys, k)
	}
	return lines, keys, nil
}

// wholeNumber is an optional minus and 1 to 9 digits.
func wholeNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && len(s) <= 9 && strings.Trim(s, "0123456789") == ""
}

// checkBootValue checks a boot item's value for the file its target
// edits; other targets (advice in words) are not written anywhere.
func checkBootValue(target, value string) error {
	var err error
	switch target {
	case "cmdline.txt", "grub":
		_, err = kernelParams(value)
	case "config.txt":
		_, _, err = configLines(value)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	return nil
}
