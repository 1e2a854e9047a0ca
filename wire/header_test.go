package wire

import (
	"testing"
	"time"
)

func TestHeaderRoundTrip(t *testing.T) {
	b := make([]byte, 18)
	want := Header{Flags: FlagWarmup, Stream: 513, Seq: 0xfffffffe, Sent: time.Date(2026, 11, 22, 6, 40, 0, 123, time.UTC).UnixNano()}
	PutHeader(b, want)
	got, ok := ParseHeader(b)
	if !ok || got != want {
		t.Fatalf("parseHeader = %+v, %v; want %+v", got, ok, want)
	}
	if !got.SentTime().Equal(time.Unix(0, want.Sent)) {
		t.Errorf("sentTime = %v", got.SentTime())
	}
	// The layout is the documented one (docs/bench.md).
	if b[0] != 0xA7 || b[1] != 1 || b[2] != 2 || b[3] != 1 || b[4] != 0xff || b[7] != 0xfe {
		t.Errorf("bytes % x", b[:8])
	}
}

func TestHeaderRejects(t *testing.T) {
	for _, b := range [][]byte{nil, make([]byte, 15), append([]byte{0x00}, make([]byte, 17)...)} {
		if _, ok := ParseHeader(b); ok {
			t.Errorf("parseHeader(% x) accepted", b)
		}
	}
}
