package tune

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
