// Package traffic runs linerate's tests: the client of `linerate bench`
// (Run, RunSearch), the server and agent of `linerate serve` (Server), the
// third-party flows a controller asks of agents (RunFlow, PrepareFlow,
// StartSampling), and the control protocol between them, framed here from
// the types of package wire. It assembles what both ends counted into a
// results.Result.
//
// The engines are its sub-packages, each a room of its own, and a test
// runs the same way on both ends: a session (traffic/session) starts its
// flows on one timing, ticks once a second, stops them in order (senders,
// then receivers, then the sampling), collects what they counted and
// closes them. Every engine is a session flow: the socket engine
// (traffic/udp), the ring and AF_XDP (traffic/frame), the TCP streams
// (traffic/tcp), the transactions and latency probes (traffic/rr) and the
// receive meters (traffic/meter), all built on the socket calls of
// traffic/sock. Imports point down that list, never back up;
// docs/architecture.md draws it.
//
// The files of this package stand on floors too, each using only those
// below it:
//
//	door.go, pathmtu.go, nat.go        admission, the path MTU, NAT punching
//	config.go, searchconfig.go         what a run and a search are asked
//	timeouts.go, flow.go, mix.go       the protocol's clocks, a flow's ask, a mix's sizes
//	protocol.go, auth.go               the messages, their framing, the handshake
//	target.go, clientrun.go            one target; the state of one run
//	engine.go, open.go, frames.go      the socket engine, a target's flows, ring and AF_XDP
//	auto.go, assemble.go, client.go    --engine auto; the result; Run
//	zeroloss.go                        RunSearch
//	controller.go                      a controller's side of third-party flows
//	server.go, served.go, agent.go     the server, one test on it, an agent's flows
//	serve.go                           accepting and speaking to control connections
//
// What travels (Spec, Accept, the datagram header) is package wire; what a
// test found out and its verdict is package results, so that what reads a
// result does not link the engine. The wire protocol and the JSON form of
// Result are documented in docs/bench.md. The package does not read
// counters itself: the caller hands it a session.Sampling function
// (package sample does that once a second).
package traffic
