package procfs

import (
	"strconv"
	"strings"
	"testing"
)

// Names as kernels print them: igb ("eth0", "eth0-TxRx-N"), a driver with
// split vectors ("enp4s0-rx-0", "enp4s0-tx-0"), the Pi's GENET (two lines
// both "eth0", seed 002's IRQs 41 and 42), mlx5 (named after the PCI
// function, not the interface).
func TestNameIRQs(t *testing.T) {
	cases := []struct {
		iface   string
		actions map[int]string
		want    string
		match   map[string]int
	}{
		{"eth0", map[int]string{41: "eth0", 42: "eth0-TxRx-0", 43: "eth0-TxRx-1"},
			"eth0/#0=41 eth0/TxRx-0=42 eth0/TxRx-1=43", map[string]int{"rx-1": 43, "tx-0": 42, "txrx-1": 43, "#0": 41}},
		{"enp4s0", map[int]string{60: "enp4s0-rx-0", 61: "enp4s0-tx-0", 62: "enp4s0"},
			"enp4s0/rx-0=60 enp4s0/tx-0=61 enp4s0/#2=62", map[string]int{"rx-0": 60, "tx-0": 61}},
		{"eth0", map[int]string{42: "eth0", 41: "eth0"}, "eth0/#0=41 eth0/#1=42", map[string]int{"#1": 42, "rx-0": -1}},
		{"enp1s0f0", map[int]string{90: "mlx5_async@pci:0000:01:00.0", 91: "mlx5_comp0@pci:0000:01:00.0"},
			"enp1s0f0/#0=90 enp1s0f0/#1=91", map[string]int{"#1": 91}},
	}
	for _, c := range cases {
		var nums []int
		for n := range c.actions {
			nums = append(nums, n)
		}
		named := NameIRQs(c.iface, nums, c.actions)
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
