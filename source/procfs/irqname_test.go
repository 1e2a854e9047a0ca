package procfs

import (
	"strconv"
	"strings"
	"testing"
)

// Names as kernels print them: igb ("eth0", "eth0-TxRx-N"), a driver with
// split vectors ("enp4s0-rx-0", "enp4s0-tx-0"), the Pi's GENET (two lines
// both "eth0", seed 002's IRQs 41 and 42), mlx5 (named after the PCI
// function, not the interface), virtio-net (named after its virtio device,
// as QEMU's guests show: "virtio1-input.0"), e1000e and vmxnet3 as their
// drivers name them in a QEMU guest (lab up --vm).
func TestNameIRQs(t *testing.T) {
	cases := []struct {
		iface   string
		device  string
		actions map[int]string
		want    string
		match   map[string]int
	}{
		{"eth0", "", map[int]string{41: "eth0", 42: "eth0-TxRx-0", 43: "eth0-TxRx-1"},
			"eth0/#0=41 eth0/TxRx-0=42 eth0/TxRx-1=43", map[string]int{"rx-1": 43, "tx-0": 42, "txrx-1": 43, "#0": 41}},
		{"enp4s0", "", map[int]string{60: "enp4s0-rx-0", 61: "enp4s0-tx-0", 62: "enp4s0"},
			"enp4s0/rx-0=60 enp4s0/tx-0=61 enp4s0/#2=62", map[string]int{"rx-0": 60, "tx-0": 61}},
		{"eth0", "", map[int]string{42: "eth0", 41: "eth0"}, "eth0/#0=41 eth0/#1=42", map[string]int{"#1": 42, "rx-0": -1}},
		{"enp1s0f0", "", map[int]string{90: "mlx5_async@pci:0000:01:00.0", 91: "mlx5_comp0@pci:0000:01:00.0"},
			"enp1s0f0/#0=90 enp1s0f0/#1=91", map[string]int{"#1": 91}},
		{"a", "virtio1", map[int]string{26: "virtio1-config", 27: "virtio1-input.0", 28: "virtio1-output.0", 29: "virtio1-input.1", 30: "virtio1-output.1"},
			"a/config=26 a/input.0=27 a/output.0=28 a/input.1=29 a/output.1=30",
			map[string]int{"rx-0": 27, "tx-0": 28, "rx-1": 29, "tx-1": 30, "input.1": 29, "rx-2": -1}},
		{"a", "", map[int]string{26: "a-rx-0", 27: "a-tx-0", 28: "a"}, "a/rx-0=26 a/tx-0=27 a/#2=28", map[string]int{"rx-0": 26, "tx-0": 27}},
		{"a", "", map[int]string{24: "a-rxtx-0", 25: "a-event-1"}, "a/rxtx-0=24 a/event-1=25", map[string]int{"rx-0": 24, "tx-0": 24}},
	}
	for _, c := range cases {
		var nums []int
		for n := range c.actions {
			nums = append(nums, n)
		}
		named := NameIRQs(c.iface, c.device, nums, c.actions)
		var got []string
		for _, q := range named {
			got = append(got, q.Ref+"="+itoa(q.Number))
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%s: %s, want %s", c.iface, g, c.want)
		}
		for queue, n := range c.match {
			q, ok := MatchIRQ(named, c.iface, queue)
			if n < 0 && ok || n >= 0 && (!ok || q.Number != n) {
				t.Errorf("%s/%s: %v %v, want %d", c.iface, queue, q, ok, n)
			}
		}
	}
	if l, ok := ActionLabel("xhci_hcd, eth0-rx-3", "eth0"); !ok || l != "rx-3" {
		t.Errorf("shared line: %q %v", l, ok)
	}
	if _, ok := ActionLabel("eth01", "eth0"); ok {
		t.Error("eth01 taken for eth0")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
