package traffic

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"linerate/box"
	"linerate/internal/version"
)

// Sampling starts recording the machine's counters once a second. each, if
// not nil, is called with every interval's rates; stop ends the recording
// and returns every interval, or why there are none.
type Sampling func(each func(box.Rates)) (stop func() ([]box.Rates, error))

// Server is the far end of a test (`linerate serve`). It accepts control
// connections, runs the tests they ask for, and reports what it counted.
// It only ever sends to the address of a control connection's peer.
type Server struct {
	// Token, when set, must be presented by every client.
	Token string
	// Limits cap what a test may ask for.
	Limits Limits
	// MaxConns bounds the control connections open at once; more are
	// refused with a reason (0: 8).
	MaxConns int
	// CPUs pins the server's sender and receiver threads, round robin.
	CPUs []int
	// Sampling records the server's counters during each test (nil: none).
	Sampling Sampling
	// Setup runs fn where the server's sockets must be made (inside a
	// network namespace, in tests); nil runs it directly.
	Setup func(fn func() error) error
	// Logf, when set, receives one line per event (a test, a refused
	// client).
	Logf func(format string, args ...any)
	// PeerTimeout is how long a client may stay silent (not acknowledging
	// the server's messages, not answering keepalive probes) before its
	// control connection fails and its test is torn down: a client whose
	// host or network vanished without closing (0: 10s).
	PeerTimeout time.Duration

	id    string
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// Timeouts of the control protocol.
const (
	helloTimeout = 10 * time.Second // from connect to hello
	idleTimeout  = 5 * time.Minute  // between tests on one connection
	startTimeout = 30 * time.Second // from accept to start
	stopGrace    = 30 * time.Second // past a test's end for its stop
)

func (s *Server) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

func (s *Server) setup(fn func() error) error {
	if s.Setup == nil {
		return fn()
	}
	return s.Setup(fn)
}

// Serve accepts control connections on ln until ctx ends, then closes
// every connection and returns once their tests are torn down.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.mu.Lock()
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	if s.id == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		s.id = hex.EncodeToString(b[:])
	}
	s.mu.Unlock()
	maxConns := s.MaxConns
	if maxConns <= 0 {
		maxConns = 8
	}
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
	})
	defer stop()
	var err error
	for {
		var c net.Conn
		c, err = ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				err = nil
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			break
		}
		s.mu.Lock()
		n := len(s.conns)
		if n >= maxConns || ctx.Err() != nil {
			s.mu.Unlock()
			s.logf("refused %s: %d control connections open", c.RemoteAddr(), n)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				refuse(c, fmt.Sprintf("busy: %d control connections open, the server's limit (serve --max-clients)", n))
			}()
			continue
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		if err := watchPeer(c, cmp.Or(s.PeerTimeout, peerTimeout)); err != nil {
			s.logf("%s: keepalive: %v", c.RemoteAddr(), err)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			if err := s.handle(ctx, c); err != nil {
				s.logf("%s: %v", c.RemoteAddr(), err)
			}
		}()
	}
	stop()
	ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// refuse tells a client why it is turned away and closes the connection.
func refuse(c net.Conn, why string) {
	defer c.Close()
	ctl := newCtl(c)
	ctl.wt = 2 * time.Second
	_ = ctl.write(&Message{Type: msgError, Error: why})
}

func addrOf(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(ta.IP)
		return ip.Unmap().WithZone(ta.Zone)
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// handle speaks the protocol on one control connection.
func (s *Server) handle(ctx context.Context, conn net.Conn) error {
	c := newCtl(conn)
	m, err := c.read(helloTimeout)
	if err != nil {
		if errors.Is(err, errProtocol) {
			_ = c.write(&Message{Type: msgError, Error: err.Error()})
		}
		return fmt.Errorf("hello: %w", err)
	}
	if m.Type != msgHello {
		_ = c.write(&Message{Type: msgError, Error: fmt.Sprintf("protocol error: first message %q, want hello", m.Type)})
		return fmt.Errorf("hello: got %q", m.Type)
	}
	if m.Version != ProtocolVersion {
		_ = c.write(&Message{Type: msgError, Error: fmt.Sprintf("protocol version %d, this server speaks %d (linerate %s)", m.Version, ProtocolVersion, version.Version)})
		return fmt.Errorf("hello: version %d", m.Version)
	}
	if s.Token != "" && subtle.ConstantTimeCompare([]byte(m.Token), []byte(s.Token)) != 1 {
		_ = c.write(&Message{Type: msgError, Error: "wrong token: the server requires the token it was given (serve --token)"})
		return errors.New("wrong token")
	}
	lim := s.Limits
	if err := c.write(&Message{Type: msgWelcome, Version: ProtocolVersion, Linerate: version.Version, Limits: &lim, ServerID: s.id}); err != nil {
		return err
	}
	local, peer := addrOf(conn.LocalAddr()), addrOf(conn.RemoteAddr())
	for {
		m, err := c.read(idleTimeout)
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, errProtocol) {
				_ = c.write(&Message{Type: msgError, Error: err.Error()})
			}
			return err
		}
		switch m.Type {
		case msgBye:
			return nil
		case msgTest:
			if m.Spec == nil {
				_ = c.write(&Message{Type: msgError, Error: "protocol error: test without a spec"})
				return errors.New("test without a spec")
			}
			if err := s.runTest(c, m.Spec, local, peer); err != nil {
				var refused *refusal
				if errors.As(err, &refused) {
					s.logf("%s: test refused: %v", peer, refused.err)
					if err := c.write(&Message{Type: msgError, Error: "test refused: " + refused.err.Error()}); err != nil {
						return err
					}
					continue
				}
				_ = c.write(&Message{Type: msgError, Error: err.Error()})
				return err
			}
		default:
			_ = c.write(&Message{Type: msgError, Error: fmt.Sprintf("protocol error: unexpected %q", m.Type)})
			return fmt.Errorf("unexpected %q", m.Type)
		}
	}
}

// refusal is a test the server will not run; the connection stays open.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }

// capSpec applies the server's limits, saying what it changed.
func (s *Server) capSpec(sp *Spec) (notes []string) {
	if d := s.Limits.MaxDuration; d > 0 && sp.Warmup+sp.Duration > d {
		total := sp.Warmup + sp.Duration
		if sp.Warmup >= d {
			sp.Warmup = 0
		}
		sp.Duration = d - sp.Warmup
		notes = append(notes, fmt.Sprintf("server caps a test at %s: %s asked", d.D(), total.D()))
	}
	if r := s.Limits.MaxRate; !r.Unlimited() {
		frame := sp.Payload + UDPOverhead(true)
		if sp.Proto == "tcp" {
			frame = max(sp.Payload, 1)
		}
		capPPS := r.PacketsPerSecond(frame)
		asked := sp.Rate.PacketsPerSecond(frame)
		if sp.Rate.Unlimited() || asked > capPPS {
			notes = append(notes, fmt.Sprintf("server caps the rate at %s: %s asked", r, sp.Rate))
			sp.Rate = r
		}
	}
	return notes
}

// serverTest is one test's resources on the server.
type serverTest struct {
	spec     Spec
	cookie   uint64
	udpRecv  *UDPReceiver
	udpSend  *UDPSender
	tcpLn    *net.TCPListener
	echo     *echo
	fwdConns []*net.TCPConn // client → server
	revConns []*net.TCPConn // server → client
	connMu   sync.Mutex
	connCh   chan struct{} // a data connection arrived
	tcpRecv  *TCPReceiver
	tcpSend  *TCPSender
	xdp      *XDPCounter
	xdpStat  *XDPStat
	xdpBase  [2]uint64 // packets, bytes at the start of the measured window
}

func (t *serverTest) close() {
	if t.udpRecv != nil {
		t.udpRecv.Stop()
		t.udpRecv.Close()
	}
	if t.udpSend != nil {
		t.udpSend.Close()
	}
	if t.tcpLn != nil {
		t.tcpLn.Close()
	}
	if t.echo != nil {
		t.echo.close()
	}
	if t.xdp != nil {
		t.xdp.Close()
	}
	t.connMu.Lock()
	for _, c := range t.fwdConns {
		if c != nil {
			c.Close()
		}
	}
	for _, c := range t.revConns {
		if c != nil {
			c.Close()
		}
	}
	t.connMu.Unlock()
}

// prepare makes the test's sockets.
func (s *Server) prepare(t *serverTest, local, peer netip.Addr) error {
	sp := &t.spec
	rcvbuf := sp.RecvBuf
	if rcvbuf == 0 {
		rcvbuf = 4 << 20
	}
	return s.setup(func() error {
		var err error
		if sp.ProbeInterval > 0 {
			if t.echo, err = newEcho(local, peer); err != nil {
				return fmt.Errorf("probe echo on %s: %w", local, err)
			}
		}
		if sp.Proto == "udp" {
			if sp.clientSends() {
				bind := func(port uint16) (int, error) { return listenUDP(netip.AddrPortFrom(local, port), rcvbuf) }
				if t.udpRecv, err = newUDPReceiver(bind, sp.Ports, sp.Threads, nil, s.CPUs); err != nil {
					return err
				}
				if sp.XDP {
					t.attachXDP(local)
				}
			}
			if sp.serverSends() {
				var fds []int
				for p := range sp.Ports {
					for range sp.Streams {
						fd, err := dialUDP(netip.AddrPortFrom(local, 0), netip.AddrPortFrom(peer, sp.ClientPorts[p]), 4<<20)
						if err != nil {
							closeFDs(fds)
							return err
						}
						fds = append(fds, fd)
					}
				}
				if mtu, err := pathMTU(fds[0], peer.Is4()); err == nil && sp.Payload+UDPOverhead(peer.Is4())-ethOverhead > mtu {
					closeFDs(fds)
					return &refusal{fmt.Errorf("payload %d bytes: the path MTU from %s to %s is %d", sp.Payload, local, peer, mtu)}
				}
				t.udpSend = newUDPSender(udpSenderConfig{fds: fds, payload: sp.Payload,
					pps: sp.Rate.PacketsPerSecond(sp.Payload + UDPOverhead(peer.Is4())), threads: sp.Threads, cpus: s.CPUs})
			}
			return nil
		}
		lc := net.ListenConfig{}
		ln, err := lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(local, 0).String())
		if err != nil {
			return fmt.Errorf("tcp data listener on %s: %w", local, err)
		}
		t.tcpLn = ln.(*net.TCPListener)
		return nil
	})
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		closeFD(fd)
	}
}

// attachXDP puts an XDP counter on the interface that holds local; a
// failure is reported in the result, not fatal.
func (t *serverTest) attachXDP(local netip.Addr) {
	t.xdpStat = &XDPStat{}
	name, index, err := interfaceOf(local)
	if err != nil {
		t.xdpStat.Error = err.Error()
		return
	}
	t.xdpStat.Interface = name
	var port uint16
	if len(t.udpRecv.Ports) == 1 {
		port = t.udpRecv.Ports[0]
	}
	c, err := AttachXDPCounter(index, port, false)
	if err != nil {
		t.xdpStat.Error = err.Error()
		return
	}
	t.xdp = c
	t.xdpStat.Mode = string(c.Mode())
}

// xdpMark reads the XDP counter: at the start of the measured window
// (end false) or at its end.
func (t *serverTest) xdpMark(end bool, seconds float64) {
	if t.xdp == nil {
		return
	}
	pk, by, err := t.xdp.Count()
	if err != nil {
		t.xdpStat.Error = err.Error()
		return
	}
	if !end {
		t.xdpBase = [2]uint64{pk, by}
		return
	}
	t.xdpStat.Packets, t.xdpStat.Bytes = pk-t.xdpBase[0], by-t.xdpBase[1]
	if seconds > 0 {
		t.xdpStat.PPS = float64(t.xdpStat.Packets) / seconds
	}
}

// acceptData takes the client's TCP data connections for test t: only
// from peer, only with the test's cookie.
func (t *serverTest) acceptData(peer netip.Addr) {
	for {
		c, err := t.tcpLn.AcceptTCP()
		if err != nil {
			return
		}
		if addrOf(c.RemoteAddr()) != peer {
			c.Close()
			continue
		}
		go func() {
			b := make([]byte, dataHelloLen)
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(c, b); err != nil {
				c.Close()
				return
			}
			_ = c.SetReadDeadline(time.Time{})
			cookie, stream, dir, err := parseDataHello(b)
			if err != nil || cookie != t.cookie || stream < 0 || stream >= t.spec.Streams {
				c.Close()
				return
			}
			t.connMu.Lock()
			defer t.connMu.Unlock()
			list := &t.fwdConns
			if dir == 'r' {
				list = &t.revConns
			}
			if stream >= len(*list) || (*list)[stream] != nil {
				// A duplicate, or a direction the test does not have.
				c.Close()
				return
			}
			(*list)[stream] = c
			select {
			case t.connCh <- struct{}{}:
			default:
			}
		}()
	}
}

// waitData waits until every expected TCP data connection is in.
func (t *serverTest) waitData(d time.Duration) error {
	deadline := time.After(d)
	for {
		t.connMu.Lock()
		missing := 0
		for _, c := range t.fwdConns {
			if c == nil {
				missing++
			}
		}
		for _, c := range t.revConns {
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

// runTest runs one test on control connection c.
func (s *Server) runTest(c *ctl, asked *Spec, local, peer netip.Addr) error {
	t := &serverTest{spec: *asked, connCh: make(chan struct{}, 1)}
	sp := &t.spec
	if err := sp.Check(); err != nil {
		return &refusal{err}
	}
	notes := s.capSpec(sp)
	var cb [8]byte
	_, _ = rand.Read(cb[:])
	t.cookie = binary.BigEndian.Uint64(cb[:])
	defer t.close()
	if err := s.prepare(t, local, peer); err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return err
		}
		return &refusal{err}
	}
	acc := &Accept{Spec: *sp, Cookie: cookieString(t.cookie), Notes: notes}
	if t.udpRecv != nil {
		acc.UDPPorts = t.udpRecv.Ports
		t.udpRecv.Start()
	}
	if t.tcpLn != nil {
		acc.TCPPort = uint16(t.tcpLn.Addr().(*net.TCPAddr).Port)
		if sp.clientSends() {
			t.fwdConns = make([]*net.TCPConn, sp.Streams)
		}
		if sp.serverSends() {
			t.revConns = make([]*net.TCPConn, sp.Streams)
		}
		go t.acceptData(peer)
	}
	if t.echo != nil {
		acc.ProbePort = t.echo.port()
	}
	s.logf("%s: test %s %s, %s, %s", peer, sp.Proto, sp.Direction, sp.Duration.D(), sp.Rate)
	if err := c.write(&Message{Type: msgAccept, Accept: acc}); err != nil {
		return err
	}
	if _, err := c.expect(startTimeout, msgStart); err != nil {
		return fmt.Errorf("waiting for start: %w", err)
	}
	if t.tcpLn != nil {
		if err := t.waitData(5 * time.Second); err != nil {
			return err
		}
		t.tcpLn.Close()
		t.connMu.Lock()
		if len(t.fwdConns) > 0 {
			t.tcpRecv = newTCPReceiver(t.fwdConns)
		}
		var err error
		if len(t.revConns) > 0 {
			t.tcpSend, err = newTCPSender(t.revConns, sp)
		}
		t.connMu.Unlock()
		if err != nil {
			return err
		}
	}
	start := time.Now()
	tm := Timing{Start: start, Measure: start.Add(sp.Warmup.D()), End: start.Add(sp.Warmup.D() + sp.Duration.D())}
	if t.tcpRecv != nil {
		t.tcpRecv.Start(tm)
	}
	res := &ServerResult{}
	type sent struct {
		counts []Count
		tcp    []TCPStat
		err    error
	}
	sendDone := make(chan sent, 1)
	switch {
	case t.udpSend != nil:
		go func() { c, err := t.udpSend.Run(tm); sendDone <- sent{counts: c, err: err} }()
	case t.tcpSend != nil:
		go func() { c, st, err := t.tcpSend.Run(tm); sendDone <- sent{c, st, err} }()
	default:
		sendDone <- sent{}
	}
	// Sampling (and the XDP counter) cover the measured window only.
	var samp windowSampling
	var xdpMu sync.Mutex
	samp.startAt(tm.Measure, s.Sampling, nil, func() {
		xdpMu.Lock()
		t.xdpMark(false, 0)
		xdpMu.Unlock()
	})
	// From here on every way out goes through the teardown below: the
	// senders, receivers and sampler started above stop with the test.
	var readErr error
	if err := c.write(&Message{Type: msgRunning}); err != nil {
		readErr = err
	} else {
		// Interval reports, once a second, until stop.
		ivStop := make(chan struct{})
		ivDone := make(chan struct{})
		go func() {
			defer close(ivDone)
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-ivStop:
					return
				case now := <-tick.C:
					iv := &Interval{T: now.Sub(start).Seconds()}
					iv.ReceivedPackets, iv.ReceivedBytes = t.received()
					iv.SentPackets, iv.SentBytes = t.sentProgress()
					if c.write(&Message{Type: msgInterval, Interval: iv}) != nil {
						// The client is gone (or stuck): stop waiting
						// for its stop.
						c.c.Close()
						return
					}
				}
			}
		}()
		_, readErr = c.expect(time.Until(tm.End)+stopGrace, msgStop)
		close(ivStop)
		<-ivDone
	}
	if t.tcpRecv != nil {
		// A stop before the end (the client was interrupted, or vanished)
		// ends the window.
		t.tcpRecv.Cut(time.Now())
	}
	// Tear down in order: senders, receivers, sampling.
	if t.udpSend != nil {
		t.udpSend.Stop()
	}
	if t.tcpSend != nil {
		t.tcpSend.Stop()
	}
	sd := <-sendDone
	stopped := time.Now()
	if t.udpRecv != nil {
		counts, err := t.udpRecv.Stop()
		res.Received = counts
		res.Threads = append(res.Threads, t.udpRecv.Usage()...)
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
		}
	}
	if t.tcpRecv != nil {
		// The client's streams end after its stop; one that vanished
		// will not end them.
		grace := 2 * time.Second
		if readErr != nil {
			grace = 0
		}
		counts, st, err := t.tcpRecv.Stop(grace)
		res.Received = counts
		res.TCP = append(res.TCP, st...)
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
		}
	}
	rates, began, sampErr := samp.finish()
	if s.Sampling != nil && began {
		res.Samples = rates
		if len(rates) == 0 {
			res.SampleError = "no samples"
			if sampErr != nil {
				res.SampleError = sampErr.Error()
			}
		}
	}
	if readErr != nil {
		return fmt.Errorf("waiting for stop: %w", readErr)
	}
	res.Sent = sd.counts
	res.TCP = append(res.TCP, sd.tcp...)
	if t.udpSend != nil {
		res.Threads = append(res.Threads, t.udpSend.Usage()...)
	}
	if sd.err != nil {
		res.Errors = append(res.Errors, sd.err.Error())
	}
	end := tm.End
	if stopped.Before(end) {
		end = stopped
	}
	res.Seconds = max(end.Sub(tm.Measure).Seconds(), 0)
	xdpMu.Lock()
	if began {
		t.xdpMark(true, res.Seconds)
	}
	res.XDP = t.xdpStat
	xdpMu.Unlock()
	s.logf("%s: test done", peer)
	return c.write(&Message{Type: msgResult, Result: res})
}

func (t *serverTest) received() (packets, bytes uint64) {
	if t.udpRecv != nil {
		return t.udpRecv.Progress()
	}
	if t.tcpRecv != nil {
		return t.tcpRecv.Progress()
	}
	return 0, 0
}

func (t *serverTest) sentProgress() (packets, bytes uint64) {
	if t.udpSend != nil {
		return t.udpSend.Progress()
	}
	if t.tcpSend != nil {
		return t.tcpSend.Progress()
	}
	return 0, 0
}
