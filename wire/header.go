package wire

import (
	"encoding/binary"
	"time"
)

// Every UDP test datagram starts with a 16-byte header, big-endian:
//
//	0      magic 0xA7
//	1      flags (flagWarmup, flagProbe, flagReply)
//	2-3    stream id
//	4-7    sequence number within the stream and phase (wraps)
//	8-15   send time, nanoseconds since the Unix epoch
//
// 16 bytes fit in the 18-byte payload of a 64-byte Ethernet frame carrying
// IPv4 and UDP.
//
// A latency probe is ProbeLen bytes: the header, then 8 bytes (16-23) in
// which the echo writes how long it held the probe, in nanoseconds from
// the kernel's receipt to its reply, so that the round trip can leave out
// the time the echo took to be scheduled. An echo that does not know them
// returns them as sent, zero.
const (
	HeaderLen   = 16
	ProbeLen    = HeaderLen + 8
	headerMagic = 0xA7

	FlagWarmup = 1 << 0 // sent during warmup: counted apart, not in results
	FlagProbe  = 1 << 1 // a latency probe
	FlagReply  = 1 << 2 // a probe's echo
)

// Header is the decoded form of a test datagram's header.
type Header struct {
	Flags  byte
	Stream uint16
	Seq    uint32
	Sent   int64 // ns since the epoch
}

// PutHeader writes h at the start of b, which must hold headerLen bytes.
func PutHeader(b []byte, h Header) {
	_ = b[HeaderLen-1]
	b[0] = headerMagic
	b[1] = h.Flags
	binary.BigEndian.PutUint16(b[2:], h.Stream)
	binary.BigEndian.PutUint32(b[4:], h.Seq)
	binary.BigEndian.PutUint64(b[8:], uint64(h.Sent))
}

// ParseHeader decodes the header at the start of b; ok is false for a
// datagram that is too short or lacks the magic byte.
func ParseHeader(b []byte) (h Header, ok bool) {
	if len(b) < HeaderLen || b[0] != headerMagic {
		return Header{}, false
	}
	h.Flags = b[1]
	h.Stream = binary.BigEndian.Uint16(b[2:])
	h.Seq = binary.BigEndian.Uint32(b[4:])
	h.Sent = int64(binary.BigEndian.Uint64(b[8:]))
	return h, true
}

// SentTime is the send time as a time.Time.
func (h Header) SentTime() time.Time { return time.Unix(0, h.Sent) }

// PutHeld writes an echo's hold time into probe b (ProbeLen bytes or more).
func PutHeld(b []byte, d time.Duration) {
	binary.BigEndian.PutUint64(b[HeaderLen:], uint64(max(d, 0)))
}

// Held is the hold time an echo wrote into probe b, 0 when b is too short
// to carry one.
func Held(b []byte) time.Duration {
	if len(b) < ProbeLen {
		return 0
	}
	return time.Duration(binary.BigEndian.Uint64(b[HeaderLen:]))
}
