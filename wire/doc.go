// Package wire owns what travels between linerate's ends and what must
// read the same on both: the test a client asks for (Spec, Rate, Seconds),
// a server's answer and limits (Accept, Limits, Interval), the message
// types of the control protocol and the error codes an end reports, the
// handshake's nonces and proofs, the UDP datagram header and the TCP data
// connection's hello. It holds no sockets and no engine: package traffic
// frames these into messages and moves them; docs/bench.md documents the
// protocol.
package wire
