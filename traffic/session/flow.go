package session

import (
	"time"

	"linerate/results"
)

// Flow is one engine's part of a test on one end: a sender or a receiver
// of test traffic (the UDP socket sender and receiver, the AF_PACKET ring
// sender, the TCP sender and receiver), or a companion that runs beside
// them (latency probes and their echo, the XDP counter). Each engine is a
// type with its own config; the session drives them all through these
// methods and never asks which engine it holds:
//
//	Run(tm)      once, in a goroutine of its own, from the test's start
//	Progress()   from another goroutine at any time, run or not
//	Cut(at)      at most once, before Stop, when the test ends early
//	Stop(grace)  once, from another goroutine, Run returned or not
//	Collect()    once, after Run returned
//	Close()      exactly once, last, whether Run ran or not
//
// A flow may start counting before Run (a receiver whose peer sends before
// this end's clock starts); Run then only waits for Stop.
type Flow interface {
	// Run moves traffic on the test's timing and returns when the flow is
	// over: a sender at tm.End or once stopped, a receiver once stopped
	// (or when its peer ended every stream).
	Run(tm Timing)
	// Cut says the measured window ended at at, before its planned end
	// (the run was interrupted, or the peer stopped early): a flow that
	// counts by its own clock counts what comes later as late.
	Cut(at time.Time)
	// Stop makes Run return: a sender stops sending now; a receiver takes
	// what is still in flight for at most grace.
	Stop(grace time.Duration)
	// Progress is the live total sent or received, warmup included;
	// bytes are UDP payload or TCP stream bytes.
	Progress() (packets, bytes uint64)
	// Collect is what the flow counted.
	Collect() Result
	// Close releases the flow's sockets and threads.
	Close() error
}

// Result is what a flow counted once its Run returned.
type Result struct {
	// Counts are per stream, in the measured window, by stream id.
	Counts []results.Count
	// TCP is each TCP stream's TCP_INFO at its end.
	TCP []results.TCPStat
	// Threads is how busy the flow's threads were.
	Threads []results.ThreadCPU
	// Foreign is the test datagrams a receiver got from an address other
	// than its peer's: not counted.
	Foreign uint64
	// Refused is the datagrams a sender's kernel refused (failed send
	// calls, one datagram each): not counted as sent.
	Refused uint64
	// Held is the measured datagrams a paced sender did not send while its
	// link was down (the ring and AF_XDP engines): not counted as sent.
	Held uint64
	// Err is why the flow failed, if it did.
	Err error
}

// Role says which way a flow's traffic goes on its end: the session stops
// senders first and adds up their progress apart from receivers'.
type Role int

// The roles.
const (
	Sending Role = iota
	Receiving
)

// Timing is when a test's senders run: from Start, the warmup until
// Measure, then the measured window until End.
type Timing struct {
	Start, Measure, End time.Time
}

// Progress is what one end has counted so far, at T.
type Progress struct {
	T                   time.Time
	SentPkts, SentBytes uint64
	RecvPkts, RecvBytes uint64
}
