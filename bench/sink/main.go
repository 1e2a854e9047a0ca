// Command sink is the receiver bench/compare.sh puts behind senders that
// have none of their own (trafgen): UDP sockets read with recvmmsg on
// SO_REUSEPORT threads, or an XDP program that counts and drops. It runs for
// a bounded time and then prints what it received as one JSON line. The
// benchmark does not use these numbers for its table — it reads the
// receiving namespace's kernel counters, the same way for every tool — but
// they are a cross-check.
//
//	sink -listen 10.203.0.2:5300 -threads 2 -duration 10s
//	sink -xdp-drop lrb1 -port 5300 -duration 10s
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"linerate/source/xdpcount"
)

// result is the line the sink prints when it ends.
type result struct {
	Mode    string  `json:"mode"`
	Packets uint64  `json:"packets"`
	Bytes   uint64  `json:"bytes"`
	Seconds float64 `json:"seconds"`
	XDPMode string  `json:"xdp_mode,omitempty"`
}

func main() {
	var (
		listen   = flag.String("listen", "", "receive UDP on `ADDR:PORT` (the first of -ports consecutive ports)")
		ports    = flag.Int("ports", 1, "number of consecutive UDP ports to receive on")
		threads  = flag.Int("threads", 1, "receiver threads, each with its own SO_REUSEPORT socket per port")
		duration = flag.Duration("duration", 10*time.Second, "stop after this long (at most 10 minutes)")
		xdpDrop  = flag.String("xdp-drop", "", "instead of sockets, count and drop UDP with an XDP program on `IFACE`")
		port     = flag.Int("port", 0, "with -xdp-drop: only packets to this UDP destination port (0: all)")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: sink -listen ADDR:PORT [-ports N] [-threads N] [-duration D]\n       sink -xdp-drop IFACE [-port P] [-duration D]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := check(*listen, *xdpDrop, *ports, *threads, *port, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()

	var (
		r   result
		err error
	)
	start := time.Now()
	if *xdpDrop != "" {
		r, err = runXDP(ctx, *xdpDrop, uint16(*port))
	} else {
		r, err = runUDP(ctx, netip.MustParseAddrPort(*listen), *ports, *threads)
	}
	r.Seconds = time.Since(start).Seconds()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

// check validates the flags, as one line.
func check(listen, xdpDrop string, ports, threads, port int, d time.Duration) error {
	switch {
	case (listen == "") == (xdpDrop == ""):
		return errors.New("give exactly one of -listen and -xdp-drop")
	case d <= 0 || d > 10*time.Minute:
		return fmt.Errorf("-duration %v: want more than 0 and at most 10m", d)
	case port < 0 || port > 65535:
		return fmt.Errorf("-port %d: want 0 to 65535", port)
	}
	if listen != "" {
		ap, err := netip.ParseAddrPort(listen)
		if err != nil {
			return fmt.Errorf("-listen %q: %w", listen, err)
		}
		if ports < 1 || int(ap.Port())+ports > 65536 || ap.Port() == 0 {
			return fmt.Errorf("-ports %d from port %d: want at least 1 port, all below 65536", ports, ap.Port())
		}
		if threads < 1 || threads > 64 {
			return fmt.Errorf("-threads %d: want 1 to 64", threads)
		}
	}
	return nil
}

// runUDP reads datagrams until ctx ends.
func runUDP(ctx context.Context, first netip.AddrPort, ports, threads int) (result, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			if serr == nil {
				// Root may exceed rmem_max; a failure only costs drops.
				_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
			}
		})
		return errors.Join(err, serr)
	}}
	var conns []net.PacketConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for p := range ports {
		addr := netip.AddrPortFrom(first.Addr(), first.Port()+uint16(p))
		for range threads {
			c, err := lc.ListenPacket(ctx, "udp4", addr.String())
			if err != nil {
				return result{}, fmt.Errorf("listen on %v: %w", addr, err)
			}
			conns = append(conns, c)
		}
	}
	var pkts, bytes atomic.Uint64
	var wg sync.WaitGroup
	errc := make(chan error, len(conns))
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := readBatches(ctx, ipv4.NewPacketConn(c), &pkts, &bytes); err != nil {
				errc <- err
			}
		}()
	}
	<-ctx.Done()
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now())
	}
	wg.Wait()
	close(errc)
	return result{Mode: "udp", Packets: pkts.Load(), Bytes: bytes.Load()}, <-errc
}

// readBatches reads with recvmmsg (ipv4.PacketConn.ReadBatch) until ctx ends.
func readBatches(ctx context.Context, pc *ipv4.PacketConn, pkts, bytes *atomic.Uint64) error {
	msgs := make([]ipv4.Message, 256)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 2048)}
	}
	for ctx.Err() == nil {
		_ = pc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := pc.ReadBatch(msgs, 0)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("receive: %w", err)
		}
		var b uint64
		for _, m := range msgs[:n] {
			b += uint64(m.N)
		}
		pkts.Add(uint64(n))
		bytes.Add(b)
	}
	return nil
}

// runXDP counts and drops with the XDP counter until ctx ends.
func runXDP(ctx context.Context, iface string, port uint16) (result, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return result{}, fmt.Errorf("interface %q: %w", iface, err)
	}
	c, err := xdpcount.Attach(ifi.Index, port, true)
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	<-ctx.Done()
	p, b, err := c.Count()
	return result{Mode: "xdp-drop", Packets: p, Bytes: b, XDPMode: string(c.Mode())}, err
}
