package traffic

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
const (
	headerLen   = 16
	headerMagic = 0xA7

	flagWarmup = 1 << 0 // sent during warmup: counted apart, not in results
	flagProbe  = 1 << 1 // a latency probe
	flagReply  = 1 << 2 // a probe's echo
)

// header is the decoded form of a test datagram's header.
type header struct {
	flags  byte
	stream uint16
	seq    uint32
	sent   int64 // ns since the epoch
}

// putHeader writes h at the start of b, which must hold headerLen bytes.
func putHeader(b []byte, h header) {
	_ = b[headerLen-1]
	b[0] = headerMagic
	b[1] = h.flags
	binary.BigEndian.PutUint16(b[2:], h.stream)
	binary.BigEndian.PutUint32(b[4:], h.seq)
	binary.BigEndian.PutUint64(b[8:], uint64(h.sent))
}

// parseHeader decodes the header at the start of b; ok is false for a
// datagram that is too short or lacks the magic byte.
func parseHeader(b []byte) (h header, ok bool) {
	if len(b) < headerLen || b[0] != headerMagic {
		return header{}, false
	}
	h.flags = b[1]
	h.stream = binary.BigEndian.Uint16(b[2:])
	h.seq = binary.BigEndian.Uint32(b[4:])
	h.sent = int64(binary.BigEndian.Uint64(b[8:]))
	return h, true
}

// sentTime is the send time as a time.Time.
func (h header) sentTime() time.Time { return time.Unix(0, h.sent) }
