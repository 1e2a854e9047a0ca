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
// from peer.
func udpReceiverOf(s *wire.Spec, local, peer netip.Addr, cpus []int) udpRecvConfig {
	return udpRecvConfig{local: local, peer: peer, ports: s.Ports, threads: s.Threads, rcvbuf: s.RecvBuf, cpus: cpus, mix: s.Mixed()}
}
