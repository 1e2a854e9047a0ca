// Package traffic owns linerate's traffic engine: the UDP senders and
// receivers (batched sendmmsg/recvmmsg on preallocated buffers), the TCP
// streams, the latency probes, the control protocol spoken between
// `linerate bench` (Client) and `linerate serve` (Server), and the result of
// a test (Result) with its per-stream, per-target and total figures.
//
// The wire protocol and the JSON form of Result are documented in
// docs/bench.md. The package does not read counters itself: the caller hands
// it a Sampling function (package sample does that once a second).
package traffic
