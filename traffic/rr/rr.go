// Package rr measures round trips: a request, then its response. The
// transaction test (bench rr, wire.RR): each Client stream writes a
// request and waits for the whole response before the next, over one TCP
// connection, one UDP socket, or a new TCP connection per transaction
// (Connect); the client counts what completed and how long each took, the
// Server what it answered. The latency probes that run beside any test
// (Prober, answered by the server's Echo), idle and under load. All are
// session flows, so the control protocol, the timing, the intervals and
// the sampling are those of every other test.
package rr

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"linerate/internal/admit"
	"linerate/results"
	"linerate/traffic/session"
	"linerate/traffic/sock"
	"linerate/traffic/tcp"
	"linerate/wire"
)

// rrStream is one client transaction loop. Its counters are atomic
// (Progress reads them while it runs); its histogram is its own until Run
// returned.
type rrStream struct {
	id                        int
	done, bytes               atomic.Uint64
	timeouts, connFail, other atomic.Uint64
	hist                      results.Histogram
	tc                        *net.TCPConn // the connection (TCP, without Connect)
	uc                        *net.UDPConn // the socket (UDP)
	seq                       uint64       // the UDP request's number
}

// Client is the client's side of a transaction test: Streams loops.
type Client struct {
	rr      wire.RR
	proto   wire.Proto
	local   netip.Addr
	to      netip.AddrPort
	cookie  uint64
	dialer  net.Dialer
	setup   func(func() error) error
	streams []*rrStream
	stopped atomic.Bool
	stopCh  chan struct{}
	stopMu  sync.Once
}

// NewClient makes the client's streams toward the server's data port,
// opening their connections or sockets now (but with Connect, whose
// connections open per transaction).
func NewClient(sp *wire.Spec, local netip.Addr, to netip.AddrPort, cookie uint64, setup func(func() error) error) (*Client, error) {
	c := &Client{rr: *sp.RR, proto: sp.Proto, local: local, to: to, cookie: cookie, setup: setup, stopCh: make(chan struct{})}
	c.dialer = net.Dialer{Timeout: c.rr.Timeout.D(), LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(local, 0)),
		Control: tcp.KnobsOf(sp).Control(true)}
	for i := range sp.Streams {
		s := &rrStream{id: i}
		c.streams = append(c.streams, s)
		var err error
		switch {
		case c.proto == wire.UDP:
			err = setup(func() error {
				s.uc, err = net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0)), net.UDPAddrFromAddrPort(to))
				if err == nil && sp.DSCP > 0 {
					err = sock.WithFD(s.uc, func(fd int) error { return sock.SetDSCP(fd, sp.DSCP) })
				}
				return err
			})
		case !c.rr.Connect:
			err = setup(func() error { s.tc, err = c.dial(s.id); return err })
		}
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("transaction stream %d to %s: %w", i, to, err)
		}
	}
	return c, nil
}

// dial opens a data connection for stream id and says which it is.
func (c *Client) dial(id int) (*net.TCPConn, error) {
	conn, err := c.dialer.Dial("tcp", c.to.String())
	if err != nil {
		return nil, err
	}
	tc := conn.(*net.TCPConn)
	_ = tc.SetWriteDeadline(time.Now().Add(c.rr.Timeout.D()))
	if _, err := tc.Write(wire.PutDataHello(c.cookie, id, 'f')); err != nil {
		tc.Close()
		return nil, err
	}
	return tc, nil
}

func (c *Client) Run(tm session.Timing) {
	var wg sync.WaitGroup
	for _, s := range c.streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The whole loop runs where the sockets are made: with
			// Connect every transaction makes one.
			_ = c.setup(func() error { c.loop(s, tm.End); return nil })
		}()
	}
	wg.Wait()
}

// loop runs transactions on s until end or stop; one under way at end
// completes (within the timeout) and counts.
func (c *Client) loop(s *rrStream, end time.Time) {
	req := make([]byte, c.rr.Request)
	resp := make([]byte, c.rr.Response)
	if c.rr.Connect {
		// One buffer: the hello and the request leave in one segment.
		req = append(wire.PutDataHello(c.cookie, s.id, 'f'), req...)
	}
	for !c.stopped.Load() && time.Now().Before(end) {
		t0 := time.Now()
		var err error
		switch {
		case c.proto == wire.UDP:
			err = c.udpOnce(s, req, resp, t0)
		case c.rr.Connect:
			err = c.connectOnce(s, req, resp, t0)
		default:
			err = c.tcpOnce(s, req, resp, t0)
		}
		if err == nil {
			s.hist.Add(time.Since(t0))
			s.done.Add(1)
			s.bytes.Add(uint64(c.rr.Request + c.rr.Response))
			continue
		}
		if c.stopped.Load() {
			return // the stop closed the socket: not a failure
		}
		c.failed(s, err)
	}
}

// errConnect marks a connection that could not be opened.
var errConnect = errors.New("connect")

// failed counts a failed transaction by its kind. A TCP stream's
// connection is out of step after any failure: it opens a new one, and
// one that cannot be opened waits a little before the next try.
func (c *Client) failed(s *rrStream, err error) {
	var ne net.Error
	switch {
	case errors.Is(err, errConnect):
		s.connFail.Add(1)
	case errors.As(err, &ne) && ne.Timeout():
		s.timeouts.Add(1)
	default:
		s.other.Add(1)
	}
	if c.proto != wire.TCP || c.rr.Connect {
		if errors.Is(err, errConnect) {
			c.pause()
		}
		return
	}
	if s.tc != nil {
		s.tc.Close()
		s.tc = nil
	}
	tc, derr := c.dial(s.id)
	if derr != nil {
		s.connFail.Add(1)
		c.pause()
		return
	}
	s.tc = tc
}

// pause waits a moment after a connection that could not be opened, so
// that a refusing server is not hammered; a stop ends it.
func (c *Client) pause() {
	select {
	case <-c.stopCh:
	case <-time.After(10 * time.Millisecond):
	}
}

// tcpOnce is one transaction on the stream's connection.
func (c *Client) tcpOnce(s *rrStream, req, resp []byte, t0 time.Time) error {
	if s.tc == nil {
		return fmt.Errorf("%w: no connection", errConnect)
	}
	_ = s.tc.SetDeadline(t0.Add(c.rr.Timeout.D()))
	if _, err := s.tc.Write(req); err != nil {
		return err
	}
	_, err := io.ReadFull(s.tc, resp)
	return err
}

// connectOnce is one transaction on a connection of its own: connect,
// hello and request, response; then it waits for the server's close so
// that the TIME_WAIT is the server's, and closes.
func (c *Client) connectOnce(s *rrStream, req, resp []byte, t0 time.Time) error {
	conn, err := c.dialer.Dial("tcp", c.to.String())
	if err != nil {
		return fmt.Errorf("%w: %w", errConnect, err)
	}
	tc := conn.(*net.TCPConn)
	defer tc.Close()
	_ = tc.SetDeadline(t0.Add(c.rr.Timeout.D()))
	if _, err := tc.Write(req); err != nil {
		return err
	}
	if _, err := io.ReadFull(tc, resp); err != nil {
		return err
	}
	var b [1]byte
	_, _ = tc.Read(b[:]) // the server's FIN (or the deadline)
	return nil
}

// udpOnce is one transaction over the stream's socket: the request
// carries its number in its first bytes (up to 8) and the response echoes
// them, so that a late answer to an earlier request is not taken for this
// one's.
func (c *Client) udpOnce(s *rrStream, req, resp []byte, t0 time.Time) error {
	s.seq++
	var num [8]byte
	binary.LittleEndian.PutUint64(num[:], s.seq)
	k := rrEcho(len(req), len(resp))
	copy(req, num[:k])
	_ = s.uc.SetDeadline(t0.Add(c.rr.Timeout.D()))
	if _, err := s.uc.Write(req); err != nil {
		return err
	}
	for {
		n, err := s.uc.Read(resp)
		if err != nil {
			return err
		}
		if n == len(resp) && string(resp[:k]) == string(num[:k]) {
			return nil
		}
	}
}

// rrEcho is how many of a UDP request's first bytes its response echoes.
func rrEcho(request, response int) int { return min(8, request, response) }

func (c *Client) Cut(time.Time) {}

func (c *Client) Stop(time.Duration) {
	c.stopMu.Do(func() {
		c.stopped.Store(true)
		close(c.stopCh)
		// Unblock the transactions under way.
		for _, s := range c.streams {
			if s.uc != nil {
				_ = s.uc.SetDeadline(time.Unix(1, 0))
			}
		}
	})
}

func (c *Client) Progress() (packets, bytes uint64) {
	for _, s := range c.streams {
		packets += s.done.Load()
		bytes += s.bytes.Load()
	}
	return packets, bytes
}

func (c *Client) Collect() session.Result {
	var res session.Result
	for _, s := range c.streams {
		res.Counts = append(res.Counts, results.Count{Stream: s.id, Packets: s.done.Load(), Bytes: s.bytes.Load()})
	}
	return res
}

func (c *Client) Close() error {
	for _, s := range c.streams {
		if s.tc != nil {
			s.tc.Close()
		}
		if s.uc != nil {
			s.uc.Close()
		}
	}
	return nil
}

// Tally adds the client's streams to rr, numbered on from those it holds,
// with their rates over rr.Seconds, and their latencies to all; valid
// after the client's Run returned.
func (c *Client) Tally(rr *results.RR, all *results.Histogram) {
	for _, s := range c.streams {
		st := results.RRStream{Stream: len(rr.Streams), Transactions: s.done.Load(),
			Timeouts: s.timeouts.Load(), Failures: s.connFail.Load() + s.other.Load()}
		if rr.Seconds > 0 {
			st.TPS = float64(st.Transactions) / rr.Seconds
		}
		lat := s.hist.Latency()
		st.P50, st.P99 = lat.P50, lat.P99
		rr.Streams = append(rr.Streams, st)
		rr.Transactions += st.Transactions
		rr.Timeouts += s.timeouts.Load()
		rr.ConnectFailures += s.connFail.Load()
		rr.Errors += s.other.Load()
		all.Merge(&s.hist)
	}
}

// Server is the server's side of a transaction test: it answers every
// request from the client's address with a response, and counts them per
// stream (TCP: the stream of the connection's hello; UDP: per client
// port, in the order they came).
type Server struct {
	rr      wire.RR
	peer    netip.Addr
	cookie  uint64
	streams int
	ln      *net.TCPListener
	uc      *net.UDPConn

	answered []atomic.Uint64 // per stream (TCP)
	bytes    atomic.Uint64
	total    atomic.Uint64
	conns    atomic.Uint64

	mu        sync.Mutex
	open      map[*net.TCPConn]struct{}
	answering []*net.TCPConn // per stream, the connection answered (TCP)
	ports     map[uint16]int // UDP: client port → stream
	perPort   []uint64
	stopped   bool
	wg        sync.WaitGroup
	done      chan struct{}
}

// NewServer opens the test's data port on local (in the caller's
// namespace) and starts answering at once: the client's connections come
// before the test's clock starts.
func NewServer(sp *wire.Spec, local, peer netip.Addr, cookie uint64) (*Server, error) {
	s := &Server{rr: *sp.RR, peer: peer, cookie: cookie, streams: sp.Streams, answered: make([]atomic.Uint64, sp.Streams),
		open: map[*net.TCPConn]struct{}{}, answering: make([]*net.TCPConn, sp.Streams), ports: map[uint16]int{}, done: make(chan struct{})}
	if sp.Proto == wire.UDP {
		uc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0)))
		if err != nil {
			return nil, fmt.Errorf("transaction socket on %s: %w", local, err)
		}
		if sp.DSCP > 0 {
			if err := sock.WithFD(uc, func(fd int) error { return sock.SetDSCP(fd, sp.DSCP) }); err != nil {
				uc.Close()
				return nil, err
			}
		}
		s.uc = uc
		s.wg.Add(1)
		go s.answerUDP()
		return s, nil
	}
	lc := net.ListenConfig{Control: tcp.KnobsOf(sp).Control(false)}
	ln, err := lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(local, 0).String())
	if err != nil {
		return nil, fmt.Errorf("transaction listener on %s: %w", local, err)
	}
	s.ln = ln.(*net.TCPListener)
	s.wg.Add(1)
	go s.acceptTCP()
	return s, nil
}

// Port is the data port the client reaches.
func (s *Server) Port() uint16 {
	if s.uc != nil {
		return uint16(s.uc.LocalAddr().(*net.UDPAddr).Port)
	}
	return uint16(s.ln.Addr().(*net.TCPAddr).Port)
}

// acceptTCP takes the client's connections: only from its address, only
// as many waiting for their hello at once as the test has streams (a
// newer one takes the place of the oldest), and one answered per stream
// (answerTCP).
func (s *Server) acceptTCP() {
	defer s.wg.Done()
	hellos := admit.NewTable(s.streams, s.streams)
	for {
		c, err := admit.Accept(s.ln, nil, hellos.Shed, nil)
		if err != nil {
			return
		}
		tc := c.(*net.TCPConn)
		if sock.AddrOf(c.RemoteAddr()) != s.peer || !s.track(tc) {
			c.Close()
			continue
		}
		slot, err := hellos.Enter(s.peer, func() { _ = c.SetReadDeadline(time.Unix(1, 0)) })
		if err != nil {
			s.untrack(tc)
			continue
		}
		s.wg.Add(1)
		go s.answerTCP(tc, slot)
	}
}

// track files c among the open connections; false once stopped.
func (s *Server) track(c *net.TCPConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.open[c] = struct{}{}
	return true
}

// untrack closes c and forgets it, and its stream's place if it held it.
func (s *Server) untrack(c *net.TCPConn) {
	s.mu.Lock()
	delete(s.open, c)
	for i, o := range s.answering {
		if o == c {
			s.answering[i] = nil
		}
	}
	s.mu.Unlock()
	c.Close()
}

// answer makes c the connection stream answers on, closing the one that
// was; false once stopped. A client opens a new connection for a stream
// after a failure (or, with Connect, for each transaction): the newest is
// the stream's.
func (s *Server) answer(stream int, c *net.TCPConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	if o := s.answering[stream]; o != nil {
		o.Close()
	}
	s.answering[stream] = c
	return true
}

// answerTCP reads the connection's hello, then answers its requests until
// the client closes it or a newer connection takes its stream; with
// Connect, one, and then it closes first. slot is its place among those
// waiting for their hello.
func (s *Server) answerTCP(c *net.TCPConn, slot *admit.Slot) {
	defer s.wg.Done()
	defer s.untrack(c)
	hello := make([]byte, wire.DataHelloLen)
	_ = c.SetReadDeadline(time.Now().Add(s.rr.Timeout.D() + 5*time.Second))
	_, err := io.ReadFull(c, hello)
	if !slot.Leave() || err != nil {
		return
	}
	cookie, stream, dir, err := wire.ParseDataHello(hello)
	if err != nil || cookie != s.cookie || dir != 'f' || stream < 0 || stream >= s.streams || !s.answer(stream, c) {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	s.conns.Add(1)
	req := make([]byte, s.rr.Request)
	resp := make([]byte, s.rr.Response)
	for {
		if _, err := io.ReadFull(c, req); err != nil {
			return
		}
		if _, err := c.Write(resp); err != nil {
			return
		}
		s.answered[stream].Add(1)
		s.total.Add(1)
		s.bytes.Add(uint64(s.rr.Request))
		if s.rr.Connect {
			return
		}
	}
}

// answerUDP answers every request of the request's size from the client's
// address, echoing its number.
func (s *Server) answerUDP() {
	defer s.wg.Done()
	buf := make([]byte, wire.MaxRRSize+1)
	resp := make([]byte, s.rr.Response)
	k := rrEcho(s.rr.Request, s.rr.Response)
	for {
		n, from, err := s.uc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
			continue
		}
		if from.Addr().Unmap() != s.peer || n != s.rr.Request {
			continue
		}
		copy(resp, buf[:k])
		if _, err := s.uc.WriteToUDPAddrPort(resp, from); err != nil {
			continue
		}
		s.mu.Lock()
		i, ok := s.ports[from.Port()]
		if !ok {
			i = len(s.perPort)
			s.ports[from.Port()] = i
			s.perPort = append(s.perPort, 0)
		}
		s.perPort[i]++
		s.mu.Unlock()
		s.total.Add(1)
		s.bytes.Add(uint64(n))
	}
}

// Run waits for the stop: the server answers from its creation on.
func (s *Server) Run(session.Timing) { <-s.done }

func (s *Server) Cut(time.Time) {}

// Stop closes the data port and every connection: the client's stop came
// after its streams ended.
func (s *Server) Stop(time.Duration) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	for c := range s.open {
		c.Close()
	}
	s.mu.Unlock()
	if s.ln != nil {
		s.ln.Close()
	}
	if s.uc != nil {
		_ = s.uc.SetReadDeadline(time.Unix(1, 0))
	}
	s.wg.Wait()
	close(s.done)
}

func (s *Server) Progress() (packets, bytes uint64) { return s.total.Load(), s.bytes.Load() }

// Connections is how many connections the server answered on.
func (s *Server) Connections() uint64 { return s.conns.Load() }

func (s *Server) Collect() session.Result {
	var res session.Result
	if s.uc != nil {
		s.mu.Lock()
		for i, n := range s.perPort {
			res.Counts = append(res.Counts, results.Count{Stream: i, Packets: n})
		}
		s.mu.Unlock()
		return res
	}
	for i := range s.answered {
		res.Counts = append(res.Counts, results.Count{Stream: i, Packets: s.answered[i].Load()})
	}
	return res
}

func (s *Server) Close() error {
	s.Stop(0)
	if s.uc != nil {
		s.uc.Close()
	}
	return nil
}
