package main

import (
	"fmt"
	"strings"
)

// queue is one hardware ring's traffic: packets and bytes each way, and the
// packet rate and size while the workload runs.
type queue struct {
	rxPkts, rxBytes, txPkts, txBytes float64
	rxPps, rxSize, txPps, txSize     float64
}

// nic is one interface's traffic counters. Its totals are the sums of its
// queues plus the static extras (multicast, broadcast, errors) the driver
// keeps.
type nic struct {
	name   string
	driver string // selects the ethtool -S layout
	queues []*queue
	// rxCPU says which CPU's softnet processes this NIC's received packets.
	rxCPU map[int]float64

	multicast, broadcast ctr // received
	txBroadcast          ctr
	rxErrs, rxDrop       ctr
	rxFifo, rxMissed     ctr
	lastRx               float64
	// ethtool -S values that are not derived from the queues (driver
	// specific extras such as tx_tcp_seg_good), by name.
	extra map[string]*ctr
}

// step advances the NIC and returns the packets received during the step.
func (n *nic) step(dt, f float64) float64 {
	rx := 0.0
	for _, q := range n.queues {
		dr := q.rxPps * dt * f
		dtx := q.txPps * dt * f
		q.rxPkts += dr
		q.rxBytes += dr * q.rxSize
		q.txPkts += dtx
		q.txBytes += dtx * q.txSize
		rx += dr
	}
	n.multicast.step(dt, 1)
	n.broadcast.step(dt, 1)
	n.txBroadcast.step(dt, 1)
	n.rxErrs.step(dt, 1)
	n.rxDrop.step(dt, 1)
	n.rxFifo.step(dt, 1)
	n.rxMissed.step(dt, 1)
	for _, c := range n.extra {
		c.step(dt, f)
	}
	n.lastRx = rx
	return rx
}

func (n *nic) sum(get func(*queue) float64) uint64 {
	s := 0.0
	for _, q := range n.queues {
		s += get(q)
	}
	return uint64(s)
}

func (n *nic) rxPackets() uint64 { return n.sum(func(q *queue) float64 { return q.rxPkts }) }
func (n *nic) rxBytes() uint64   { return n.sum(func(q *queue) float64 { return q.rxBytes }) }
func (n *nic) txPackets() uint64 { return n.sum(func(q *queue) float64 { return q.txPkts }) }
func (n *nic) txBytes() uint64   { return n.sum(func(q *queue) float64 { return q.txBytes }) }

func (n *nic) x(name string) uint64 {
	if c, ok := n.extra[name]; ok {
		return c.u()
	}
	return 0
}

// procNetDev renders /proc/net/dev (net/core/net-procfs.c: dev_seq_printf_stats).
func (b *box) procNetDev() string {
	var s strings.Builder
	s.WriteString("Inter-|   Receive                                                |  Transmit\n")
	s.WriteString(" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n")
	for _, n := range b.nics {
		fmt.Fprintf(&s, "%6s: %7d %7d %4d %4d %4d %5d %10d %9d %8d %7d %4d %4d %4d %5d %7d %10d\n",
			n.name, n.rxBytes(), n.rxPackets(), n.rxErrs.u(), n.rxDrop.u()+n.rxMissed.u(), n.rxFifo.u(), 0, 0, n.multicast.u(),
			n.txBytes(), n.txPackets(), 0, 0, 0, 0, 0, 0)
	}
	return s.String()
}

type stat struct {
	name string
	v    uint64
}

// ethtoolS renders `ethtool -S` for the NIC's driver.
func (n *nic) ethtoolS() string {
	var st []stat
	switch n.driver {
	case "igb":
		st = n.igbStats()
	case "bcmgenet":
		st = n.genetStats()
	case "r8169":
		st = n.r8169Stats()
	default:
		panic("no ethtool -S layout for " + n.driver)
	}
	var s strings.Builder
	s.WriteString("NIC statistics:\n")
	for _, x := range st {
		fmt.Fprintf(&s, "     %s: %d\n", x.name, x.v)
	}
	return s.String()
}

// igbStats follows igb_gstrings_stats and igb_gstrings_net_stats of
// drivers/net/ethernet/intel/igb/igb_ethtool.c (same list in 5.4 and 5.10),
// then the per-queue strings igb_get_strings adds: every tx queue, then
// every rx queue.
func (n *nic) igbStats() []stat {
	rxp, rxb, txp, txb := n.rxPackets(), n.rxBytes(), n.txPackets(), n.txBytes()
	st := []stat{
		{"rx_packets", rxp}, {"tx_packets", txp}, {"rx_bytes", rxb}, {"tx_bytes", txb},
		{"rx_broadcast", n.broadcast.u()}, {"tx_broadcast", n.txBroadcast.u()},
		{"rx_multicast", n.multicast.u()}, {"tx_multicast", n.x("tx_multicast")},
		{"multicast", n.multicast.u()}, {"collisions", 0},
		{"rx_crc_errors", 0}, {"rx_no_buffer_count", n.x("rx_no_buffer_count")},
		{"rx_missed_errors", n.rxMissed.u()}, {"tx_aborted_errors", 0},
		{"tx_carrier_errors", 0}, {"tx_window_errors", 0}, {"tx_abort_late_coll", 0},
		{"tx_deferred_ok", 0}, {"tx_single_coll_ok", 0}, {"tx_multi_coll_ok", 0},
		{"tx_timeout_count", 0}, {"rx_long_length_errors", 0}, {"rx_short_length_errors", 0},
		{"rx_align_errors", 0}, {"tx_tcp_seg_good", n.x("tx_tcp_seg_good")}, {"tx_tcp_seg_failed", 0},
		{"rx_flow_control_xon", 0}, {"rx_flow_control_xoff", 0},
		{"tx_flow_control_xon", 0}, {"tx_flow_control_xoff", 0},
		// GORC counts the frame check sequence too: 4 bytes a packet more.
		{"rx_long_byte_count", rxb + 4*rxp},
		{"tx_dma_out_of_sync", 0}, {"tx_smbus", 0}, {"rx_smbus", 0}, {"dropped_smbus", 0},
		{"os2bmc_rx_by_bmc", 0}, {"os2bmc_tx_by_bmc", 0}, {"os2bmc_tx_by_host", 0}, {"os2bmc_rx_by_host", 0},
		{"tx_hwtstamp_timeouts", 0}, {"tx_hwtstamp_skipped", 0}, {"rx_hwtstamp_cleared", 0},
		{"rx_errors", n.rxErrs.u()}, {"tx_errors", 0}, {"tx_dropped", 0},
		{"rx_length_errors", 0}, {"rx_over_errors", 0}, {"rx_frame_errors", 0},
		{"rx_fifo_errors", n.rxFifo.u()}, {"tx_fifo_errors", 0}, {"tx_heartbeat_errors", 0},
	}
	for i, q := range n.queues {
		st = append(st,
			stat{fmt.Sprintf("tx_queue_%d_packets", i), uint64(q.txPkts)},
			stat{fmt.Sprintf("tx_queue_%d_bytes", i), uint64(q.txBytes)},
			stat{fmt.Sprintf("tx_queue_%d_restart", i), 0})
	}
	for i, q := range n.queues {
		st = append(st,
			stat{fmt.Sprintf("rx_queue_%d_packets", i), uint64(q.rxPkts)},
			stat{fmt.Sprintf("rx_queue_%d_bytes", i), uint64(q.rxBytes)},
			stat{fmt.Sprintf("rx_queue_%d_drops", i), 0},
			stat{fmt.Sprintf("rx_queue_%d_csum_err", i), 0},
			stat{fmt.Sprintf("rx_queue_%d_alloc_failed", i), 0})
	}
	return st
}

// genetStats follows bcmgenet_gstrings_stats of
// drivers/net/ethernet/broadcom/genet/bcmgenet.c (5.10). The queues of the
// NIC are, in order, tx/rx rings 0, 1, 2, 3 and 16 (the default ring). The
// UniMAC MIB counters are 32-bit hardware registers (they wrap) and count
// the FCS in their byte counters.
func (n *nic) genetStats() []stat {
	rxp, rxb, txp, txb := n.rxPackets(), n.rxBytes(), n.txPackets(), n.txBytes()
	w := func(v float64) uint64 { return uint64(v) & 0xffffffff }
	// size classes of the hardware histogram
	var rx127, rx1518, tx127, tx1518 float64
	for _, q := range n.queues {
		if q.rxSize < 128 {
			rx127 += q.rxPkts
		} else {
			rx1518 += q.rxPkts
		}
		if q.txSize < 128 {
			tx127 += q.txPkts
		} else {
			tx1518 += q.txPkts
		}
	}
	mibRx := float64(rxp)
	mibTx := float64(txp)
	scale := func(part, whole float64, of float64) float64 {
		if whole == 0 {
			return 0
		}
		return part / whole * of
	}
	rxAll := rx127 + rx1518
	txAll := tx127 + tx1518
	st := []stat{
		{"rx_packets", rxp}, {"tx_packets", txp}, {"rx_bytes", rxb}, {"tx_bytes", txb},
		{"rx_errors", n.rxErrs.u()}, {"tx_errors", 0}, {"rx_dropped", n.rxDrop.u()}, {"tx_dropped", 0},
		{"multicast", n.multicast.u()},
		{"rx_64_octets", 0},
		{"rx_65_127_oct", w(scale(rx127, rxAll, mibRx))},
		{"rx_128_255_oct", 0}, {"rx_256_511_oct", 0}, {"rx_512_1023_oct", 0},
		{"rx_1024_1518_oct", w(scale(rx1518, rxAll, mibRx))},
		{"rx_vlan_1519_1522_oct", 0}, {"rx_1522_2047_oct", 0}, {"rx_2048_4095_oct", 0}, {"rx_4096_9216_oct", 0},
		{"rx_pkts", w(mibRx)},
		{"rx_bytes", w(scale(float64(rxb), float64(rxp), mibRx) + 4*mibRx)},
		{"rx_multicast", w(float64(n.multicast.u()) * 0.4)},
		{"rx_broadcast", w(float64(n.broadcast.u()) * 0.4)},
		{"rx_fcs", 0}, {"rx_control", 0}, {"rx_pause", 0}, {"rx_unknown", 0}, {"rx_align", 0},
		{"rx_outrange", 0}, {"rx_code", 0}, {"rx_carrier", 0}, {"rx_oversize", 0}, {"rx_jabber", 0},
		{"rx_mtu_err", 0},
		{"rx_good_pkts", w(mibRx)},
		{"rx_unicast", w(mibRx - float64(n.multicast.u())*0.4 - float64(n.broadcast.u())*0.4)},
		{"rx_ppp", 0}, {"rx_crc", 0},
		{"tx_64_octets", 0},
		{"tx_65_127_oct", w(scale(tx127, txAll, mibTx))},
		{"tx_128_255_oct", 0}, {"tx_256_511_oct", 0}, {"tx_512_1023_oct", 0},
		{"tx_1024_1518_oct", w(scale(tx1518, txAll, mibTx))},
		{"tx_vlan_1519_1522_oct", 0}, {"tx_1522_2047_oct", 0}, {"tx_2048_4095_oct", 0}, {"tx_4096_9216_oct", 0},
		{"tx_pkts", w(mibTx)},
		{"tx_multicast", 0}, {"tx_broadcast", w(float64(n.txBroadcast.u()) * 0.4)},
		{"tx_pause", 0}, {"tx_control", 0}, {"tx_fcs_err", 0}, {"tx_oversize", 0}, {"tx_defer", 0},
		{"tx_excess_defer", 0}, {"tx_single_col", 0}, {"tx_multi_col", 0}, {"tx_late_col", 0},
		{"tx_excess_col", 0}, {"tx_frags", 0}, {"tx_total_col", 0}, {"tx_jabber", 0},
		{"tx_bytes", w(scale(float64(txb), float64(txp), mibTx) + 4*mibTx)},
		{"tx_good_pkts", w(mibTx)},
		{"tx_unicast", w(mibTx - float64(n.txBroadcast.u())*0.4)},
		{"rx_runt_pkts", 0}, {"rx_runt_valid_fcs", 0}, {"rx_runt_inval_fcs_align", 0}, {"rx_runt_bytes", 0},
		{"rbuf_ovflow_cnt", 0}, {"rbuf_err_cnt", 0}, {"mdf_err_cnt", 0},
		{"alloc_rx_buff_failed", 0}, {"rx_dma_failed", 0}, {"tx_dma_failed", 0},
		{"tx_realloc_tsb", n.x("tx_realloc_tsb")}, {"tx_realloc_tsb_failed", 0},
	}
	for i, ring := range []string{"0", "1", "2", "3", "16"} {
		q := n.queues[i]
		st = append(st,
			stat{"txq" + ring + "_packets", uint64(q.txPkts)},
			stat{"txq" + ring + "_bytes", uint64(q.txBytes)},
			stat{"rxq" + ring + "_bytes", uint64(q.rxBytes)},
			stat{"rxq" + ring + "_packets", uint64(q.rxPkts)},
			stat{"rxq" + ring + "_errors", 0},
			stat{"rxq" + ring + "_dropped", 0})
	}
	return st
}

// r8169Stats follows rtl8169_gstrings of drivers/net/ethernet/realtek/r8169_main.c:
// the chip's hardware tally counters since the interface was opened. Some are
// 16 bits wide (rx_missed, align_errors, tx_aborted, tx_underrun).
func (n *nic) r8169Stats() []stat {
	rxp, txp := n.rxPackets(), n.txPackets()
	mc, bc := n.multicast.u(), n.broadcast.u()
	return []stat{
		{"tx_packets", txp}, {"rx_packets", rxp}, {"tx_errors", 0}, {"rx_errors", n.rxErrs.u()},
		{"rx_missed", n.rxMissed.u() & 0xffff}, {"align_errors", 0},
		{"tx_single_collisions", 0}, {"tx_multi_collisions", 0},
		{"unicast", (rxp - mc - bc) & 0xffffffff}, {"broadcast", bc}, {"multicast", mc & 0xffffffff},
		{"tx_aborted", 0}, {"tx_underrun", 0},
	}
}
