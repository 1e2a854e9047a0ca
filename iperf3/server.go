package iperf3

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"linerate/box"
	"linerate/internal/admit"
	"linerate/internal/order"
	"linerate/results"
	"linerate/wire"
)

// Server answers unmodified iperf3 clients (`iperf3 -c`) as `iperf3 -s`
// does: one test at a time on one port, TCP data connections and UDP
// datagrams on that port too. Each test that ran becomes a result with
// this machine's samples (Done).
type Server struct {
	// Allow, when set, are the only client addresses served; any other
	// gets iperf3's "test authorization failed".
	Allow []netip.Prefix
	// Limits: a test longer than MaxDuration, or asking more than MaxRate
	// in a direction, is refused with iperf3's own error; a direction the
	// client leaves unlimited and this end sends is capped at MaxRate.
	Limits wire.Limits
	// MaxClients bounds the connections read at once before their cookie
	// arrives, apart from the running test's client's (0: 8). One address
	// holds at most half of them; more from it are turned away with
	// ACCESS_DENIED, and when all are taken a newcomer takes the slot of
	// one whose address holds the most (internal/admit). Running tests are
	// one at a time regardless, as in iperf3.
	MaxClients int
	// Sampling records this machine's counters during each test (nil: none).
	Sampling Sampling
	// Setup runs fn where the test's UDP socket must be made (inside a
	// network namespace, in tests); nil runs it directly.
	Setup func(fn func() error) error
	// Logf, when set, receives one line per test and per refused client.
	Logf func(format string, args ...any)
	// Done receives each test that ran, even one that failed midway.
	Done func(*results.Result)

	mu      sync.Mutex
	pending *admit.Table // connections waiting for their cookie
	cur     *serverRun
	wg      sync.WaitGroup
}

// Server's iperf3 error numbers beyond the client's (src/iperf_api.h).
const (
	ieUnimp    = 13  // IEUNIMP: "an option you are trying to set is not implemented yet"
	ieAuthTest = 142 // IEAUTHTEST: "test authorization failed"
)

func (s *Server) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

// Serve accepts iperf3 clients on ln until ctx ends; a test running then
// is ended with SERVER_TERMINATE and kept.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer s.wg.Wait()
	pending := s.slots()
	for seq := uint64(0); ; seq++ {
		// Out of descriptors, a connection waiting for its cookie is given
		// up, and accept tries again after a pause.
		c, err := admit.Accept(ln, ctx.Done(), pending.Shed, func(err error, pause time.Duration) {
			s.logf("iperf3: accept on %s: %v; trying again in %s", ln.Addr(), err, pause)
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("iperf3: accept: %w", err)
		}
		s.wg.Go(func() { s.handle(ctx, dataConn{c, seq}) })
	}
}

// slots is the table of connections waiting for their cookie, made on
// first use.
func (s *Server) slots() *admit.Table {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		limit := cmp.Or(max(s.MaxClients, 0), 8)
		s.pending = admit.NewTable(limit, max(limit/2, 1))
	}
	return s.pending
}

// dataConn is an accepted connection and its place in the order the
// listener accepted them: a client opens its data connections one after
// another, and iperf3 tells a bidirectional test's sending streams from
// its receiving ones by that order, not by when each cookie was read.
type dataConn struct {
	net.Conn
	seq uint64
}

// handle reads a new connection's cookie and gives it to the running
// test (a data connection) or starts a test with it (a control one). A
// client outside Allow is refused before anything is read; until its
// cookie arrives a connection holds a slot (Server.MaxClients), of the
// running test's own when it comes from that test's client.
func (s *Server) handle(ctx context.Context, nc dataConn) {
	c := ctrl{nc}
	peer := addrPort(nc.RemoteAddr())
	if !s.allowed(peer.Addr()) {
		s.refuse(c, peer, "not in --allow", ieAuthTest)
		return
	}
	pending := s.slots()
	s.mu.Lock()
	if cur := s.cur; cur != nil && cur.client.Addr() == peer.Addr() {
		pending = cur.hellos
	}
	s.mu.Unlock()
	slot, err := pending.Enter(peer.Addr(), func() { _ = c.SetReadDeadline(time.Unix(1, 0)) })
	if err != nil {
		s.refuse(c, peer, fmt.Sprintf("%v waiting for their cookie (--max-clients)", err), 0)
		return
	}
	var cookie [CookieLen]byte
	err = c.readFull(cookie[:], stepTimeout, "cookie")
	if !slot.Leave() {
		s.refuse(c, peer, "its slot went to a newer connection before its cookie came", 0)
		return
	}
	s.mu.Lock()
	cur := s.cur
	stream := err == nil && cur != nil && cur.cookie == cookie && cur.client.Addr() == peer.Addr()
	start := err == nil && cur == nil
	if start {
		cur = &serverRun{srv: s, c: c, client: peer, cookie: cookie, tcp: make(chan dataConn, maxStreams),
			hellos: admit.NewTable(maxStreams, maxStreams)}
		s.cur = cur
	}
	s.mu.Unlock()
	switch {
	case err != nil:
		s.logf("iperf3 client %s: %v", peer, err)
		nc.Close()
	case stream:
		cur.addStream(nc)
	case start:
		s.serveTest(ctx, cur)
	default:
		s.refuse(c, peer, "busy with another test", 0)
	}
}

// refuse turns a client away: ACCESS_DENIED (code 0, "the server is
// busy") or SERVER_ERROR with iperf3's error number.
func (s *Server) refuse(c ctrl, peer netip.AddrPort, why string, code int32) {
	defer c.Close()
	s.logf("iperf3 client %s refused: %s", peer, why)
	if code == 0 {
		_ = c.writeState(AccessDenied)
		return
	}
	_ = c.writeError(code)
}

func (s *Server) allowed(a netip.Addr) bool {
	if len(s.Allow) == 0 {
		return true
	}
	for _, p := range s.Allow {
		if p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

func addrPort(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}

// serveTest runs one test on its control connection and frees the
// server for the next.
func (s *Server) serveTest(ctx context.Context, sr *serverRun) {
	defer func() {
		s.mu.Lock()
		s.cur = nil
		s.mu.Unlock()
		sr.close()
	}()
	stop := context.AfterFunc(ctx, func() { _ = sr.c.SetReadDeadline(time.Now()) })
	defer stop()
	res, err := sr.run(ctx)
	if res != nil {
		tr := &res.Targets[0]
		tr.Target, tr.Address, tr.Local = "iperf3 client "+sr.client.String(), sr.client.String(), sr.c.LocalAddr().String()
		tr.IPerf3.Version = sr.t.p.ClientVersion
		res.Notes = append(res.Notes, sr.notes...)
		res.Interrupted = ctx.Err() != nil
		if err != nil {
			tr.Errors = append(tr.Errors, err.Error())
		}
		if s.Done != nil {
			s.Done(res)
		}
	}
	switch {
	case err != nil:
		s.logf("iperf3 client %s: %v", sr.client, err)
	case res != nil:
		sum := res.Summary
		s.logf("iperf3 client %s: %s %s, %d streams, %.0f s: sent %d B, received %d B", sr.client,
			res.Spec.Proto, res.Spec.Direction, res.Spec.Streams, sr.t.seconds(), sum.SentBytes, sum.ReceivedBytes)
	}
}

// serverRun is one test on the server.
type serverRun struct {
	srv    *Server
	c      ctrl
	client netip.AddrPort
	cookie [CookieLen]byte
	t      *test
	// tcp receives the test's data connections (cookie read).
	tcp chan dataConn
	// hellos are the client's connections waiting for their cookie.
	hellos *admit.Table
	udp    *net.UDPConn
	notes  []string
	mu     sync.Mutex
	done   bool // no more data connections taken
}

// addStream takes a data connection of this test, or closes it when the
// streams are all there.
func (sr *serverRun) addStream(nc dataConn) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.done {
		nc.Close()
		return
	}
	select {
	case sr.tcp <- nc:
	default:
		nc.Close()
	}
}

// close closes the test's data connections and socket.
func (sr *serverRun) close() {
	sr.mu.Lock()
	sr.done = true
	sr.mu.Unlock()
	sr.c.Close()
	for {
		select {
		case nc := <-sr.tcp:
			nc.Close()
			continue
		default:
		}
		break
	}
	if sr.t != nil {
		for _, st := range sr.t.streams {
			if st.tcp != nil {
				st.tcp.Close()
			}
		}
	}
	if sr.udp != nil {
		sr.udp.Close()
	}
}

// fail ends the test with SERVER_ERROR code and returns err.
func (sr *serverRun) fail(code int32, err error) error {
	_ = sr.c.writeError(code)
	return err
}

// run goes through the server's control states; once data flowed it
// returns a result even on an error.
func (sr *serverRun) run(ctx context.Context) (*results.Result, error) {
	c := sr.c
	if err := c.writeState(ParamExchange); err != nil {
		return nil, err
	}
	b, err := c.readJSON(maxParamsJSON, stepTimeout, "parameters")
	if err != nil {
		return nil, sr.fail(ieParams, err)
	}
	p, err := parseParams(b)
	if err != nil {
		var q Params
		if json.Unmarshal(b, &q) == nil && (q.Num != 0 || q.Blocks != 0 || q.Time == 0) {
			return nil, sr.fail(ieUnimp, err)
		}
		return nil, sr.fail(ieParams, err)
	}
	sr.t = newTest(p, false, sr.client.Addr().Is4())
	if code, err := sr.limit(); err != nil {
		return nil, sr.fail(code, err)
	}
	if t := sr.t; t.flow.udp {
		// The socket is open before the client may say hello on it.
		if err := sr.openUDP(); err != nil {
			return nil, sr.fail(ieStreamID, err)
		}
	}
	if err := c.writeState(CreateStreams); err != nil {
		return nil, err
	}
	if err := sr.acceptStreams(ctx); err != nil {
		return nil, sr.fail(ieStreamID, fmt.Errorf("creating the streams: %w", err))
	}
	if err := c.writeState(TestStart); err != nil {
		return nil, err
	}
	if err := c.writeState(TestRunning); err != nil {
		return nil, err
	}
	return sr.measure(ctx)
}

// limit applies the server's limits to the test: the error number and
// why when it is refused; a note when a rate is capped.
func (sr *serverRun) limit() (int32, error) {
	t, lim := sr.t, sr.srv.Limits
	total := time.Duration(t.p.Time+t.p.Omit) * time.Second
	if d := lim.MaxDuration.D(); d > 0 && total > d {
		return ieDuration, fmt.Errorf("the test asks %s, this server runs %s at most (--max-duration)", total, d)
	}
	if lim.MaxRate.Unlimited() {
		return 0, nil
	}
	frame := t.flow.size
	if t.flow.udp {
		frame += wire.UDPOverhead(t.v4)
	}
	asked := t.spec().Rate
	if asked.Unlimited() {
		clientSends := false
		for i := range t.streamCount() {
			clientSends = clientSends || t.clientSends(i)
		}
		if clientSends {
			return ieTotalRate, fmt.Errorf("the client sends as fast as it can, this server takes %s at most (--max-rate): give -b", lim.MaxRate)
		}
		// Only this end sends: pace it at the cap.
		pps := lim.MaxRate.PacketsPerSecond(frame)
		payload := float64(t.flow.size)
		if !t.flow.udp {
			payload = float64(frame)
		}
		t.flow.rate = pps * payload * 8 / t.p.Parallel
		sr.notes = append(sr.notes, fmt.Sprintf("server caps the rate at %s: the client asked as fast as possible", lim.MaxRate))
		return 0, nil
	}
	if asked.PacketsPerSecond(frame) > lim.MaxRate.PacketsPerSecond(frame)*1.0001 {
		return ieTotalRate, fmt.Errorf("the test asks %s per direction, this server takes %s at most (--max-rate)", asked, lim.MaxRate)
	}
	return 0, nil
}

// acceptStreams takes the test's data streams in the order the client
// opens them: TCP connections with the cookie, or UDP hellos from the
// client's address, each answered.
func (sr *serverRun) acceptStreams(ctx context.Context) error {
	t := sr.t
	deadline := time.Now().Add(stepTimeout)
	if t.flow.udp {
		return sr.acceptUDP(deadline)
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	conns := make([]dataConn, 0, t.streamCount())
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for len(conns) < t.streamCount() {
		select {
		case nc := <-sr.tcp:
			conns = append(conns, nc)
		case <-timer.C:
			return fmt.Errorf("%d of %d data connections after %s", len(conns), t.streamCount(), stepTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	sr.mu.Lock()
	sr.done = true
	sr.mu.Unlock()
	// Stream i is the i-th connection the client opened.
	order.Sort(conns, func(a, b dataConn) int { return cmp.Compare(a.seq, b.seq) })
	for i, nc := range conns {
		st := t.newStream(i)
		st.tcp, st.write = nc.Conn, nc.Write
	}
	conns = nil
	return nil
}

// openUDP opens the test's UDP socket on the control connection's
// address and port.
func (sr *serverRun) openUDP() error {
	local := addrPort(sr.c.LocalAddr())
	open := func() error {
		u, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(local))
		if err != nil {
			return err
		}
		_ = u.SetReadBuffer(4 << 20)
		_ = u.SetWriteBuffer(4 << 20)
		sr.udp = u
		return nil
	}
	var err error
	if sr.srv.Setup != nil {
		err = sr.srv.Setup(open)
	} else {
		err = open()
	}
	if err != nil {
		return fmt.Errorf("UDP socket on %s: %w", local, err)
	}
	return nil
}

// acceptUDP answers a hello per stream from the client's address.
func (sr *serverRun) acceptUDP(deadline time.Time) error {
	t := sr.t
	_ = sr.udp.SetReadDeadline(deadline)
	defer sr.udp.SetReadDeadline(time.Time{})
	seen := map[netip.AddrPort]bool{}
	buf := make([]byte, 64<<10)
	for len(t.streams) < t.streamCount() {
		n, from, err := sr.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			return fmt.Errorf("%d of %d UDP hellos: %w", len(t.streams), t.streamCount(), err)
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		ok, legacy := isHello(buf[:n])
		if !ok || from.Addr() != sr.client.Addr() || seen[from] {
			continue
		}
		seen[from] = true
		st := t.newStream(len(t.streams))
		st.peer = from
		st.write = func(b []byte) (int, error) { return sr.udp.WriteToUDPAddrPort(b, from) }
		reply := udpReply
		if legacy {
			reply = legacyUDPReply
		}
		if _, err := st.write(reply[:]); err != nil {
			return fmt.Errorf("UDP answer to %s: %w", from, err)
		}
	}
	return nil
}

// udpRecvLoop reads the test's UDP socket and counts each datagram on the
// stream its sender opened, until the socket's deadline or close.
func (sr *serverRun) udpRecvLoop() {
	byPeer := map[netip.AddrPort]*stream{}
	for _, st := range sr.t.streams {
		if !st.send {
			byPeer[st.peer] = st
		}
	}
	buf := make([]byte, max(sr.t.flow.size, 64<<10))
	for {
		n, from, err := sr.udp.ReadFromUDPAddrPort(buf)
		if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
		if err != nil {
			continue
		}
		if st := byPeer[netip.AddrPortFrom(from.Addr().Unmap(), from.Port())]; st != nil {
			sr.t.flow.datagram(st, buf[:n])
		}
	}
}

// measure runs the test until the client's TEST_END, then trades
// results: EXCHANGE_RESULTS, the client's results, this end's,
// DISPLAY_RESULTS, and the client's IPERF_DONE.
func (sr *serverRun) measure(ctx context.Context) (*results.Result, error) {
	c, t := sr.c, sr.t
	var stopSampling func() ([]box.Rates, error)
	if sr.srv.Sampling != nil {
		stopSampling = sr.srv.Sampling(nil)
	}
	r, stopTick := t.begin(nil)
	var udpDone sync.WaitGroup
	if t.flow.udp {
		udpDone.Go(sr.udpRecvLoop)
	}
	state, err := c.readState(time.Duration(t.p.Time+t.p.Omit)*time.Second + stepTimeout)
	// Stop counting: iperf3 counts what arrived before TEST_END.
	r.stopSending(t.streams)
	now := time.Now()
	for _, st := range t.streams {
		if !st.send && st.tcp != nil {
			_ = st.tcp.SetReadDeadline(now)
		}
	}
	if sr.udp != nil {
		_ = sr.udp.SetReadDeadline(now)
	}
	t.finish()
	r.wg.Wait()
	udpDone.Wait()
	stopTick()
	samples, sampleErr := t.wrapUp(stopSampling)
	sr.closeStreams()
	switch {
	case ctx.Err() != nil:
		_ = c.writeState(ServerTerminate)
		err = fmt.Errorf("this server stopped during the test")
	case err != nil:
		err = fmt.Errorf("waiting for TEST_END: %w", err)
	case state == ClientTerminate:
		err = fmt.Errorf("%w (%s)", ErrTerminated, state)
	case state != TestEnd:
		err = sr.fail(ieStreamID, fmt.Errorf("%w: got %s, want TEST_END", ErrProtocol, state))
	}
	var peer *Results
	if err == nil {
		peer, err = sr.exchange()
	}
	for _, st := range t.streams {
		if st.err != nil && err == nil {
			err = fmt.Errorf("stream %d: %w", st.id, st.err)
		}
	}
	return t.result(peer, "client", samples, sampleErr), err
}

// closeStreams closes the test's TCP data connections once the data
// stopped, before anything else goes on the control connection, as
// iperf3 -s does on TEST_END. A reverse-mode iperf3 client goes on
// draining its streams after its TEST_END, with the sockets made blocking
// again and each read wanting a whole block (iperf_run_client,
// iperf_recv, Nread): only the end of the stream returns a read this end
// stopped feeding midway, and until then the client reads no
// EXCHANGE_RESULTS. What the sockets still hold is sent before the FIN.
func (sr *serverRun) closeStreams() {
	for _, st := range sr.t.streams {
		if st.tcp != nil {
			_ = st.tcp.Close()
		}
	}
}

// exchange trades results once the test ended.
func (sr *serverRun) exchange() (*Results, error) {
	c, t := sr.c, sr.t
	if err := c.writeState(ExchangeResults); err != nil {
		return nil, err
	}
	b, err := c.readJSON(maxResultsJSON, stepTimeout, "the client's results")
	if err != nil {
		return nil, err
	}
	peer, err := parseResults(b, t.ids())
	if err != nil {
		return nil, sr.fail(ieParams, err)
	}
	if err := c.writeJSON(t.report(), "results"); err != nil {
		return peer, err
	}
	if err := c.writeState(DisplayResults); err != nil {
		return peer, err
	}
	return peer, c.expect(IperfDone, stepTimeout)
}
