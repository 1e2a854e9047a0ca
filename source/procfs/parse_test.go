package procfs

import (
	"bytes"
	"linerate/source/tree"
	"os"
	"reflect"
	"strings"
	"testing"
)

// seed004 is the `cat /proc/interrupts | grep enp4s0` output of seed 004 (an
// i211 on a 4-core x86 box), under the header such a box prints.
const seed004 = `            CPU0       CPU1       CPU2       CPU3
  56:          0          1          0          0   PCI-MSI 2097152-edge      enp4s0
  57:          0          0        417  266296679   PCI-MSI 2097153-edge      enp4s0-rx-0
  58:        980        205       8093          7   PCI-MSI 2097154-edge      enp4s0-rx-1
  59:       2525        410       6187        204   PCI-MSI 2097155-edge      enp4s0-tx-0
  60:       1877        348       7462         85   PCI-MSI 2097156-edge      enp4s0-tx-1
 NMI:          0          0          0          0   Non-maskable interrupts
 LOC:   12345678   23456789   34567890   45678901   Local timer interrupts
 ERR:          0
 MIS:          0
`

// armPi has the row shapes of a Raspberry Pi 4 / CM4 kernel, which prints
// the trigger in its own column (CONFIG_GENERIC_IRQ_SHOW_LEVEL) and whose
// PCIe MSI chip name holds spaces.
const armPi = `           CPU0       CPU1       CPU2       CPU3
 26:          0          0          0          0     GICv2  29 Level     arch_timer
 35:          0          0          0          0     GICv2 175 Level     PCIe PME, aerdrv
 41:          0          0          0          0     GICv2 189 Level     eth0
 42:      51234          0          0          0     GICv2 190 Level     eth0
 55:         29          0          0          0  BRCM STB PCIe MSI 524288 Edge      eth1
 56:          7          0          0          0  BRCM STB PCIe MSI 524289 Edge      
FIQ:              usb_fiq
IPI0:       2370       2518       2483       2402  Rescheduling interrupts
Err:          0
`

func TestParseInterrupts(t *testing.T) {
	in, err := ParseInterrupts(strings.NewReader(seed004))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in.CPUs, []int{0, 1, 2, 3}) {
		t.Errorf("CPUs = %v", in.CPUs)
	}
	want := []InterruptRow{
		{Label: "56", Number: 56, Counts: []uint64{0, 1, 0, 0}, Chip: "PCI-MSI", HWIRQ: "2097152-edge", Actions: "enp4s0"},
		{Label: "57", Number: 57, Counts: []uint64{0, 0, 417, 266296679}, Chip: "PCI-MSI", HWIRQ: "2097153-edge", Actions: "enp4s0-rx-0"},
		{Label: "58", Number: 58, Counts: []uint64{980, 205, 8093, 7}, Chip: "PCI-MSI", HWIRQ: "2097154-edge", Actions: "enp4s0-rx-1"},
		{Label: "59", Number: 59, Counts: []uint64{2525, 410, 6187, 204}, Chip: "PCI-MSI", HWIRQ: "2097155-edge", Actions: "enp4s0-tx-0"},
		{Label: "60", Number: 60, Counts: []uint64{1877, 348, 7462, 85}, Chip: "PCI-MSI", HWIRQ: "2097156-edge", Actions: "enp4s0-tx-1"},
		{Label: "NMI", Number: -1, Counts: []uint64{0, 0, 0, 0}, Actions: "Non-maskable interrupts"},
		{Label: "LOC", Number: -1, Counts: []uint64{12345678, 23456789, 34567890, 45678901}, Actions: "Local timer interrupts"},
		{Label: "ERR", Number: -1, Counts: []uint64{0}},
		{Label: "MIS", Number: -1, Counts: []uint64{0}},
	}
	if !reflect.DeepEqual(in.Rows, want) {
		for i := range max(len(in.Rows), len(want)) {
			var g, w InterruptRow
			if i < len(in.Rows) {
				g = in.Rows[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("row %d:\n got %+v\nwant %+v", i, g, w)
			}
		}
	}
}

func TestParseInterruptsARM(t *testing.T) {
	in, err := ParseInterrupts(strings.NewReader(armPi))
	if err != nil {
		t.Fatal(err)
	}
	want := []InterruptRow{
		{Label: "26", Number: 26, Counts: []uint64{0, 0, 0, 0}, Chip: "GICv2", HWIRQ: "29", Trigger: "Level", Actions: "arch_timer"},
		{Label: "35", Number: 35, Counts: []uint64{0, 0, 0, 0}, Chip: "GICv2", HWIRQ: "175", Trigger: "Level", Actions: "PCIe PME, aerdrv"},
		{Label: "41", Number: 41, Counts: []uint64{0, 0, 0, 0}, Chip: "GICv2", HWIRQ: "189", Trigger: "Level", Actions: "eth0"},
		{Label: "42", Number: 42, Counts: []uint64{51234, 0, 0, 0}, Chip: "GICv2", HWIRQ: "190", Trigger: "Level", Actions: "eth0"},
		{Label: "55", Number: 55, Counts: []uint64{29, 0, 0, 0}, Chip: "BRCM STB PCIe MSI", HWIRQ: "524288", Trigger: "Edge", Actions: "eth1"},
		{Label: "56", Number: 56, Counts: []uint64{7, 0, 0, 0}, Chip: "BRCM STB PCIe MSI", HWIRQ: "524289", Trigger: "Edge"},
		{Label: "FIQ", Number: -1, Actions: "usb_fiq"},
		{Label: "IPI0", Number: -1, Counts: []uint64{2370, 2518, 2483, 2402}, Actions: "Rescheduling interrupts"},
		{Label: "Err", Number: -1, Counts: []uint64{0}},
	}
	if len(in.Rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(in.Rows), len(want), in.Rows)
	}
	for i := range want {
		if !reflect.DeepEqual(in.Rows[i], want[i]) {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, in.Rows[i], want[i])
		}
	}
}

func TestSplitIRQTail(t *testing.T) {
	tests := []struct {
		tail                          string
		chip, hwirq, trigger, actions string
	}{
		// This VM (kernel 6.18): per-device MSI-X domains name the chip.
		{" PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0", "PCI-MSIX-0000:00:03.0", "1-edge", "", "virtio2-input.0"},
		{"  IO-APIC   5-edge      ACPI:Ged", "IO-APIC", "5-edge", "", "ACPI:Ged"},
		{"  IO-APIC   9-fasteoi   acpi", "IO-APIC", "9-fasteoi", "", "acpi"},
		{"  IR-PCI-MSI 524288-edge      eth0-TxRx-0", "IR-PCI-MSI", "524288-edge", "", "eth0-TxRx-0"},
		{"  XT-PIC      -edge      cascade", "XT-PIC", "-edge", "", "cascade"},
		{"  IO-APIC   2-edge      timer, rtc0", "IO-APIC", "2-edge", "", "timer, rtc0"},
		{"  ITS-MSI 524288 Edge      eth1", "ITS-MSI", "524288", "Edge", "eth1"},
		{"  GIC  27  arch_timer", "GIC", "27", "", "arch_timer"},
		{"  None  dummy", "None", "", "", "dummy"},
		{"  IO-APIC   7-fasteoi", "IO-APIC", "7-fasteoi", "", ""},
		{"", "", "", "", ""},
	}
	for _, tt := range tests {
		c, h, tr, a := splitIRQTail(tt.tail)
		if c != tt.chip || h != tt.hwirq || tr != tt.trigger || a != tt.actions {
			t.Errorf("splitIRQTail(%q) = %q %q %q %q, want %q %q %q %q", tt.tail, c, h, tr, a, tt.chip, tt.hwirq, tt.trigger, tt.actions)
		}
	}
}

func TestParseInterruptsErrors(t *testing.T) {
	tests := map[string]string{
		"no header":      " 41:  0 0 GICv2 189 Level eth0\n",
		"short row":      "  CPU0 CPU1\n 41:  5  GICv2 189 Level eth0\n",
		"no label":       "  CPU0\n  12 34\n",
		"empty":          "",
		"bad header cpu": "  CPU0 CPUx\n",
	}
	for name, text := range tests {
		if _, err := ParseInterrupts(strings.NewReader(text)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseStat(t *testing.T) {
	const text = `cpu  5526 0 2219 85880 239 0 111 7 0 0
cpu0 2269 0 872 43798 13 0 43 3 0 0
cpu1 3256 0 1347 42081 226 0 67 3 0 0
intr 284103 0 0 0
ctxt 475704
btime 1763793371
cpuonline 1
`
	got, err := ParseStat(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []CPUTimes{
		{ID: 0, User: 2269, System: 872, Idle: 43798, IOWait: 13, SoftIRQ: 43, Steal: 3},
		{ID: 1, User: 3256, System: 1347, Idle: 42081, IOWait: 226, SoftIRQ: 67, Steal: 3},
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got[1].Total() != 3256+1347+42081+226+67+3 || got[1].Busy() != 3256+1347+67+3 {
		t.Errorf("Total %d Busy %d", got[1].Total(), got[1].Busy())
	}

	// A 2.6.9-era kernel prints seven columns; the rest are zero. CPU 1 offline.
	old, err := ParseStat(strings.NewReader("cpu 1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\ncpu2 1 1 1 1 1 1 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != 2 || old[1].ID != 2 || old[0].SoftIRQ != 7 || old[0].Steal != 0 {
		t.Errorf("old kernel: %+v", old)
	}

	for _, bad := range []string{"cpu0 1 2 x 4\n", "cpu0 1 2\n", "cpuX 1 2 3 4\n", "intr 1\n", ""} {
		if _, err := ParseStat(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseStat(%q): no error", bad)
		}
	}
}

func TestParseSoftIRQs(t *testing.T) {
	const text = `                    CPU0       CPU1       
          HI:          0          0
       TIMER:       5374       6187
      NET_TX:          4          4
      NET_RX:       2759       2757
       BLOCK:          0      59628
`
	got, err := ParseSoftIRQs(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]uint64{
		"HI": {0, 0}, "TIMER": {5374, 6187}, "NET_TX": {4, 4}, "NET_RX": {2759, 2757}, "BLOCK": {0, 59628},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
	for _, bad := range []string{"", "   CPU0 CPU1\n NET_RX: 1\n", "  CPU0\n NET_RX: x\n", "  CPU0\n NET_RX 1\n"} {
		if _, err := ParseSoftIRQs(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseSoftIRQs(%q): no error", bad)
		}
	}
}

func TestParseSoftnet(t *testing.T) {
	tests := []struct {
		name, text string
		want       []Softnet
	}{
		{
			// Kernel 4.19: 11 columns, no CPU id.
			name: "11 columns",
			text: "0001e0bc 00000000 00000003 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n" +
				"0000f00d 00000002 00000010 00000000 00000000 00000000 00000000 00000000 00000000 0000001a 00000005\n",
			want: []Softnet{
				{CPU: 0, Processed: 0x1e0bc, TimeSqueeze: 3},
				{CPU: 1, Processed: 0xf00d, Dropped: 2, TimeSqueeze: 0x10, ReceivedRPS: 0x1a, FlowLimit: 5},
			},
		},
		{
			// Kernel 5.10: 13 columns, CPU 1 offline so the second row is CPU 2.
			name: "13 columns",
			text: "00000100 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n" +
				"00000200 00000001 00000002 00000000 00000000 00000000 00000000 00000000 00000000 00000003 00000000 00000004 00000002\n",
			want: []Softnet{
				{CPU: 0, Processed: 0x100},
				{CPU: 2, Processed: 0x200, Dropped: 1, TimeSqueeze: 2, ReceivedRPS: 3, BacklogLen: 4},
			},
		},
		{
			// This VM, kernel 6.18: 15 columns.
			name: "15 columns",
			text: "0000000e 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n" +
				"00000ccf 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000003 00000001 00000001 00000002\n",
			want: []Softnet{
				{CPU: 0, Processed: 0xe},
				{CPU: 1, Processed: 0xccf, BacklogLen: 3, InputQLen: 1, ProcessQLen: 2},
			},
		},
	}
	for _, tt := range tests {
		got, err := ParseSoftnet(strings.NewReader(tt.text))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
	for _, bad := range []string{"00000001 00000002\n", "0000000g 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n"} {
		if _, err := ParseSoftnet(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseSoftnet(%q): no error", bad)
		}
	}
}

func TestParseNetDev(t *testing.T) {
	const text = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    3193      29    0    0    0     0          0         0     3193      29    0    0    0     0       0          0
  eth0: 58026852    3262    0    0    0     0          0         0   342839    3407    0    0    0     0       0          0
enp4s0:123456789012 9 1 2 3 4 5 6 7 8 9 10 11 12 13 14
`
	got, err := ParseNetDev(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]NetDev{
		"lo":   {RxBytes: 3193, RxPackets: 29, TxBytes: 3193, TxPackets: 29},
		"eth0": {RxBytes: 58026852, RxPackets: 3262, TxBytes: 342839, TxPackets: 3407},
		"enp4s0": {RxBytes: 123456789012, RxPackets: 9, RxErrs: 1, RxDrop: 2, RxFifo: 3, RxFrame: 4, RxCompressed: 5, RxMulticast: 6,
			TxBytes: 7, TxPackets: 8, TxErrs: 9, TxDrop: 10, TxFifo: 11, TxColls: 12, TxCarrier: 13, TxCompressed: 14},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{"eth0: 1 2 3\n", "eth0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", "eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 x\n"} {
		if _, err := ParseNetDev(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseNetDev(%q): no error", bad)
		}
	}
}

func TestParseSNMP(t *testing.T) {
	const text = `Ip: Forwarding DefaultTTL InReceives
Ip: 2 64 3288
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens RetransSegs
Tcp: 1 200 120000 -1 36 7
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 51 0 0 52 3 0 0 0 0
`
	got, err := ParseSNMP(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]uint64{
		"Ip":  {"Forwarding": 2, "DefaultTTL": 64, "InReceives": 3288},
		"Tcp": {"RtoAlgorithm": 1, "RtoMin": 200, "RtoMax": 120000, "ActiveOpens": 36, "RetransSegs": 7},
		"Udp": {"InDatagrams": 51, "NoPorts": 0, "InErrors": 0, "OutDatagrams": 52, "RcvbufErrors": 3, "SndbufErrors": 0, "InCsumErrors": 0, "IgnoredMulti": 0, "MemErrors": 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	for name, bad := range map[string]string{
		"count mismatch":   "Udp: A B\nUdp: 1\n",
		"section mismatch": "Udp: A\nTcp: 1\n",
		"not a number":     "Udp: A\nUdp: x\n",
		"bad negative":     "Udp: A\nUdp: -x\n",
		"header alone":     "Udp: A B\n",
		"no section":       "just words\n",
	} {
		if _, err := ParseSNMP(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The sampler parses these files once a second per snapshot.
func BenchmarkParseInterrupts(b *testing.B) {
	text := seed004 + armPi[strings.Index(armPi, "\n")+1:]
	for b.Loop() {
		if _, err := ParseInterrupts(strings.NewReader(text)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseSNMP(b *testing.B) {
	text, err := os.ReadFile("testdata/vm/net/snmp")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ParseSNMP(bytes.NewReader(text)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParsersLeaveOutBadLines: a line that one row of a file stands on (an
// IRQ, a CPU, an interface, a counter) is left out with its line number;
// the rows around it are kept. A header the whole file depends on still
// fails it.
func TestParsersLeaveOutBadLines(t *testing.T) {
	skippedAt := func(t *testing.T, err error, want ...int) {
		t.Helper()
		lines, ok := tree.Skipped(err)
		if !ok {
			t.Fatalf("err = %v, want lines left out", err)
		}
		var got []int
		for _, l := range lines {
			got = append(got, l.Line)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("left out lines %v, want %v (%v)", got, want, err)
		}
	}
	t.Run("interrupts", func(t *testing.T) {
		in, err := ParseInterrupts(strings.NewReader("           CPU0       CPU1\n" +
			" 11:    23x2676     300012 garbage\n" +
			" 41:        100        200   PCI-MSI 524288-edge      eth0-rx-0\n" +
			"no label here\n" +
			"LOC:        5          6   Local timer interrupts\n"))
		skippedAt(t, err, 2, 4)
		if len(in.Rows) != 2 || in.Rows[0].Number != 41 || in.Rows[0].Actions != "eth0-rx-0" || in.Rows[1].Label != "LOC" {
			t.Fatalf("rows = %+v", in.Rows)
		}
		if _, err := ParseInterrupts(strings.NewReader("CPU0 CPUx\n 41: 1 2 chip 3 x\n")); err == nil {
			t.Fatal("a bad header was read")
		} else if _, ok := tree.Skipped(err); ok {
			t.Fatalf("a bad header left one line out: %v", err)
		}
	})
	t.Run("stat", func(t *testing.T) {
		cpus, err := ParseStat(strings.NewReader("cpu 1 2 3 4\ncpu0 12 zz 3 4\ncpu1 1 2 3 4 5 6 7 8\n"))
		skippedAt(t, err, 2)
		if len(cpus) != 1 || cpus[0].ID != 1 || cpus[0].Steal != 8 {
			t.Fatalf("cpus = %+v", cpus)
		}
		if _, err := ParseStat(strings.NewReader("cpu0 12 zz 3 4\n")); err == nil {
			t.Fatal("a file with no usable CPU line was read")
		} else if _, ok := tree.Skipped(err); ok {
			t.Fatalf("no usable CPU line is only lines left out: %v", err)
		}
	})
	t.Run("softnet keeps CPU numbers of old kernels", func(t *testing.T) {
		row := "00000001 00000002 00000003 00000000 00000000 00000000 00000000 00000000 00000000 00000004 00000005\n"
		sn, err := ParseSoftnet(strings.NewReader(row + "zz 1 2\n" + row))
		skippedAt(t, err, 2)
		if len(sn) != 2 || sn[0].CPU != 0 || sn[1].CPU != 2 {
			t.Fatalf("softnet = %+v", sn)
		}
	})
	t.Run("net/dev", func(t *testing.T) {
		nd, err := ParseNetDev(strings.NewReader("Inter-|   Receive\n face |bytes\n" +
			"    lo: 1 2 0 0 0 0 0 0 1 2 0 0 0 0 0 0\n  eth0: 1 2 3\n"))
		skippedAt(t, err, 4)
		if _, ok := nd["lo"]; !ok || len(nd) != 1 {
			t.Fatalf("net/dev = %+v", nd)
		}
	})
	t.Run("snmp keeps the other values", func(t *testing.T) {
		m, err := ParseSNMP(strings.NewReader("Udp: InDatagrams NoPorts InErrors\nUdp: 51 x 3\n" +
			"Tcp: RtoMin\nIcmp: InMsgs\nIcmp: 7\nIp: Forwarding\n"))
		skippedAt(t, err, 2, 4, 6)
		want := map[string]map[string]uint64{"Udp": {"InDatagrams": 51, "InErrors": 3}, "Icmp": {"InMsgs": 7}}
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("snmp = %v, want %v", m, want)
		}
	})
}

func TestParsePeakRSS(t *testing.T) {
	status := "Name:\tlinerate\nVmPeak:\t 1263772 kB\nVmSize:\t 1263772 kB\nVmHWM:\t   48220 kB\nVmRSS:\t   40112 kB\nThreads:\t10\n"
	if v, err := ParsePeakRSS(strings.NewReader(status)); err != nil || v != 48220*1024 {
		t.Errorf("VmHWM: %d, %v", v, err)
	}
	for text, want := range map[string]string{
		"Name:\tkthreadd\nThreads:\t1\n": "no VmHWM (a kernel thread, or not a status file)",
		"VmHWM:\t 12 MB\n":               `line 1: VmHWM: "12 MB": want a number of kB`,
		"VmHWM:\t -5 kB\n":               `line 1: VmHWM: "-5": want a number of kB`,
	} {
		if _, err := ParsePeakRSS(strings.NewReader(text)); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", text, err, want)
		}
	}
	// This process's own.
	if v, err := NewFS("/proc").SelfPeakRSS(); err != nil || v <= 0 {
		t.Errorf("self: %d, %v", v, err)
	}
}

func TestParseProcessStat(t *testing.T) {
	// A command name with a space and a ')' of its own.
	stat := "31730 (we ird) ) R 31726 31726 28136 0 -1 4194304 100 0 0 0 1234 567 8 9 20 0 1 0 1343910 3133440 412\n"
	if pt, err := ParseProcessStat(strings.NewReader(stat)); err != nil || pt != (ProcessTimes{User: 1234, System: 567}) {
		t.Errorf("stat: %+v, %v", pt, err)
	}
	for text, want := range map[string]string{
		"":                                     "empty: not a process's stat file",
		"31730 cat R 1 2 3\n":                  `line 1: no ')' closing the command name in "31730 cat R 1 2 3"`,
		"31730 (cat) R 1 2 3\n":                "line 1: 4 fields after the command name, want at least 13 (utime and stime are fields 14 and 15)",
		"1 (a) R 1 1 1 0 -1 0 0 0 0 0 x 5 0\n": `line 1: utime "x", stime "5": want counts of ticks`,
		"1 (a) R 1 1 1 0 -1 0 0 0 0 0 4 5 0\nsecond\n": "line 2: more than one line: not a process's stat file",
	} {
		if _, err := ParseProcessStat(strings.NewReader(text)); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", text, err, want)
		}
	}
	// This process's own.
	if _, err := NewFS("/proc").SelfCPU(); err != nil {
		t.Errorf("self: %v", err)
	}
}
