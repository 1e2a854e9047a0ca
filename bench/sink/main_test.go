package main

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		listen, xdp          string
		ports, threads, port int
		d                    time.Duration
		want                 string // "" = valid
	}{
		{"127.0.0.1:5300", "", 1, 1, 0, time.Second, ""},
		{"", "lrb1", 1, 1, 5300, time.Second, ""},
		{"", "", 1, 1, 0, time.Second, "exactly one"},
		{"127.0.0.1:5300", "lrb1", 1, 1, 0, time.Second, "exactly one"},
		{"127.0.0.1", "", 1, 1, 0, time.Second, "-listen"},
		{"127.0.0.1:0", "", 1, 1, 0, time.Second, "-ports"},
		{"127.0.0.1:65535", "", 2, 1, 0, time.Second, "-ports"},
		{"127.0.0.1:5300", "", 1, 0, 0, time.Second, "-threads"},
		{"127.0.0.1:5300", "", 1, 1, 0, 0, "-duration"},
		{"127.0.0.1:5300", "", 1, 1, 0, time.Hour, "-duration"},
		{"", "lrb1", 1, 1, 70000, time.Second, "-port"},
	}
	for _, tt := range tests {
		err := check(tt.listen, tt.xdp, tt.ports, tt.threads, tt.port, tt.d)
		if tt.want == "" && err != nil {
			t.Errorf("%+v: %v", tt, err)
		}
		if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: error %v, want one about %s", tt, err, tt.want)
		}
	}
}

// TestRunUDP receives datagrams sent over loopback on two ports.
func TestRunUDP(t *testing.T) {
	probe, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := probe.LocalAddr().(*net.UDPAddr).Port
	probe.Close()
	if port >= 65535 {
		t.Skip("no room for a second port")
	}
	first := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan result, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := runUDP(ctx, first, 2, 2)
		done <- r
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond) // let it bind
	const n = 300
	for p := range 2 {
		c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port + p})
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if _, err := c.Write(make([]byte, 18)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Microsecond) // stay far below any buffer limit
		}
		c.Close()
	}
	r := <-done
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if r.Packets != 2*n || r.Bytes != 2*n*18 {
		t.Errorf("received %d datagrams, %d bytes; sent %d, %d", r.Packets, r.Bytes, 2*n, 2*n*18)
	}
}
