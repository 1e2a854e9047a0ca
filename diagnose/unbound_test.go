package diagnose_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"linerate/diagnose"
	"linerate/internal/testenv"
	"linerate/tune"
)

// seed000Dmesg is seed 000's dmesg, verbatim ("5 Gbps Ethernet on the
// Raspberry Pi Compute Module 4": "make sure the BAR address registrations
// were all good... and lucky for me they were!"), then the lines the same
// kernel prints when they are not (drivers/pci/setup-res.c) and when the
// CM4's link does not train (drivers/pci/controller/pcie-brcmstb.c).
const seed000Dmesg = `[    0.983329] pci 0000:00:00.0: BAR 8: assigned [mem 0x600000000-0x6002fffff]
[    0.983354] pci 0000:01:00.0: BAR 0: assigned [mem 0x600000000-0x60007ffff]
[    0.983379] pci 0000:01:00.0: BAR 6: assigned [mem 0x600080000-0x6000fffff pref]
[    0.983396] pci 0000:01:00.1: BAR 0: assigned [mem 0x600100000-0x60017ffff]
[    0.983419] pci 0000:01:00.2: BAR 0: assigned [mem 0x600180000-0x6001fffff]
[    0.983442] pci 0000:01:00.3: BAR 0: assigned [mem 0x600200000-0x60027ffff]
[    0.983465] pci 0000:01:00.0: BAR 3: assigned [mem 0x600280000-0x600283fff]
[    0.983487] pci 0000:01:00.1: BAR 3: assigned [mem 0x600284000-0x600287fff]
[    0.983510] pci 0000:01:00.2: BAR 3: assigned [mem 0x600288000-0x60028bfff]
[    0.983533] pci 0000:01:00.3: BAR 3: assigned [mem 0x60028c000-0x60028ffff]
`

// beforeIgb makes, from the cm4-i340 capture, the box of seed 000 before
// its author built igb: the four 82580 functions on the bus (seed 000's
// lspci: "01:00.0 Ethernet controller: Intel Corporation 82580 Gigabit
// Network Connection (rev 01)" ... 01:00.3), no driver bound, no eth1-4;
// its modalias from the capture's vendor, device and subsystem files. The
// kernel's modules.alias has r8169's entry and no igb, as Pi OS's 5.10 had.
func beforeIgb(t *testing.T, dmesg, alias string) *diagnose.Evidence {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cm4-i340")
	if out, err := exec.Command("cp", "-a", filepath.Join("..", "testdata", "captures", "cm4-i340"), dir).CombinedOutput(); err != nil {
		t.Fatalf("copy capture: %v\n%s", err, out)
	}
	files := map[string]string{"kernel/dmesg.txt": dmesg, "kernel/modules.alias": alias}
	for fn := range 4 {
		pci := filepath.Join(dir, "sys/bus/pci/devices/0000:01:00."+string(rune('0'+fn)))
		for _, x := range []string{"driver", "net", "msi_irqs"} {
			os.RemoveAll(filepath.Join(pci, x))
		}
		os.Remove(filepath.Join(dir, "sys/class/net/eth"+string(rune('1'+fn))))
		files["sys/bus/pci/devices/0000:01:00."+string(rune('0'+fn))+"/modalias"] = "pci:v00008086d0000150Esv00008086sd000012A1bc02sc00i00\n"
	}
	for k, v := range files {
		if p := filepath.Join(dir, k); strings.HasPrefix(k, "sys/") {
			real, err := filepath.EvalSymlinks(filepath.Dir(p))
			if err != nil {
				t.Fatal(err)
			}
			delete(files, k)
			testenv.WriteFiles(t, real, map[string]string{filepath.Base(p): v})
		}
	}
	testenv.WriteFiles(t, dir, files)
	return evidenceAt(t, dir)
}

const piOSAliases = "# Aliases extracted from modules themselves.\nalias pci:v000010ECd00008168sv*sd*bc*sc*i* r8169\n"

// Seed 000's first obstacle: the I340 on the bus, no igb. Each of the four
// functions is named, with the verdict that this kernel has no module for
// it; with igb's alias (depmod's line for E1000_DEV_ID_82580_COPPER) the
// fix is modprobe igb. The seed's BAR lines are all "assigned": no
// pci-kernel-log finding until a BAR fails.
func TestUnboundNIC(t *testing.T) {
	ev := beforeIgb(t, seed000Dmesg, piOSAliases)
	if len(ev.Box.Unbound) != 4 {
		t.Fatalf("unbound %+v", ev.Box.Unbound)
	}
	got := fired(t, ev)
	if n := len(got["nic-unbound"]); n != 4 {
		t.Fatalf("nic-unbound fired %d times", n)
	}
	f := got["nic-unbound"][0]
	if f.Subject != "0000:01:00.0" || !strings.Contains(f.Summary, "no module of kernel 5.10.17-v8+ supports it") ||
		!strings.Contains(f.Fixes[0].Value, "8086:150e") {
		t.Errorf("finding: %+v", f)
	}
	if len(got["pci-kernel-log"]) != 0 {
		t.Errorf("seed 000's BARs were all assigned: %+v", got["pci-kernel-log"])
	}

	ev = beforeIgb(t, seed000Dmesg+"[    0.912345] pci 0000:01:00.0: BAR 6: no space for [mem size 0x00080000 pref]\n[    1.234567] brcm-pcie fd500000.pcie: link down\n",
		piOSAliases+"alias pci:v00008086d0000150Esv*sd*bc*sc*i* igb\n")
	got = fired(t, ev)
	f = got["nic-unbound"][0]
	if f.Fixes[0].Value != "modprobe igb" {
		t.Errorf("with igb's alias: %+v", f)
	}
	if k := got["pci-kernel-log"]; len(k) != 2 || k[0].Subject != "0000:01:00.0" || k[0].Fixes[0].Value != "pci=realloc" || k[1].Subject != "fd500000.pcie" {
		t.Errorf("pci-kernel-log: %+v", k)
	}
	// Every fix is one tune can plan (advice, printed).
	var items []tune.Item
	for _, id := range []string{"nic-unbound", "pci-kernel-log"} {
		items = append(items, tune.ItemsFromFindings(got[id])...)
	}
	// PlanFixes is lenient (what tune cannot take goes to Skipped): none
	// may be skipped.
	if p, err := tune.PlanFixes(tune.NewDir(t.TempDir()), items); err != nil {
		t.Errorf("plan the fixes: %v", err)
	} else if len(p.Skipped) != 0 {
		t.Errorf("fixes tune could not plan: %+v", p.Skipped)
	}
}
