package traffic

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"time"

	"linerate/internal/admit"
	"linerate/results"
	"linerate/source/xdpcount"
	"linerate/traffic/meter"
	"linerate/traffic/rr"
	"linerate/traffic/session"
	"linerate/traffic/sock"
	"linerate/traffic/tcp"
	"linerate/traffic/udp"
	"linerate/wire"
)

// serverTest is one test on the server: its spec as run, its flows in a
// session, and what the accept tells the client.
type serverTest struct {
	srv         *Server
	spec        wire.Spec
	notes       []string
	local, peer netip.Addr
	cookie      uint64
	sess        *session.Session
	udpPorts    []uint16 // the UDP receiver's ports
	probePort   uint16   // the probe echo's port
	xdp         *meter.XDP
	queues      *meter.Queues
	aimer       *aimer     // UDP senders waiting for the client's punches
	rr          *rr.Server // the answering side of a transaction test

	// TCP: the data listener and the connections the client opens.
	tcpLn    *net.TCPListener
	fwdConns []*net.TCPConn // client → server
	revConns []*net.TCPConn // server → client
	connMu   sync.Mutex
	connCh   chan struct{} // a data connection arrived
}

// newTest checks the spec, caps it and makes the test's sockets; what it
// cannot run is an error to refuse the test with.
func (s *Server) newTest(asked *wire.Spec, local, peer netip.Addr) (*serverTest, error) {
	t := &serverTest{srv: s, spec: *asked, local: local, peer: peer, connCh: make(chan struct{}, 1)}
	if err := t.spec.Check(); err != nil {
		return nil, err
	}
	t.notes = s.capSpec(&t.spec)
	var cb [8]byte
	_, _ = rand.Read(cb[:])
	t.cookie = binary.BigEndian.Uint64(cb[:])
	t.sess = session.New(session.RealClock{})
	t.sess.Sampling = s.Sampling
	if err := s.setup(t.open); err != nil {
		t.close()
		return nil, err
	}
	t.sess.Drops = session.NewDropWindow(s.Drops, &s.dropMu, results.SideServer, -1, []netip.Addr{local}, s.setup)
	t.sess.Links = session.NewLinkWatch(results.SideServer, t.sess.Clock(), []netip.Addr{local}, s.setup)
	return t, nil
}

// open makes the test's flows: the probe echo, then the UDP receiver (and
// its XDP meter) or sender, or the TCP data listener.
func (t *serverTest) open() error {
	sp := &t.spec
	if sp.ProbeInterval > 0 {
		e, err := rr.NewEcho(t.local, t.peer)
		if err != nil {
			return fmt.Errorf("probe echo on %s: %w", t.local, err)
		}
		t.sess.Add(session.Receiving, "", e)
		t.probePort = e.Port()
	}
	if sp.RR != nil {
		rs, err := rr.NewServer(sp, t.local, t.peer, t.cookie)
		if err != nil {
			return err
		}
		t.rr = rs
		t.sess.Add(session.Receiving, "", rs)
		if sp.Proto == wire.UDP {
			t.udpPorts = []uint16{rs.Port()}
		}
		return nil
	}
	if sp.Proto == wire.TCP {
		ln, err := (&net.ListenConfig{Control: tcp.KnobsOf(sp).Control(false)}).Listen(context.Background(), "tcp", netip.AddrPortFrom(t.local, 0).String())
		if err != nil {
			return fmt.Errorf("tcp data listener on %s: %w", t.local, err)
		}
		t.tcpLn = ln.(*net.TCPListener)
		return nil
	}
	if sp.ClientSends() {
		if err := t.openUDPReceiver(); err != nil {
			return err
		}
	}
	if sp.ServerSends() {
		return t.openUDPSender()
	}
	return nil
}

func (t *serverTest) openUDPReceiver() error {
	sp := &t.spec
	r, err := udp.NewReceiver(udp.ReceiverOf(sp, t.local, t.peer, t.srv.CPUs))
	if err != nil {
		return err
	}
	t.sess.Add(session.Receiving, "", r)
	t.udpPorts = r.Ports()
	if sp.XDP {
		var port uint16
		if len(r.Ports()) == 1 {
			port = r.Ports()[0]
		}
		t.xdp = meter.NewXDP(t.local, port)
		t.sess.Add(session.Receiving, "", t.xdp)
	}
	var xc *xdpcount.Counter
	if t.xdp != nil {
		xc = t.xdp.Counter()
	}
	t.queues = meter.NewQueues(t.local, xc)
	t.sess.Add(session.Receiving, "", t.queues)
	return nil
}

func (t *serverTest) openUDPSender() error {
	sp := &t.spec
	fds, err := udp.DialFlows([]netip.Addr{t.local}, t.peer, sp.ClientPorts, sp.Streams, sp.Payload, sp.DSCP, sp.Punch)
	var me *udp.MTUError
	if errors.As(err, &me) {
		return fmt.Errorf("payload %d bytes: the path MTU from %s to %s is %d", sp.Payload, t.local, t.peer, me.MTU)
	}
	if err != nil {
		return err
	}
	if sp.Punch {
		if t.aimer, err = newAimer(fds, t.peer, sp.ClientPorts, sp.Streams); err != nil {
			sock.CloseFDs(fds)
			return err
		}
	}
	pps := sp.UDPPacketsPerSecond(wire.UDPOverhead(t.peer.Is4()))
	t.sess.Add(session.Sending, "", udp.NewSender(udp.SenderConfig{FDs: fds, Payload: sp.Payload, Sizes: sp.Sizes, PPS: pps, Threads: sp.Threads, CPUs: t.srv.CPUs}))
	return nil
}

func (t *serverTest) close() {
	_ = t.sess.Close()
	if t.tcpLn != nil {
		t.tcpLn.Close()
	}
	// Data connections that arrived but were never handed to a flow.
	t.connMu.Lock()
	for _, c := range append(t.fwdConns, t.revConns...) {
		if c != nil {
			c.Close()
		}
	}
	t.connMu.Unlock()
}

// run speaks the test's part of the protocol: accept, start, running,
// intervals, stop, result.
func (t *serverTest) run(c *ctl) error {
	if err := t.accept(c); err != nil {
		return err
	}
	if _, err := c.expect(startTimeout, wire.MsgStart); err != nil {
		return fmt.Errorf("waiting for start: %w", err)
	}
	if t.aimer != nil {
		punched, moved, err := t.aimer.aim(punchWait)
		if err != nil {
			return err
		}
		t.srv.logf("%s: %d of %d UDP sockets punched (%d moved by a NAT)", t.peer, punched, len(t.aimer.fds), moved)
	}
	if t.tcpLn != nil {
		if err := t.openTCP(); err != nil {
			return err
		}
	}
	sp := &t.spec
	tm := t.sess.Start(sp.Warmup.D(), sp.Duration.D())
	// From here on every way out goes through the session's stop: the
	// senders, receivers and sampling started above stop with the test.
	readErr := t.report(c, tm)
	// The client's streams end after its stop; one that vanished will not
	// end them.
	t.sess.Grace = 2 * time.Second
	if readErr != nil {
		t.sess.Grace = 0
	}
	t.sess.Stop(false, nil)
	if readErr != nil {
		return fmt.Errorf("waiting for stop: %w", readErr)
	}
	t.srv.logf("%s: test done", t.peer)
	return c.write(&Message{Type: wire.MsgResult, Result: t.result()})
}

// accept tells the client the test as run and where to send.
func (t *serverTest) accept(c *ctl) error {
	sp := &t.spec
	acc := &wire.Accept{Spec: *sp, Cookie: wire.CookieString(t.cookie), Notes: t.notes, UDPPorts: t.udpPorts, ProbePort: t.probePort}
	if t.aimer != nil {
		p, err := t.aimer.punch()
		if err != nil {
			return err
		}
		acc.Punch = p
	}
	if t.rr != nil && sp.Proto == wire.TCP {
		acc.TCPPort = t.rr.Port()
	}
	if t.tcpLn != nil {
		acc.TCPPort = uint16(t.tcpLn.Addr().(*net.TCPAddr).Port)
		if sp.ClientSends() {
			t.fwdConns = make([]*net.TCPConn, sp.Streams)
		}
		if sp.ServerSends() {
			t.revConns = make([]*net.TCPConn, sp.Streams)
		}
		go t.acceptData()
	}
	t.srv.logf("%s: test %s %s, %s, %s", t.peer, sp.Proto, sp.Direction, sp.Duration.D(), sp.Rate)
	return c.write(&Message{Type: wire.MsgAccept, Accept: acc})
}

// report says "running", then what the flows counted once a second, until
// the client's stop; it returns why no stop came.
func (t *serverTest) report(c *ctl, tm session.Timing) error {
	if err := c.write(&Message{Type: wire.MsgRunning}); err != nil {
		return err
	}
	stopped := make(chan struct{})
	var readErr error
	go func() {
		defer close(stopped)
		_, readErr = c.expect(time.Until(tm.End)+stopGrace, wire.MsgStop)
	}()
	gone := false
	t.sess.Run(context.Background(), stopped, func(now time.Time) {
		if gone {
			return
		}
		// T is when the counts were read, not when the tick was due: a
		// late tick's counts are of the moment they were read, and the
		// client lays its own counts of that moment beside them when this
		// server dies (assembleDead).
		now = t.sess.Clock().Now()
		p := t.sess.Progress(now)
		iv := &wire.Interval{T: now.Sub(tm.Start).Seconds(), ReceivedPackets: p.RecvPkts, ReceivedBytes: p.RecvBytes,
			SentPackets: p.SentPkts, SentBytes: p.SentBytes}
		if c.write(&Message{Type: wire.MsgInterval, Interval: iv}) != nil {
			// The client is gone (or stuck): stop waiting for its stop.
			c.c.Close()
			gone = true
		}
	})
	return readErr
}

// result is what the server counted, once the session stopped.
func (t *serverTest) result() *results.ServerResult {
	res := &results.ServerResult{Seconds: t.sess.Seconds(), Threads: t.sess.Threads(), Machine: t.srv.Machine}
	res.Drops = t.sess.Drops.Result(t.sess.Refused())
	for _, e := range t.sess.Entries() {
		fr := e.Result()
		res.Foreign += fr.Foreign
		if e.Role() == session.Receiving {
			res.Received = append(res.Received, fr.Counts...)
		} else {
			res.Sent = append(res.Sent, fr.Counts...)
		}
		res.TCP = append(res.TCP, fr.TCP...)
	}
	if t.rr != nil {
		res.RR = &results.RRServed{Connections: t.rr.Connections()}
	}
	for _, err := range t.sess.Errs() {
		res.Errors = append(res.Errors, err.Error())
	}
	var err error
	if res.LinkEvents, err = t.sess.LinkEvents(); err != nil {
		t.srv.logf("%s: %v", t.peer, err)
	}
	if samples, began, sampleErr := t.sess.Samples(); t.srv.Sampling != nil && began {
		res.Samples = samples
		if len(res.Samples) == 0 {
			res.SampleError = "no samples"
			if sampleErr != nil {
				res.SampleError = sampleErr.Error()
			}
		}
	}
	if t.xdp != nil {
		res.XDP = t.xdp.Result()
	}
	if t.queues != nil {
		res.RxQueues = t.queues.Result()
	}
	return res
}

// openTCP waits for the client's data connections and makes the TCP flows
// over them.
func (t *serverTest) openTCP() error {
	if err := t.waitData(5 * time.Second); err != nil {
		return err
	}
	t.tcpLn.Close()
	t.connMu.Lock()
	defer t.connMu.Unlock()
	knobs := tcp.KnobsOf(&t.spec)
	for _, conns := range [][]*net.TCPConn{t.fwdConns, t.revConns} {
		for i, c := range conns {
			if err := knobs.ForStream(&t.spec, i).Conn(c); err != nil {
				return fmt.Errorf("tcp data connection: %w", err)
			}
		}
	}
	if len(t.fwdConns) > 0 {
		r, err := tcp.NewReceiver(t.fwdConns, t.spec.Threads)
		if err != nil {
			return err
		}
		t.sess.Add(session.Receiving, "", r)
		t.fwdConns = nil
	}
	if len(t.revConns) > 0 {
		sp := &t.spec
		s, err := tcp.NewSender(t.revConns, tcp.SendConfigOf(sp))
		if err != nil {
			return err
		}
		t.sess.Add(session.Sending, "", s)
		t.revConns = nil
	}
	return nil
}

// acceptData takes the client's TCP data connections: only from the
// control connection's peer, only with the test's cookie, and only as
// many waiting for their hello at once as the test has connections (a
// newer one takes the place of the oldest). A duplicate, or one past the
// test's, is closed once its hello is read (dataHello).
func (t *serverTest) acceptData() {
	hellos := admit.NewTable(len(t.fwdConns)+len(t.revConns), len(t.fwdConns)+len(t.revConns))
	for {
		c, err := admit.Accept(t.tcpLn, nil, hellos.Shed, nil)
		if err != nil {
			return
		}
		if sock.AddrOf(c.RemoteAddr()) != t.peer {
			c.Close()
			continue
		}
		slot, err := hellos.Enter(t.peer, func() { _ = c.SetReadDeadline(time.Unix(1, 0)) })
		if err != nil {
			c.Close()
			continue
		}
		go t.dataHello(c.(*net.TCPConn), slot)
	}
}

// dataHello reads a data connection's first bytes and files it under its
// direction and stream; slot is its place among those waiting for their
// hello.
func (t *serverTest) dataHello(c *net.TCPConn, slot *admit.Slot) {
	b := make([]byte, wire.DataHelloLen)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.ReadFull(c, b)
	if !slot.Leave() || err != nil {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	cookie, stream, dir, err := wire.ParseDataHello(b)
	if err != nil || cookie != t.cookie || stream < 0 || stream >= t.spec.Streams {
		c.Close()
		return
	}
	t.connMu.Lock()
	defer t.connMu.Unlock()
	list := t.fwdConns
	if dir == 'r' {
		list = t.revConns
	}
	if stream >= len(list) || list[stream] != nil {
		// A duplicate, one for a direction not in the test, or one too
		// late (the flows are made).
		c.Close()
		return
	}
	list[stream] = c
	select {
	case t.connCh <- struct{}{}:
	default:
	}
}

// waitData waits until every expected TCP data connection is in.
func (t *serverTest) waitData(d time.Duration) error {
	deadline := time.After(d)
	for {
		t.connMu.Lock()
		missing := 0
		for _, c := range append(t.fwdConns, t.revConns...) {
			if c == nil {
				missing++
			}
		}
		t.connMu.Unlock()
		if missing == 0 {
			return nil
		}
		select {
		case <-t.connCh:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			return fmt.Errorf("%d tcp data connections did not arrive", missing)
		}
	}
}

// test runs one test the client asked for; a test the server will not run
// is an ErrTestRefused.
func (s *Server) test(c *ctl, sp *wire.Spec, local, peer netip.Addr) error {
	if sp == nil {
		return fmt.Errorf("%w: test without a spec", wire.ErrProtocol)
	}
	s.mu.Lock()
	s.tests++
	s.mu.Unlock()
	defer s.testEnded()
	t, err := s.newTest(sp, local, peer)
	if err != nil {
		return fmt.Errorf("%w: %w", wire.ErrTestRefused, err)
	}
	defer t.close()
	return t.run(c)
}

// testEnded counts a test out; the last one running returns the memory
// its buffers took to the system at once: the runtime would otherwise
// keep it for minutes, and an agent sits idle between tests.
func (s *Server) testEnded() {
	s.mu.Lock()
	s.tests--
	last := s.tests == 0
	s.mu.Unlock()
	if last {
		debug.FreeOSMemory()
	}
}
