package results

// BypassesQdisc reports whether the send engine named (Result.Engine)
// hands its frames to the driver below the sending interface's qdiscs:
// the ring (AF_PACKET with PACKET_QDISC_BYPASS) and AF_XDP. A shaper
// there does not shape what they send, so it is no part of their path's
// ceiling.
func BypassesQdisc(engine string) bool {
	return engine == "ring" || engine == "xdp"
}
