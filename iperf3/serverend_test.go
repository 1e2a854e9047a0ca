package iperf3

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// A reverse-mode iperf3 3.12 client, once it sent TEST_END, reads its
// data streams on blocking sockets, each read wanting a whole block,
// before it looks at the control connection again (iperf_run_client):
// the server must end the streams then, or the client never reads
// EXCHANGE_RESULTS. This client does the same, bounded in time.
func TestServerEndsStreamsOnTestEnd(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Logf: t.Logf}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ctx, ln) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	expect := func(c net.Conn, want ...State) {
		t.Helper()
		b := make([]byte, len(want))
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatalf("waiting for %v: %v", want, err)
		}
		for i, s := range want {
			if State(int8(b[i])) != s {
				t.Fatalf("server said %v, want %v", b, want)
			}
		}
	}
	cookie := newCookie()
	ctl := dial()
	if _, err := ctl.Write(cookie[:]); err != nil {
		t.Fatal(err)
	}
	expect(ctl, ParamExchange)
	// 100 Mbit/s: enough that the stream is busy when the test ends.
	js := `{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"reverse":true,"len":131072,"bandwidth":100000000}`
	if _, err := ctl.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(js))), js...)); err != nil {
		t.Fatal(err)
	}
	expect(ctl, CreateStreams)
	data := dial()
	if _, err := data.Write(cookie[:]); err != nil {
		t.Fatal(err)
	}
	expect(ctl, TestStart, TestRunning)
	buf := make([]byte, 128<<10)
	var got int64
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		n, err := data.Read(buf)
		got += int64(n)
		if err != nil {
			t.Fatalf("data after %d bytes: %v", got, err)
		}
	}
	if _, err := ctl.Write([]byte{stateByte(TestEnd)}); err != nil {
		t.Fatal(err)
	}
	// As the client's drain: read on until the stream ends.
	_ = data.SetReadDeadline(time.Now().Add(3 * time.Second))
	late, err := io.Copy(io.Discard, data)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatalf("the server did not end its data stream within 3 s of TEST_END (%d bytes before, %d after)", got, late)
	case err != nil:
		t.Fatalf("data after TEST_END: %v", err)
	}
	expect(ctl, ExchangeResults)
	t.Logf("%d bytes before TEST_END, %d after", got, late)
}
