package traffic

import (
	"net/netip"

	"linerate/wire"
)

// tcpSender is how this test's TCP senders write.
func tcpSenderOf(s *wire.Spec) tcpSendConfig {
	return tcpSendConfig{mss: s.MSS, payload: s.Payload, rate: s.Rate, zeroCopy: s.ZeroCopy, threads: s.Threads}
}

// udpReceiver is this test's UDP receiver on local, counting what comes
// from peer and from the client's other source addresses (Spec.Sources).
func udpReceiverOf(s *wire.Spec, local, peer netip.Addr, cpus []int) udpRecvConfig {
	var peers []netip.Addr
	if peer.IsValid() {
		peers = append([]netip.Addr{peer}, s.Sources...)
	}
	return udpRecvConfig{local: local, peers: peers, ports: s.Ports, threads: s.Threads, rcvbuf: s.RecvBuf, cpus: cpus, mix: s.Mixed()}
}
