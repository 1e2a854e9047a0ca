// Package traffic owns linerate's traffic engine: the UDP senders and
// receivers (batched sendmmsg/recvmmsg on preallocated buffers, and the
// AF_PACKET ring), the TCP streams, the latency probes, the control
// protocol spoken between `linerate bench` (Client) and `linerate serve`
// (Server) — its messages framed here from the types of package wire —
// and the assembly of what both ends counted into a results.Result.
//
// A test runs the same way on both ends: a session (traffic/session) starts its
// flows on one timing, ticks once a second, stops them in order (senders,
// then receivers, then sampling), collects what they counted and closes
// them. Every engine is a flow, a type with its own config behind one
// small interface; a new UDP send engine is a flow type and an entry in
// udpEngines (engine.go). The client (client.go, target.go, assemble.go)
// and the server (server.go, served.go: one test as the server runs it) only say which flows a test
// has and what to do with their counts.
//
// What travels (Spec, Accept, the datagram header) is package wire; what a
// test found out and its verdict is package results, so that what reads a
// result does not link the engine. The wire protocol and the JSON form of
// Result are documented in docs/bench.md. The package does not read counters itself: the caller hands
// it a session.Sampling function (package sample does that once a second).
package traffic
