package ethtool

import "testing"

func TestParseQueueStat(t *testing.T) {
	cases := []struct {
		name  string
		dir   byte
		q     int
		field string
		ok    bool
	}{
		{"rx_queue_0_packets", 'r', 0, "packets", true}, // igb, ixgbe
		{"tx_queue_3_bytes", 't', 3, "bytes", true},
		{"rx-12.packets", 'r', 12, "packets", true}, // i40e
		{"tx-0.bytes", 't', 0, "bytes", true},
		{"rx0_packets", 'r', 0, "packets", true}, // mlx5, virtio_net
		{"tx15_bytes", 't', 15, "bytes", true},
		{"rxq2_packets", 'r', 2, "packets", true}, // bcmgenet
		{"queue_3_rx_packets", 'r', 3, "packets", true},
		{"queue_0_tx_bytes", 't', 0, "bytes", true},
		{"queue_0_rx_drops", 'r', 0, "drops", true},
		{"queue__rx_packets", 0, 0, "", false},
		{"rx_queue_0_xdp_packets", 0, 0, "", false}, // veth: XDP, not the queue's traffic
		{"rx_queue_0_drops", 'r', 0, "drops", true}, // igb, virtio_net
		{"rx1_drops", 'r', 1, "drops", true},
		{"rx_queue_0_xdp_drops", 0, 0, "", false},
		{"rx0_kicks", 0, 0, "", false},
		{"rx_packets", 0, 0, "", false},
		{"rx_bytes", 0, 0, "", false},
		{"tx_queue__packets", 0, 0, "", false},
		{"rx_queue_0_packets_x", 0, 0, "", false},
		{"txq", 0, 0, "", false},
	}
	for _, c := range cases {
		dir, q, field, ok := parseQueueStat(c.name)
		if ok != c.ok || dir != c.dir || q != c.q || field != c.field {
			t.Errorf("parseQueueStat(%q) = %c %d %q %v, want %c %d %q %v", c.name, dir, q, field, ok, c.dir, c.q, c.field, c.ok)
		}
	}
}

func TestQueueStats(t *testing.T) {
	// A slice of `ethtool -S` of an igb port and of a veth.
	igb := Stats{{Name: "rx_packets", Value: 900}, {Name: "tx_queue_0_packets", Value: 5}, {Name: "tx_queue_0_bytes", Value: 500},
		{Name: "rx_queue_0_packets", Value: 400}, {Name: "rx_queue_0_bytes", Value: 40000}, {Name: "rx_queue_1_packets", Value: 500}, {Name: "rx_queue_1_bytes", Value: 50000}}
	rx, tx := QueueStats(igb, "igb")
	if len(rx) != 2 || *rx[1].Packets != 500 || *rx[1].Bytes != 50000 || *tx[0].Packets != 5 {
		t.Errorf("igb: rx %v tx %v", rx, tx)
	}
	veth := Stats{{Name: "peer_ifindex", Value: 5}, {Name: "rx_queue_0_xdp_packets", Value: 7}, {Name: "rx_queue_0_xdp_bytes", Value: 700}, {Name: "tx_queue_0_xdp_xmit", Value: 1}}
	if rx, tx := QueueStats(veth, "veth"); len(rx) != 0 || len(tx) != 0 {
		t.Errorf("veth XDP counters taken for queue counters: %v %v", rx, tx)
	}
	genet := Stats{{Name: "txq0_packets", Value: 4}, {Name: "txq3_packets", Value: 7}, {Name: "txq16_packets", Value: 500},
		{Name: "rxq0_packets", Value: 0}, {Name: "rxq16_packets", Value: 900}}
	rx, tx = QueueStats(genet, "bcmgenet")
	if *tx[0].Packets != 500 || *tx[1].Packets != 4 || *tx[4].Packets != 7 || *rx[0].Packets != 900 || *rx[1].Packets != 0 {
		t.Errorf("bcmgenet rings 16, 0, 3 are not queues 0, 1, 4: rx %v tx %v", rx, tx)
	}
}

func TestRxQueuePackets(t *testing.T) {
	igb := Stats{{Name: "rx_packets", Value: 900}, {Name: "rx_queue_1_packets", Value: 500}, {Name: "rx_queue_0_packets", Value: 400}, {Name: "tx_queue_2_packets", Value: 3}}
	if got := RxQueuePackets(igb, "igb"); len(got) != 2 || got[0] != 400 || got[1] != 500 {
		t.Errorf("igb: %v, want [400 500]", got)
	}
	veth := Stats{{Name: "peer_ifindex", Value: 5}, {Name: "rx_queue_0_xdp_packets", Value: 7}}
	if got := RxQueuePackets(veth, "veth"); got != nil {
		t.Errorf("veth: %v, want none", got)
	}
}

func TestRxQueueRates(t *testing.T) {
	// Rates of a virtio_net guest's ethtool -S (Debian's 6.1).
	virtio := map[string]float64{"rx_queue_0_packets": 12.5, "rx_queue_0_drops": 0, "rx_queue_0_xdp_packets": 0,
		"rx_queue_1_packets": 3000, "rx_queue_3_packets": 1, "tx_queue_1_packets": 9}
	if got := RxQueueRates(virtio, "virtio_net"); len(got) != 4 || got[0] != 12.5 || got[1] != 3000 || got[2] != 0 || got[3] != 1 {
		t.Errorf("virtio_net: %v, want [12.5 3000 0 1]", got)
	}
	if got := RxQueueRates(map[string]float64{"rxq16_packets": 900, "rxq0_packets": 4}, "bcmgenet"); len(got) != 2 || got[0] != 900 || got[1] != 4 {
		t.Errorf("bcmgenet: %v, want ring 16 as queue 0", got)
	}
	if got := RxQueueRates(map[string]float64{"rx_queue_0_xdp_packets": 7}, "veth"); got != nil {
		t.Errorf("veth: %v, want none", got)
	}
}

func TestRxQueueDrops(t *testing.T) {
	// A delta of a virtio_net guest's ethtool -S: queue 1 dropped 30, 10
	// of them by XDP (a part of its drops, not counted again).
	got := RxQueueDrops(map[string]uint64{"rx_queue_0_drops": 0, "rx_queue_1_drops": 30, "rx_queue_1_xdp_drops": 10,
		"rx_queue_1_packets": 900, "tx_queue_1_drops": 4})
	if len(got) != 1 || got[1] != 30 {
		t.Errorf("virtio_net: %v, want queue 1: 30", got)
	}
	if got := RxQueueDrops(map[string]uint64{"rx_queue_0_packets": 5}); got != nil {
		t.Errorf("no drops: %v", got)
	}
}
