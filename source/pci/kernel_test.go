package pci

import (
	"slices"
	"strings"
	"testing"
)

// The alias line is depmod's for igb's 82580 entry (E1000_DEV_ID_82580_COPPER,
// 0x150E in drivers/net/ethernet/intel/igb/e1000_hw.h): the function seed
// 000's lspci shows as "01:00.0 Ethernet controller: Intel Corporation 82580
// Gigabit Network Connection (rev 01)".
const aliases = `# Aliases extracted from modules themselves.
alias pci:v00008086d0000150Esv*sd*bc*sc*i* igb
alias pci:v00008086d00001533sv*sd*bc*sc*i* igb
alias pci:v000010ECd00008168sv*sd*bc*sc*i* r8169
alias usb:v0BDAp8153d*dc*dsc*dp*ic*isc*ip*in* r8152
alias pci:v*d*sv*sd*bc02sc00i* somenic
`

func TestModulesFor(t *testing.T) {
	al, err := ParseModulesAlias(strings.NewReader(aliases))
	if err != nil || len(al) != 4 {
		t.Fatalf("%v %v", al, err)
	}
	i340 := "pci:v00008086d0000150Esv00008086sd000012A1bc02sc00i00"
	if got := ModulesFor(al, i340); !slices.Equal(got, []string{"igb", "somenic"}) {
		t.Errorf("82580: %v", got)
	}
	if got := ModulesFor(al[:3], "pci:v000014E4d00001657sv000014E4sd00001657bc02sc00i00"); len(got) != 0 {
		t.Errorf("tg3 without its alias: %v", got)
	}
}

// Seed 000's dmesg (the BAR lines all "assigned": nothing to report), and
// failure lines as the kernel prints them.
func TestParseKernelLog(t *testing.T) {
	log := `[    0.983329] pci 0000:00:00.0: BAR 8: assigned [mem 0x600000000-0x6002fffff]
[    0.983354] pci 0000:01:00.0: BAR 0: assigned [mem 0x600000000-0x60007ffff]
[    0.983379] pci 0000:01:00.0: BAR 6: assigned [mem 0x600080000-0x6000fffff pref]
[    0.912345] pci 0000:01:00.0: BAR 6: no space for [mem size 0x00080000 pref]
[    0.912346] pci 0000:01:00.0: BAR 6: failed to assign [mem size 0x00080000 pref]
[    1.234567] brcm-pcie fd500000.pcie: link down
[    1.5] igb 0000:01:00.0: eth1: (PCIe:5.0Gb/s:Width x1) 00:1b:21:aa:bb:cc
`
	ev, err := ParseKernelLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ev {
		got = append(got, e.Kind+" "+e.Device)
	}
	if want := []string{"bar 0000:01:00.0", "bar 0000:01:00.0", "link fd500000.pcie"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

func FuzzKernelText(f *testing.F) {
	f.Add(aliases)
	f.Add("[ 1.2] pci 0000:01:00.0: BAR 6: no space for [mem]\n")
	f.Fuzz(func(t *testing.T, s string) {
		al, _ := ParseModulesAlias(strings.NewReader(s))
		ModulesFor(al, "pci:v00008086d0000150Esv00008086sd000012A1bc02sc00i00")
		ParseKernelLog(strings.NewReader(s))
	})
}
