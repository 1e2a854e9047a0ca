package iperf3

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"linerate/wire"
)

// A server that says the wrong thing, too little, or nothing at all ends
// the client's test with an error naming the step, in bounded time.
func TestClientBadServer(t *testing.T) {
	stepTimeout = 500 * time.Millisecond
	t.Cleanup(func() { stepTimeout = 15 * time.Second })
	for _, c := range []struct {
		name string
		say  []byte // after reading the cookie
		want string
		is   error
	}{
		{"wrong state", []byte{byte(TestRunning)}, "got TEST_RUNNING, want PARAM_EXCHANGE", ErrProtocol},
		{"denied", []byte{stateByte(AccessDenied)}, "access denied", ErrDenied},
		{"server error", append([]byte{stateByte(ServerError)}, 0, 0, 0, 27, 0, 0, 0, 0), "larger than the server's limit", nil},
		{"server error cut", []byte{stateByte(ServerError), 0, 0}, "SERVER_ERROR's codes", os.ErrDeadlineExceeded},
		{"silent", nil, "waiting for PARAM_EXCHANGE", os.ErrDeadlineExceeded},
		{"closes", []byte{}, "waiting for PARAM_EXCHANGE", io.EOF},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				_, _ = io.ReadFull(conn, make([]byte, CookieLen))
				if c.say != nil {
					_, _ = conn.Write(c.say)
				}
				if len(c.say) == 0 && c.say != nil {
					return // close at once
				}
				time.Sleep(2 * time.Second)
			}()
			start := time.Now()
			sp := wire.Spec{Proto: wire.TCP, Direction: wire.Forward, Duration: wire.Seconds(time.Second), Streams: 1}
			_, err = Run(context.Background(), Config{Target: "iperf3://" + ln.Addr().String(), Spec: sp})
			if err == nil {
				t.Fatal("no error")
			}
			if time.Since(start) > 1500*time.Millisecond {
				t.Errorf("took %s", time.Since(start))
			}
			if !strings.Contains(err.Error(), c.want) || c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q, want %q (%v)", err, c.want, c.is)
			}
		})
	}
}

// TestResultsLengthLimit: a results message announced longer than the
// limit is refused from its length alone, before anything is allocated or
// read for it (the peer that announced it is never waited for).
func TestResultsLengthLimit(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go b.Write(binary.BigEndian.AppendUint32(nil, 1<<30))
	_, err := ctrl{a}.readJSON(maxResultsJSON, time.Second, "the server's results")
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), fmt.Sprintf("length %d, want 1 to %d bytes", 1<<30, maxResultsJSON)) {
		t.Errorf("err %v, want the length refused", err)
	}
}
