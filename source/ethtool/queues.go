package ethtool

import (
	"strconv"
	"strings"
)

// QueueStat is one queue's counters from a driver's statistics; a
// counter the driver does not have is nil. Drops is what the driver
// dropped on the queue: igb's rx_queue_N_drops are its ring's overflows
// (counted in rx_fifo_errors too), virtio_net's its own receive errors
// and XDP drops.
type QueueStat struct{ Packets, Bytes, Drops *uint64 }

// QueueStats picks the per-queue packet and byte counters out of a driver's
// statistics, by queue index. Drivers name them differently:
//
//	rx_queue_0_packets  tx_queue_0_bytes   igb, ixgbe, ice, virtio_net (older)
//	rx-0.packets        tx-0.bytes         i40e, iavf
//	rx0_packets         tx0_bytes          mlx5, virtio_net
//	rxq0_packets        txq0_bytes         bcmgenet
//	queue_0_rx_packets  queue_0_tx_bytes
//
// Only these exact shapes count (with _drops too): veth's
// rx_queue_0_xdp_packets, for one, are XDP packets and not the queue's
// traffic, and virtio_net's rx_queue_0_xdp_drops a part of its drops.
//
// bcmgenet numbers its counters by hardware ring, not by queue: ring 16 is
// the default ring behind queue 0 and rings 0-3 are queues 1-4 (the
// mapping bcmgenet_xmit applies, drivers/net/ethernet/broadcom/genet/
// bcmgenet.c).
func QueueStats(stats Stats, driver string) (rx, tx map[int]QueueStat) {
	rx, tx = map[int]QueueStat{}, map[int]QueueStat{}
	for i := range stats {
		dir, q, field, ok := parseQueueStat(stats[i].Name)
		if !ok {
			continue
		}
		q = driverQueue(driver, q)
		m := rx
		if dir == 't' {
			m = tx
		}
		s := m[q]
		v := stats[i].Value
		switch field {
		case "packets":
			s.Packets = &v
		case "bytes":
			s.Bytes = &v
		default:
			s.Drops = &v
		}
		m[q] = s
	}
	return rx, tx
}

// driverQueue is the queue a driver's per-queue statistic numbered q
// belongs to: q, but for bcmgenet's rings (16 is queue 0, ring N queue
// N+1).
func driverQueue(driver string, q int) int {
	if driver != "bcmgenet" {
		return q
	}
	if q == 16 {
		return 0
	}
	return q + 1
}

// parseQueueStat reads a per-queue statistic's name: its direction ('r'
// or 't'), queue and field ("packets", "bytes" or "drops").
func parseQueueStat(name string) (dir byte, q int, field string, ok bool) {
	if rest, found := strings.CutPrefix(name, "queue_"); found {
		// queue_0_rx_packets: the queue first.
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i > 6 {
			return 0, 0, "", false
		}
		q, _ = strconv.Atoi(rest[:i])
		switch rest[i:] {
		case "_rx_packets", "_tx_packets":
			return rest[i+1], q, "packets", true
		case "_rx_bytes", "_tx_bytes":
			return rest[i+1], q, "bytes", true
		case "_rx_drops", "_tx_drops":
			return rest[i+1], q, "drops", true
		}
		return 0, 0, "", false
	}
	if len(name) < 3 || (name[:2] != "rx" && name[:2] != "tx") {
		return 0, 0, "", false
	}
	dir = name[0]
	rest := name[2:]
	for _, p := range []string{"_queue_", "-", "q", ""} {
		if !strings.HasPrefix(rest, p) {
			continue
		}
		r := rest[len(p):]
		i := 0
		for i < len(r) && r[i] >= '0' && r[i] <= '9' {
			i++
		}
		if i == 0 || i > 6 {
			continue
		}
		q, _ = strconv.Atoi(r[:i])
		switch r[i:] {
		case "_packets", ".packets":
			return dir, q, "packets", true
		case "_bytes", ".bytes":
			return dir, q, "bytes", true
		case "_drops", ".drops":
			return dir, q, "drops", true
		}
	}
	return 0, 0, "", false
}

// maxQueues bounds the queues RxQueuePackets reads: more than any NIC
// has, few enough that a result carrying them stays small.
const maxQueues = 1024

// RxQueuePackets is the packets each receive queue counted, queue 0
// first, from a driver's statistics (QueueStats); nil when the driver
// counts none per queue (veth, for one).
func RxQueuePackets(stats Stats, driver string) []uint64 {
	rx, _ := QueueStats(stats, driver)
	var out []uint64
	for q, s := range rx {
		if s.Packets == nil || q >= maxQueues {
			continue
		}
		if q >= len(out) {
			out = append(out, make([]uint64, q+1-len(out))...)
		}
		out[q] = *s.Packets
	}
	return out
}

// RxQueueRates is RxQueuePackets over per-second rates of a driver's
// statistics (box.Rates' ethtool map): each receive queue's packets per
// second, queue 0 first; nil when the driver counts none per queue.
func RxQueueRates(rates map[string]float64, driver string) []float64 {
	var out []float64
	for name, v := range rates {
		dir, q, field, ok := parseQueueStat(name)
		if !ok || dir != 'r' || field != "packets" {
			continue
		}
		if q = driverQueue(driver, q); q >= maxQueues {
			continue
		}
		if q >= len(out) {
			out = append(out, make([]float64, q+1-len(out))...)
		}
		out[q] = v
	}
	return out
}

// RxQueueDrops is what a driver dropped on each receive queue, from its
// statistics by name (a box.Drops delta's ethtool map): the per-queue
// drops counters QueueStats reads, by queue; nil when it counts none or
// none dropped.
func RxQueueDrops(stats map[string]uint64) map[int]uint64 {
	var out map[int]uint64
	for name, v := range stats {
		dir, q, field, ok := parseQueueStat(name)
		if !ok || dir != 'r' || field != "drops" || v == 0 {
			continue
		}
		if out == nil {
			out = map[int]uint64{}
		}
		out[q] += v
	}
	return out
}
