package rtnl

import "encoding/binary"

// Link is one interface as rtnetlink describes it.
type Link struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	// Kind is the link type of IFLA_INFO_KIND ("veth", "bridge", "vlan",
	// "dummy", ...); "" for a physical NIC and for loopback.
	Kind string `json:"kind,omitempty"`
	MTU  int    `json:"mtu"`
	// MaxMTU is the largest MTU the driver accepts (IFLA_MAX_MTU); 0 when
	// the kernel does not say.
	MaxMTU int `json:"max_mtu,omitempty"`
	// Qdisc is the root qdisc's kind ("noqueue", "mq", "pfifo_fast", ...).
	Qdisc      string `json:"qdisc,omitempty"`
	TxQueueLen int    `json:"txqueuelen"`
	// Peer is IFLA_LINK: a veth's peer or a VLAN's parent, as an index in
	// the peer's own namespace; 0 when absent.
	Peer int `json:"peer,omitempty"`
	// Loopback is set for the loopback device (ARPHRD_LOOPBACK).
	Loopback bool      `json:"loopback,omitempty"`
	Stats    LinkStats `json:"stats"`
}

// LinkStats is struct rtnl_link_stats64 (include/uapi/linux/if_link.h),
// field by field. Kernels before 4.6 have no RxNohandler and before 5.19 no
// RxOtherhostDropped: those read 0 there.
type LinkStats struct {
	RxPackets          uint64 `json:"rx_packets"`
	TxPackets          uint64 `json:"tx_packets"`
	RxBytes            uint64 `json:"rx_bytes"`
	TxBytes            uint64 `json:"tx_bytes"`
	RxErrors           uint64 `json:"rx_errors"`
	TxErrors           uint64 `json:"tx_errors"`
	RxDropped          uint64 `json:"rx_dropped"`
	TxDropped          uint64 `json:"tx_dropped"`
	Multicast          uint64 `json:"multicast"`
	Collisions         uint64 `json:"collisions"`
	RxLengthErrors     uint64 `json:"rx_length_errors"`
	RxOverErrors       uint64 `json:"rx_over_errors"`
	RxCRCErrors        uint64 `json:"rx_crc_errors"`
	RxFrameErrors      uint64 `json:"rx_frame_errors"`
	RxFifoErrors       uint64 `json:"rx_fifo_errors"`
	RxMissedErrors     uint64 `json:"rx_missed_errors"`
	TxAbortedErrors    uint64 `json:"tx_aborted_errors"`
	TxCarrierErrors    uint64 `json:"tx_carrier_errors"`
	TxFifoErrors       uint64 `json:"tx_fifo_errors"`
	TxHeartbeatErrors  uint64 `json:"tx_heartbeat_errors"`
	TxWindowErrors     uint64 `json:"tx_window_errors"`
	RxCompressed       uint64 `json:"rx_compressed"`
	TxCompressed       uint64 `json:"tx_compressed"`
	RxNohandler        uint64 `json:"rx_nohandler"`
	RxOtherhostDropped uint64 `json:"rx_otherhost_dropped"`
}

// fields lists the counters in the order of struct rtnl_link_stats64.
func (s *LinkStats) fields() []*uint64 {
	return []*uint64{
		&s.RxPackets, &s.TxPackets, &s.RxBytes, &s.TxBytes, &s.RxErrors, &s.TxErrors,
		&s.RxDropped, &s.TxDropped, &s.Multicast, &s.Collisions, &s.RxLengthErrors,
		&s.RxOverErrors, &s.RxCRCErrors, &s.RxFrameErrors, &s.RxFifoErrors, &s.RxMissedErrors,
		&s.TxAbortedErrors, &s.TxCarrierErrors, &s.TxFifoErrors, &s.TxHeartbeatErrors,
		&s.TxWindowErrors, &s.RxCompressed, &s.TxCompressed, &s.RxNohandler, &s.RxOtherhostDropped,
	}
}

// Sub returns s − a field by field; a counter that went backwards (the
// interface was recreated) gives 0.
func (s LinkStats) Sub(a LinkStats) LinkStats {
	var d LinkStats
	df, sf, af := d.fields(), s.fields(), a.fields()
	for i := range df {
		if *sf[i] > *af[i] {
			*df[i] = *sf[i] - *af[i]
		}
	}
	return d
}

// UnmarshalBinary reads struct rtnl_link_stats64 (IFLA_STATS64) in the
// host's byte order: as many u64 counters as b holds, so the shorter struct
// of an older kernel leaves the newer counters 0.
func (s *LinkStats) UnmarshalBinary(b []byte) error {
	*s = LinkStats{}
	for i, f := range s.fields() {
		if len(b) < (i+1)*8 {
			break
		}
		*f = binary.NativeEndian.Uint64(b[i*8:])
	}
	return nil
}
