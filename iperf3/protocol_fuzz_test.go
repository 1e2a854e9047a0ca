package iperf3

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"
)

// FuzzDecode feeds arbitrary bytes to every decoder of what a peer sends:
// a length-prefixed message read from a connection, the parameters, the
// results, a datagram header, the UDP hello. None may panic or hang, and
// a bad message is ErrProtocol or a read error, never a success with
// nonsense in it.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"tcp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":4,"len":131072,"client_version":"3.12"}`))
	f.Add([]byte(`{"udp":true,"omit":0,"time":5,"num":0,"blockcount":0,"parallel":1,"reverse":true,"len":1000,"bandwidth":50000000,"udp_counters_64bit":1}`))
	f.Add([]byte(`{"cpu_util_total":1.5,"cpu_util_user":0.5,"cpu_util_system":1,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":1000,"retransmits":-1,"jitter":0.0001,"errors":0,"packets":1,"start_time":0,"end_time":2}]}`))
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := parseParams(b); err == nil {
			if p.TCP == p.UDP || p.Parallel < 1 || p.Parallel > maxStreams {
				t.Fatalf("accepted %+v", p)
			}
		} else if !errors.Is(err, ErrProtocol) {
			t.Fatalf("params: %v is not ErrProtocol", err)
		}
		if r, err := parseResults(b, []int{1}); err == nil {
			if len(r.Streams) != 1 || r.Streams[0].ID != 1 {
				t.Fatalf("accepted %+v", r)
			}
		} else if !errors.Is(err, ErrProtocol) {
			t.Fatalf("results: %v is not ErrProtocol", err)
		}
		parseHeader(b, len(b)%2 == 0)
		isHello(b)
		isReply(b)
		// The same bytes arriving on a control connection, then the
		// connection closing: an error or a message, never a hang.
		a, z := net.Pipe()
		go func() {
			_ = z.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = z.Write(b)
			z.Close()
		}()
		msg, err := ctrl{a}.readJSON(maxParamsJSON, time.Second, "message")
		a.Close()
		if err == nil {
			if len(b) < 4 || int(binary.BigEndian.Uint32(b)) != len(msg) || !bytes.Equal(msg, b[4:4+len(msg)]) {
				t.Fatalf("read %q from %q", msg, b)
			}
		}
	})
}
