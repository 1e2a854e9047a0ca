package traffic

import (
	"linerate/wire"
)

// tcpSender is how this test's TCP senders write.
func tcpSenderOf(s *wire.Spec) tcpSendConfig {
	return tcpSendConfig{mss: s.MSS, payload: s.Payload, rate: s.Rate, zeroCopy: s.ZeroCopy, threads: s.Threads}
}
