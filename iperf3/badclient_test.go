package iperf3

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"linerate/wire"
)

// A client that says garbage, too little or nothing gets an error (or the
// connection closed) in bounded time, and the server goes on serving: the
// next client is answered.
func TestServerBadClient(t *testing.T) {
	stepTimeout = 500 * time.Millisecond
	t.Cleanup(func() { stepTimeout = 15 * time.Second })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Limits: wire.Limits{MaxRate: wire.Rate{BPS: 10e6}}, Logf: t.Logf}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ctx, ln) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	cookie := newCookie()
	length := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	params := func(js string) []byte { return append(length(uint32(len(js))), js...) }
	serverError := func(code int32) []byte {
		b := []byte{stateByte(ParamExchange), stateByte(ServerError)}
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(b, uint32(code)), 0)
	}
	for _, c := range []struct {
		name string
		say  []byte // after the cookie
		want []byte // what the server says, up to its closing
	}{
		{"silent", nil, []byte{stateByte(ParamExchange), stateByte(ServerError), 0, 0, 0, ieParams, 0, 0, 0, 0}},
		{"truncated length", []byte{0, 0}, serverError(ieParams)},
		{"truncated parameters", append(length(100), `{"tcp":true`...), serverError(ieParams)},
		{"huge length", length(1 << 30), serverError(ieParams)},
		{"garbage", params(`{"tcp":true,"udp":true,"time":1,"parallel":1}`), serverError(ieParams)},
		{"not JSON", params("\x00\xff\xfe garbage"), serverError(ieParams)},
		{"by bytes", params(`{"tcp":true,"time":0,"num":1000,"parallel":1,"omit":0,"blockcount":0}`), serverError(ieUnimp)},
		{"over the rate", params(`{"udp":true,"time":1,"parallel":2,"omit":0,"num":0,"blockcount":0,"len":1000,"bandwidth":10000000}`), serverError(ieTotalRate)},
		{"unlimited sender", params(`{"tcp":true,"time":1,"parallel":1,"omit":0,"num":0,"blockcount":0}`), serverError(ieTotalRate)},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
			start := time.Now()
			if _, err := conn.Write(append(cookie[:], c.say...)); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(conn)
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("after %s: %v (got %v)", time.Since(start), err, got)
			}
			if string(got) != string(c.want) {
				t.Errorf("server said %v, want %v", got, c.want)
			}
		})
	}

	// Busy: while one client holds the test, another is turned away as
	// iperf3 does; once it leaves, the next is served.
	first, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	_, _ = first.Write(cookie[:])
	b := make([]byte, 1)
	if _, err := io.ReadFull(first, b); err != nil || State(int8(b[0])) != ParamExchange {
		t.Fatalf("first client: %v %v", b, err)
	}
	second, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	other := newCookie()
	_, _ = second.Write(other[:])
	_ = second.SetDeadline(time.Now().Add(3 * time.Second))
	if got, _ := io.ReadAll(second); string(got) != string([]byte{stateByte(AccessDenied)}) {
		t.Errorf("second client while busy: %v, want ACCESS_DENIED", got)
	}
	first.Close()
	for idle := false; !idle; time.Sleep(10 * time.Millisecond) {
		srv.mu.Lock()
		idle = srv.cur == nil
		srv.mu.Unlock()
	}
	third, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	_, _ = third.Write(other[:])
	_ = third.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.ReadFull(third, b); err != nil || State(int8(b[0])) != ParamExchange {
		t.Errorf("third client, once the first left: %v %v", b, err)
	}
}
