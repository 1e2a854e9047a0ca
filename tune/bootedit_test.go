package tune

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"linerate/internal/usage"
)

// Raspberry Pi OS's files as its images ship them (Bookworm's
// cmdline.txt and the head of its config.txt; the Debian installer's
// /etc/default/grub).
const (
	piCmdline = "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 fsck.repair=yes rootwait quiet init=/usr/lib/raspberrypi-sys-mods/firstboot\n"
	piConfig  = "# For more options and information see\n# http://rptl.io/configtxt\n\ndtparam=audio=on\ncamera_auto_detect=1\narm_64bit=1\n\n[cm4]\notg_mode=1\n\n[all]\narm_freq=1500\n"
	grubFile  = "GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX=\"\"\n"
)

func bootRoot(t *testing.T, bootDir string) (string, map[string]string) {
	root := t.TempDir()
	files := map[string]string{
		bootDir + "/cmdline.txt":         piCmdline,
		bootDir + "/config.txt":          piConfig,
		grubDefault:                      grubFile,
		"proc/cmdline":                   strings.TrimSpace(piCmdline) + "\n",
		"proc/sys/kernel/random/boot_id": "11111111-1111-1111-1111-111111111111\n",
	}
	writeFiles(t, root, files)
	return root, files
}

var bootItems = []Item{
	{Kind: "boot", Target: "cmdline.txt", Value: "pci=pcie_bus_perf"},
	{Kind: "boot", Target: "config.txt", Value: "over_voltage=6,arm_freq=2147"},
	{Kind: "boot", Target: "grub", Value: "pci=pcie_bus_perf"},
}

// tune apply --boot on a fixture root, in both Pi OS layouts: the files
// are edited (a parameter before rootwait, config.txt's [all] line
// replaced and a new one added, GRUB's default line), status says pending
// until the (simulated) reboot and active after it, and rollback, from a
// system not opened for boot edits, puts back the exact bytes.
func TestBootApply(t *testing.T) {
	for _, layout := range []string{"boot/firmware", "boot"} {
		t.Run(layout, func(t *testing.T) {
			root, files := bootRoot(t, layout)
			plain := NewDir(root)
			p, err := NewPlan(plain, bootItems)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range p.Changes() {
				if !c.Manual {
					t.Errorf("without --boot, %s %s is not advice", c.Kind, c.Target)
				}
			}
			store := NewStore(t.TempDir())
			tx := applied(t, store, WithBoot(plain), bootItems)
			if n := len(tx.Record().Entries); n != 3 {
				t.Fatalf("journal holds %d entries", n)
			}
			got := func(rel string) string { return readRoot(t, root, rel) }
			if c := got(layout + "/cmdline.txt"); !strings.Contains(c, "fsck.repair=yes pci=pcie_bus_perf rootwait quiet") || strings.Count(c, "\n") != 1 {
				t.Errorf("cmdline.txt:\n%s", c)
			}
			if c := got(layout + "/config.txt"); !strings.HasSuffix(c, "[all]\narm_freq=2147\nover_voltage=6\n") || !strings.Contains(c, "[cm4]\notg_mode=1\n") {
				t.Errorf("config.txt:\n%s", c)
			}
			if c := got(grubDefault); !strings.Contains(c, "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet pci=pcie_bus_perf\"\n") || !strings.Contains(c, "GRUB_CMDLINE_LINUX=\"\"\n") {
				t.Errorf("grub:\n%s", c)
			}
			rec := tx.Record()
			for _, st := range Check(plain, rec) {
				if !st.Holds || st.BootState != "pending until reboot" {
					t.Errorf("status before reboot: %s %s holds %v, %q", st.Kind, st.Target, st.Holds, st.BootState)
				}
			}
			// Reboot: a new boot_id, and the kernel runs with the parameter.
			writeFiles(t, root, map[string]string{
				"proc/sys/kernel/random/boot_id": "22222222-2222-2222-2222-222222222222\n",
				"proc/cmdline":                   strings.TrimSpace(got(layout+"/cmdline.txt")) + "\n",
			})
			if Stale(plain, rec) {
				t.Error("a record of boot edits is stale after the reboot")
			}
			for _, st := range Check(plain, rec) {
				if !st.Holds || st.BootState != "active" {
					t.Errorf("status after reboot: %s %s holds %v, %q", st.Kind, st.Target, st.Holds, st.BootState)
				}
			}
			if _, err := store.Rollback(context.Background(), plain, rec); err != nil {
				t.Fatal(err)
			}
			for rel, want := range files {
				if strings.HasPrefix(rel, "proc/") {
					continue
				}
				if b, _ := os.ReadFile(filepath.Join(root, rel)); string(b) != want {
					t.Errorf("%s after rollback:\n%q\nwant\n%q", rel, b, want)
				}
			}
		})
	}
}

// Values that would run a command when /etc/default/grub is sourced, add
// lines or sections to config.txt, or change what the box boots.
var hostileBootValues = []string{
	`x="; touch MARK; "`,
	"`touch MARK`",
	"$(touch MARK)",
	`x=$(touch${IFS}MARK)`,
	"quiet\ntouch MARK",
	`pci=realloc;touch MARK`,
	`x='a'`,
	`a\b`,
	"init=/bin/sh",
	"rdinit=/bin/sh",
	"quiet init=/bin/sh",
	"root=/dev/sda9",
	"systemd.run=/tmp/x",
	"systemd.debug_shell",
	"rd.break",
	"single",
	"LD_PRELOAD=/tmp/x.so",
	"security=none",
	"module.sig_enforce=0",
	"mitigations=off",
	"kgdboc=ttyS0",
}

// A grub item is read as kernel parameters and written so that sh reads
// back exactly them: the file is sourced, as grub-mkconfig does, by a real
// sh and by busybox ash, in a temporary directory, and no value may leave
// a MARK file there or a variable other than the parameters asked for.
// Values that are not kernel parameters are refused, one line, bad input.
// The last assignment (the one that wins) is the one edited, and its
// quotes and comment are kept.
func TestGrubValueSourced(t *testing.T) {
	shells := [][]string{{"sh"}}
	if _, err := exec.LookPath("busybox"); err == nil {
		shells = append(shells, []string{"busybox", "ash"})
	} else {
		t.Log("no busybox: ash not checked")
	}
	const head = "GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\n"
	files := []struct{ name, text, was string }{
		{"debian", head + "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX=\"\"\n", "quiet"},
		{"two lines", head + "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\n", "quiet splash"},
		{"single quotes", head + "GRUB_CMDLINE_LINUX_DEFAULT='quiet  splash' # set by the installer\n", "quiet splash"},
		{"bare", head + "export GRUB_CMDLINE_LINUX_DEFAULT=quiet\n", "quiet"},
		{"none", head, ""},
	}
	values := append([]string{"pci=pcie_bus_perf", "isolcpus=2-3 nohz_full=2-3", "console=ttyS0,115200n8 video=HDMI-A-1:1920x1080@60", "quiet"}, hostileBootValues...)
	for _, f := range files {
		for _, v := range values {
			got, err := editBoot("grub", []byte(f.text), v)
			if err != nil {
				if !usage.Is(err) || strings.Contains(err.Error(), "\n") {
					t.Errorf("%s, %q: %v (want one line of bad input)", f.name, v, err)
				}
				continue
			}
			want := strings.Join(withParamsWords(strings.Fields(f.was), strings.Fields(v)), " ")
			for _, sh := range shells {
				if out := sourced(t, sh, got); out != want {
					t.Errorf("%s, %q, sourced by %s: %q, want %q\n%s", f.name, v, sh[0], out, want, got)
				}
			}
		}
	}
}

// withParamsWords is what a grub value should hold after params are
// added to was: a key=value replaces the same key, the rest are added.
func withParamsWords(was, params []string) []string {
	out := slices.Clone(was)
	for _, p := range params {
		k, _, _ := strings.Cut(p, "=")
		if i := slices.IndexFunc(out, func(w string) bool { wk, _, _ := strings.Cut(w, "="); return wk == k }); i >= 0 {
			out[i] = p
		} else {
			out = append(out, p)
		}
	}
	return out
}

// sourced writes text to a file in a new directory, sources it with shell
// (cwd the directory) and returns GRUB_CMDLINE_LINUX_DEFAULT as the shell
// sees it; it fails the test if anything but the file appeared there.
func sourced(t *testing.T, shell []string, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "grub"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(slices.Clone(shell[1:]), "-c", `. ./grub; printf %s "$GRUB_CMDLINE_LINUX_DEFAULT"`)
	cmd := exec.Command(shell[0], args...)
	cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("%s: %v", shell[0], err)
	}
	if des, _ := os.ReadDir(dir); len(des) != 1 {
		t.Errorf("sourcing by %s made files: %v\n%s", shell[0], des, text)
	}
	return string(out)
}

// Every boot target reads its value by its grammar, with --boot and
// without (advice), from --set and from a plan: what could inject, add a
// line or change what boots is refused as bad input naming the target, in
// one line, and nothing is written. A whole file (restore-file:) is taken
// only from the journal.
func TestBootValuesRefused(t *testing.T) {
	root, files := bootRoot(t, "boot/firmware")
	config := []string{
		"arm_freq=2000\n[all]\nkernel=evil.img",
		"kernel=evil.img", "include=extra.txt", "cmdline=evil.txt", "dtoverlay=x",
		"arm_freq=2000 # fast", "arm_freq=fast", "over_voltage=6,over_voltage=8",
		"os_prefix=x/",
	}
	var items []Item
	for _, v := range hostileBootValues {
		items = append(items, Item{Kind: "boot", Target: "grub", Value: v}, Item{Kind: "boot", Target: "cmdline.txt", Value: v})
	}
	for _, v := range config {
		items = append(items, Item{Kind: "boot", Target: "config.txt", Value: v})
	}
	whole := restoreFile + base64.StdEncoding.EncodeToString([]byte("GRUB_CMDLINE_LINUX_DEFAULT=\"init=/bin/sh\"\n"))
	items = append(items, Item{Kind: "boot", Target: "grub", Value: whole}, Item{Kind: "irqbalance-banned", Target: "box", Value: whole})
	for _, sys := range []System{NewDir(root), WithBoot(NewDir(root))} {
		for _, it := range items {
			_, err := NewPlan(sys, []Item{it})
			if err == nil || !usage.Is(err) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), it.Target) {
				t.Errorf("boot edits %v, %q: %v (want one line of bad input naming the target)", bootEdits(sys), it, err)
			}
		}
	}
	// From findings (tune plan --findings), what cannot be built is left
	// out with its reason, and nothing of it is planned.
	p, err := PlanFixes(WithBoot(NewDir(root)), items)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Actions()) != 0 || len(p.Skipped) != len(items) {
		t.Errorf("from findings: %d actions, %d of %d skipped", len(p.Actions()), len(p.Skipped), len(items))
	}
	if _, err := ParseItem("boot:grub=" + whole); err != nil {
		t.Fatal(err) // parsed, refused when built (above)
	}
	for rel, want := range files {
		if b, _ := os.ReadFile(filepath.Join(root, rel)); string(b) != want {
			t.Errorf("%s changed:\n%s", rel, b)
		}
	}
}

// A grub line that sh would do more with than assign a list of words is
// left to a person: the edit is refused, naming the line.
func TestGrubLineRefused(t *testing.T) {
	for _, line := range []string{
		"GRUB_CMDLINE_LINUX_DEFAULT=\"quiet $(cat /etc/extra)\"\n",
		"GRUB_CMDLINE_LINUX_DEFAULT=\"quiet `cat /etc/extra`\"\n",
		"GRUB_CMDLINE_LINUX_DEFAULT=\"quiet \\\nsplash\"\n",
		"GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"; echo hi\n",
		"GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"'splash'\n",
		"GRUB_CMDLINE_LINUX_DEFAULT=quiet;echo\n",
	} {
		_, err := editBoot("grub", []byte("GRUB_TIMEOUT=5\n"+line), "pci=realloc")
		if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v", line, err)
		}
	}
}

// config.txt takes its known keys as whole numbers, one line each, under
// [all]; status and rollback are as before (TestBootApply).
func TestConfigValue(t *testing.T) {
	got, err := editBoot("config.txt", []byte(piConfig), "arm_freq=2147, over_voltage=-2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(got, "[all]\narm_freq=2147\nover_voltage=-2\n") || strings.Count(got, "\n") != strings.Count(piConfig, "\n")+1 {
		t.Errorf("config.txt:\n%s", got)
	}
}
