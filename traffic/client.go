package traffic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"linerate/box"
	"linerate/internal/usage"
	"linerate/internal/version"
)

// Config is one `linerate bench` run.
type Config struct {
	// Targets are servers as HOST, HOST:PORT or [V6]:PORT.
	Targets []string
	// Spec is the test to ask each target for. For UDP, Payload may be 0
	// when FrameSize is set.
	Spec Spec
	// FrameSize is the UDP Ethernet frame size with FCS (--size); the
	// payload follows from each target's address family.
	FrameSize int
	// Bind is the local source address (invalid: chosen by routing).
	Bind  netip.Addr
	Token string
	// CPUs pins the client's sender and receiver threads, round robin.
	CPUs []int
	// Engine is "socket" (default) or "ring" (AF_PACKET TX_RING; UDP,
	// IPv4, forward only).
	Engine string
	// Idle is how long latency probes run before the load (with
	// Spec.ProbeInterval).
	Idle time.Duration
	// Sampling records the client's counters (nil: none).
	Sampling Sampling
	// Setup runs fn where the client's sockets must be made (a network
	// namespace, in tests); nil runs it directly.
	Setup func(fn func() error) error
	// OnInterval is called once a second with the last second's figures.
	OnInterval func(IntervalStats)
	// DialTimeout bounds connecting to a target (0: 5s).
	DialTimeout time.Duration
}

func (c *Config) setup(fn func() error) error {
	if c.Setup == nil {
		return fn()
	}
	return c.Setup(fn)
}

// target is one --to on the client side.
type target struct {
	idx      int
	name     string
	addr     netip.AddrPort
	local    netip.Addr
	ctl      *ctl
	conn     net.Conn
	serverID string
	spec     Spec
	acc      *Accept
	udpRecv  *UDPReceiver
	tcpSend  *TCPSender
	tcpRecv  *TCPReceiver
	ring     []*ringFlow
	prober   *prober
	firstFwd int // index of this target's first flow in the shared UDP sender

	mu       sync.Mutex
	last     *Interval  // latest server interval
	prevIv   *Interval  // the one the last rates were computed to
	rate     [4]float64 // server's sent pkts, bytes, received pkts, bytes per second
	result   *ServerResult
	resultCh chan error
}

// parseTarget splits HOST[:PORT], defaulting the port.
func parseTarget(s string) (host string, port uint16, err error) {
	host, ps, err := net.SplitHostPort(s)
	if err != nil {
		// No port: a bare host or a bare IPv6 address.
		host, ps = s, strconv.Itoa(DefaultPort)
		if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
			host = host[1 : len(host)-1]
		}
	}
	p, perr := strconv.ParseUint(ps, 10, 16)
	if perr != nil || p == 0 || host == "" {
		return "", 0, usage.Errorf("--to %q: want HOST or HOST:PORT", s)
	}
	return host, uint16(p), nil
}

func resolve(ctx context.Context, s string) (netip.AddrPort, error) {
	host, port, err := parseTarget(s)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(ip.Unmap(), port), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, usage.Errorf("--to %s: cannot resolve %q: %v", s, host, err)
	}
	// Prefer IPv4, as the seeds' boxes do.
	best := ips[0]
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			best = ip
			break
		}
	}
	return netip.AddrPortFrom(best.Unmap(), port), nil
}

// dialError turns a failed connect into one line saying what is wrong.
func dialError(t *target, bind netip.Addr, err error) error {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%s: nothing listening on %s (is `linerate serve` running there?)", t.name, t.addr)
	case errors.Is(err, syscall.EADDRNOTAVAIL) && bind.IsValid():
		return usage.Errorf("--bind %s: %w", bind, ErrAddrNotLocal)
	case errors.Is(err, syscall.EHOSTUNREACH):
		return fmt.Errorf("%s: %s is unreachable (no route to host)", t.name, t.addr.Addr())
	case errors.Is(err, syscall.ENETUNREACH):
		return fmt.Errorf("%s: %s is unreachable (network is unreachable)", t.name, t.addr.Addr())
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%s: no answer from %s (unreachable, or a firewall drops it)", t.name, t.addr)
	}
	return fmt.Errorf("%s: connect to %s: %w", t.name, t.addr, err)
}

// connect opens the control connection and says hello.
func (t *target) connect(ctx context.Context, cfg *Config) error {
	d := net.Dialer{Timeout: cfg.DialTimeout}
	if d.Timeout == 0 {
		d.Timeout = 5 * time.Second
	}
	if cfg.Bind.IsValid() {
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(cfg.Bind, 0))
	}
	var conn net.Conn
	err := cfg.setup(func() error {
		var err error
		conn, err = d.DialContext(ctx, "tcp", t.addr.String())
		return err
	})
	if err != nil {
		return dialError(t, cfg.Bind, err)
	}
	t.conn = conn
	// A server that vanishes without closing fails the connection instead
	// of being waited for until the test's end.
	_ = watchPeer(conn, peerTimeout)
	t.ctl = newCtl(conn)
	t.local = addrOf(conn.LocalAddr())
	if err := t.ctl.write(&Message{Type: msgHello, Version: ProtocolVersion, Linerate: version.Version, Token: cfg.Token}); err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	m, err := t.ctl.expect(helloTimeout, msgWelcome)
	if err != nil {
		var pe *PeerError
		if errors.As(err, &pe) && strings.HasPrefix(pe.Msg, "wrong token") {
			return usage.Errorf("%s: %s", t.name, pe.Msg)
		}
		return fmt.Errorf("%s: %w", t.name, err)
	}
	t.serverID = m.ServerID
	return nil
}

// prepare sends the test, makes this end's sockets and reads the accept.
func (t *target) prepare(cfg *Config, sp Spec) error {
	v4 := t.addr.Addr().Is4()
	if sp.Proto == "udp" && cfg.FrameSize > 0 {
		sp.Payload = cfg.FrameSize - UDPOverhead(v4)
		if sp.Payload < headerLen {
			return usage.Errorf("--size %d: too small for %s UDP: frames carry at least %d bytes (%d of headers and FCS, %d of linerate's header)",
				cfg.FrameSize, ipName(v4), UDPOverhead(v4)+headerLen, UDPOverhead(v4), headerLen)
		}
	}
	if sp.Proto == "udp" && sp.serverSends() {
		rcvbuf := sp.RecvBuf
		if rcvbuf == 0 {
			rcvbuf = 4 << 20
		}
		err := cfg.setup(func() error {
			var err error
			bind := func(port uint16) (int, error) { return listenUDP(netip.AddrPortFrom(t.local, port), rcvbuf) }
			t.udpRecv, err = newUDPReceiver(bind, sp.Ports, sp.Threads, nil, cfg.CPUs)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		sp.ClientPorts = t.udpRecv.Ports
		t.udpRecv.Start()
	}
	if err := sp.Check(); err != nil {
		return usage.Wrap(err)
	}
	if err := t.ctl.write(&Message{Type: msgTest, Spec: &sp}); err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	m, err := t.ctl.expect(helloTimeout, msgAccept)
	if err != nil {
		var pe *PeerError
		if errors.As(err, &pe) && strings.HasPrefix(pe.Msg, "test refused") {
			// The server found the test itself wrong: bad input.
			return usage.Errorf("%s: %s", t.name, pe.Msg)
		}
		return fmt.Errorf("%s: %w", t.name, err)
	}
	if m.Accept == nil {
		return fmt.Errorf("%s: %w: accept without details", t.name, errProtocol)
	}
	t.acc = m.Accept
	t.spec = m.Accept.Spec
	t.spec.ClientPorts = sp.ClientPorts
	return nil
}

// openUDP makes this target's forward sockets, one per flow.
func (t *target) openUDP(cfg *Config) ([]int, error) {
	sp := &t.spec
	if len(t.acc.UDPPorts) != sp.Ports {
		return nil, fmt.Errorf("%s: %w: %d ports for %d", t.name, errProtocol, len(t.acc.UDPPorts), sp.Ports)
	}
	var fds []int
	err := cfg.setup(func() error {
		for p := range sp.Ports {
			for range sp.Streams {
				fd, err := dialUDP(netip.AddrPortFrom(t.local, 0), netip.AddrPortFrom(t.addr.Addr(), t.acc.UDPPorts[p]), 4<<20)
				if err != nil {
					return err
				}
				fds = append(fds, fd)
			}
		}
		return nil
	})
	if err != nil {
		closeFDs(fds)
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	v4 := t.addr.Addr().Is4()
	if mtu, err := pathMTU(fds[0], v4); err == nil && sp.Payload+UDPOverhead(v4)-ethOverhead > mtu {
		closeFDs(fds)
		return nil, usage.Errorf("%s: %d-byte frames (payload %d) do not fit the path MTU %d to %s without fragmentation",
			t.name, sp.Payload+UDPOverhead(v4), sp.Payload, mtu, t.addr.Addr())
	}
	return fds, nil
}

// openTCP makes this target's data connections: n in each direction the
// client takes part in.
func (t *target) openTCP(cfg *Config) error {
	sp := &t.spec
	d := net.Dialer{Timeout: 5 * time.Second, Control: tcpDialControl(sp.MSS)}
	d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(t.local, 0))
	cookie, err := parseCookie(t.acc.Cookie)
	if err != nil {
		return err
	}
	to := netip.AddrPortFrom(t.addr.Addr(), t.acc.TCPPort).String()
	dial := func(dir byte) ([]*net.TCPConn, error) {
		var conns []*net.TCPConn
		for i := range sp.Streams {
			var c net.Conn
			err := cfg.setup(func() error {
				var err error
				c, err = d.Dial("tcp", to)
				return err
			})
			if err != nil {
				for _, c := range conns {
					c.Close()
				}
				return nil, fmt.Errorf("%s: tcp data connection: %w", t.name, err)
			}
			tc := c.(*net.TCPConn)
			setNoDelay(tc)
			if _, err := tc.Write(putDataHello(cookie, i, dir)); err != nil {
				return nil, fmt.Errorf("%s: tcp data connection: %w", t.name, err)
			}
			conns = append(conns, tc)
		}
		return conns, nil
	}
	if sp.clientSends() {
		conns, err := dial('f')
		if err != nil {
			return err
		}
		if t.tcpSend, err = newTCPSender(conns, sp); err != nil {
			return err
		}
	}
	if sp.serverSends() {
		conns, err := dial('r')
		if err != nil {
			return err
		}
		t.tcpRecv = newTCPReceiver(conns)
	}
	return nil
}

// readLoop files the server's messages after "running" until its result.
func (t *target) readLoop(deadline time.Time) {
	for {
		m, err := t.ctl.read(time.Until(deadline))
		if err != nil {
			t.resultCh <- fmt.Errorf("%s: server: %w", t.name, err)
			return
		}
		switch m.Type {
		case msgInterval:
			if m.Interval != nil {
				t.mu.Lock()
				t.last = m.Interval
				t.mu.Unlock()
			}
		case msgResult:
			if m.Result == nil {
				t.resultCh <- fmt.Errorf("%s: %w: result without details", t.name, errProtocol)
				return
			}
			t.mu.Lock()
			t.result = m.Result
			t.mu.Unlock()
			t.resultCh <- nil
			return
		case msgError:
			t.resultCh <- fmt.Errorf("%s: server: %s", t.name, m.Error)
			return
		default:
			t.resultCh <- fmt.Errorf("%s: %w: unexpected %q", t.name, errProtocol, m.Type)
			return
		}
	}
}

func (t *target) close() {
	if t.prober != nil {
		t.prober.finish(0)
		t.prober = nil
	}
	if t.udpRecv != nil {
		t.udpRecv.Stop()
		t.udpRecv.Close()
	}
	if t.tcpSend != nil {
		t.tcpSend.Close()
	}
	if t.tcpRecv != nil {
		t.tcpRecv.Close()
	}
	for _, r := range t.ring {
		r.close()
	}
	if t.conn != nil {
		if t.ctl != nil {
			t.ctl.wt = time.Second
			_ = t.ctl.write(&Message{Type: msgBye})
		}
		t.conn.Close()
	}
}

func ipName(v4 bool) string {
	if v4 {
		return "IPv4"
	}
	return "IPv6"
}

// Run runs one test against every target at once and returns its result.
// When ctx ends mid-run (Ctrl-C) the senders stop, the servers are told,
// and the partial result comes back with Interrupted set and a nil error.
// A result may come back with an error too: what could be counted before
// a server failed.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if len(cfg.Targets) == 0 {
		return nil, usage.Errorf("no target: give --to HOST")
	}
	if cfg.Engine == "" {
		cfg.Engine = "socket"
	}
	if cfg.Engine != "socket" && cfg.Engine != "ring" {
		return nil, usage.Errorf("--engine %q: want socket or ring", cfg.Engine)
	}
	if cfg.Engine == "ring" && (cfg.Spec.Proto != "udp" || cfg.Spec.Direction != Forward) {
		return nil, usage.Errorf("--engine ring sends UDP from the client only: not with %s %s", cfg.Spec.Proto, cfg.Spec.Direction)
	}
	sp := cfg.Spec
	if sp.Proto == "udp" && cfg.FrameSize == 0 && sp.Payload == 0 {
		cfg.FrameSize = minFrameSize
	}
	if sp.Proto == "udp" && cfg.FrameSize > 0 {
		sp.Payload = max(cfg.FrameSize-UDPOverhead(true), headerLen) // checked per target
	}
	if sp.Proto == "udp" && len(sp.ClientPorts) == 0 && sp.serverSends() {
		sp.ClientPorts = make([]uint16, sp.Ports) // filled per target
	}
	if err := sp.Check(); err != nil {
		return nil, usage.Wrap(err)
	}
	sp.ClientPorts = nil

	var targets []*target
	defer func() {
		for _, t := range targets {
			t.close()
		}
	}()
	for i, s := range cfg.Targets {
		a, err := resolve(ctx, s)
		if err != nil {
			return nil, err
		}
		targets = append(targets, &target{idx: i, name: s, addr: a, resultCh: make(chan error, 1)})
	}
	if err := eachTarget(targets, func(t *target) error { return t.connect(ctx, &cfg) }); err != nil {
		return nil, err
	}
	for _, t := range targets {
		if err := t.prepare(&cfg, sp); err != nil {
			return nil, err
		}
	}
	run := &clientRun{cfg: &cfg, targets: targets, spec: targets[0].spec}
	if err := run.open(); err != nil {
		return nil, err
	}
	defer run.close()
	return run.run(ctx)
}

// eachTarget runs fn for every target at once and returns the first error.
func eachTarget(ts []*target, fn func(*target) error) error {
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = fn(t) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// clientRun is the running part of Run.
type clientRun struct {
	cfg     *Config
	targets []*target
	spec    Spec
	udpSend *UDPSender
	notes   []string
}

func (r *clientRun) open() error {
	var fds []int
	var streams []uint16
	sp := &r.spec
	for _, t := range r.targets {
		switch {
		case sp.Proto == "udp" && t.spec.clientSends() && r.cfg.Engine == "ring":
			if err := t.openRing(r.cfg); err != nil {
				return err
			}
		case sp.Proto == "udp" && t.spec.clientSends():
			f, err := t.openUDP(r.cfg)
			if err != nil {
				closeFDs(fds)
				return err
			}
			t.firstFwd = len(fds)
			fds = append(fds, f...)
			for i := range f {
				streams = append(streams, uint16(i))
			}
		case sp.Proto == "tcp":
			if err := t.openTCP(r.cfg); err != nil {
				return err
			}
		}
		// After opening: the ring engine adds a note of its own.
		r.notes = append(r.notes, prefixed(t.name, t.acc.Notes)...)
	}
	if len(fds) > 0 {
		v4 := r.targets[0].addr.Addr().Is4()
		pps := sp.Rate.PacketsPerSecond(sp.Payload+UDPOverhead(v4)) * float64(len(r.targets))
		r.udpSend = newUDPSender(udpSenderConfig{fds: fds, streams: streams, payload: sp.Payload, pps: pps, threads: sp.Threads, cpus: r.cfg.CPUs})
	}
	return nil
}

func (r *clientRun) close() {
	if r.udpSend != nil {
		r.udpSend.Close()
	}
}

func prefixed(p string, lines []string) []string {
	var out []string
	for _, l := range lines {
		out = append(out, p+": "+l)
	}
	return out
}

// progress is what the client has counted so far.
type progress struct {
	t                   time.Time
	sentPkts, sentBytes uint64
	recvPkts, recvBytes uint64
}

func (r *clientRun) progress(now time.Time) progress {
	p := progress{t: now}
	add := func(pk, by uint64, sent bool) {
		if sent {
			p.sentPkts += pk
			p.sentBytes += by
		} else {
			p.recvPkts += pk
			p.recvBytes += by
		}
	}
	if r.udpSend != nil {
		pk, by := r.udpSend.Progress()
		add(pk, by, true)
	}
	for _, t := range r.targets {
		for _, rf := range t.ring {
			pk, by := rf.progress()
			add(pk, by, true)
		}
		if t.tcpSend != nil {
			pk, by := t.tcpSend.Progress()
			add(pk, by, true)
		}
		if t.udpRecv != nil {
			pk, by := t.udpRecv.Progress()
			add(pk, by, false)
		}
		if t.tcpRecv != nil {
			pk, by := t.tcpRecv.Progress()
			add(pk, by, false)
		}
	}
	return p
}

// serverRates is what the servers counted per second over their latest
// interval reports (each server's own clock), summed over targets.
func (r *clientRun) serverRates() (sentPkts, sentBytes, recvPkts, recvBytes float64) {
	for _, t := range r.targets {
		t.mu.Lock()
		last, prev := t.last, t.prevIv
		if last != nil && (prev == nil || last.T > prev.T) {
			if prev == nil {
				prev = &Interval{}
			}
			dt := last.T - prev.T
			t.rate = [4]float64{
				float64(last.SentPackets-prev.SentPackets) / dt, float64(last.SentBytes-prev.SentBytes) / dt,
				float64(last.ReceivedPackets-prev.ReceivedPackets) / dt, float64(last.ReceivedBytes-prev.ReceivedBytes) / dt,
			}
			t.prevIv = last
		}
		sentPkts += t.rate[0]
		sentBytes += t.rate[1]
		recvPkts += t.rate[2]
		recvBytes += t.rate[3]
		t.mu.Unlock()
	}
	return
}

func (r *clientRun) run(ctx context.Context) (*Result, error) {
	sp := &r.spec
	cfg := r.cfg
	// Idle latency, before any load.
	if sp.ProbeInterval > 0 {
		for _, t := range r.targets {
			if t.acc.ProbePort == 0 {
				continue
			}
			err := cfg.setup(func() error {
				var err error
				t.prober, err = newProber(t.local, netip.AddrPortFrom(t.addr.Addr(), t.acc.ProbePort), sp.ProbeInterval.D())
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("%s: latency probes: %w", t.name, err)
			}
		}
		if cfg.Idle > 0 {
			select {
			case <-time.After(cfg.Idle):
			case <-ctx.Done():
			}
		}
		for _, t := range r.targets {
			if t.prober != nil {
				t.prober.setPhase(phaseLoad)
			}
		}
	}
	if err := eachTarget(r.targets, func(t *target) error { return t.ctl.write(&Message{Type: msgStart}) }); err != nil {
		return nil, err
	}
	if err := eachTarget(r.targets, func(t *target) error {
		if _, err := t.ctl.expect(startTimeout, msgRunning); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	start := time.Now()
	tm := Timing{Start: start, Measure: start.Add(sp.Warmup.D()), End: start.Add(sp.Warmup.D() + sp.Duration.D())}
	for _, t := range r.targets {
		go t.readLoop(tm.End.Add(stopGrace + 10*time.Second))
		if t.tcpRecv != nil {
			t.tcpRecv.Start(tm)
		}
	}

	// Senders.
	type sendOut struct {
		counts []Count
		err    error
	}
	var wg sync.WaitGroup
	var udpOut sendOut
	if r.udpSend != nil {
		wg.Add(1)
		go func() { defer wg.Done(); udpOut.counts, udpOut.err = r.udpSend.Run(tm) }()
	}
	tcpOut := make([]sendOut, len(r.targets))
	tcpStats := make([][]TCPStat, len(r.targets))
	for i, t := range r.targets {
		if t.tcpSend != nil {
			wg.Add(1)
			go func() { defer wg.Done(); tcpOut[i].counts, tcpStats[i], tcpOut[i].err = t.tcpSend.Run(tm) }()
		}
		for _, rf := range t.ring {
			wg.Add(1)
			go func() { defer wg.Done(); rf.run(tm) }()
		}
	}
	sendersDone := make(chan struct{})
	go func() { wg.Wait(); close(sendersDone) }()

	// Sampling over the measured window.
	var samplesMu sync.Mutex
	var lastSample *box.Rates
	var samp windowSampling
	samp.startAt(tm.Measure, cfg.Sampling, func(rt box.Rates) {
		samplesMu.Lock()
		lastSample = &rt
		samplesMu.Unlock()
	}, nil)

	res := &Result{Schema: ResultSchema, Linerate: version.Version, Time: start.UTC(), Spec: *sp, Engine: cfg.Engine}
	v4 := r.targets[0].addr.Addr().Is4()
	if sp.Proto == "udp" {
		res.FrameSize = sp.Payload + UDPOverhead(v4)
		res.Spec.ClientPorts = nil
	}
	overhead := UDPOverhead(v4)
	if sp.Proto == "tcp" {
		overhead = 0
	}
	// Interval lines until the senders are done (or Ctrl-C).
	tick := time.NewTicker(time.Second)
	prev := r.progress(start)
	interrupted := false
	stopSenders := func() {
		if r.udpSend != nil {
			r.udpSend.Stop()
		}
		for _, t := range r.targets {
			if t.tcpSend != nil {
				t.tcpSend.Stop()
			}
			for _, rf := range t.ring {
				rf.stop()
			}
		}
	}
	serverErr := make(chan error, len(r.targets))
	// The run ends when the client's senders are done and the test's time
	// is up (a reverse test has no senders here).
	endC := time.After(time.Until(tm.End))
	sendersRunning := true
loop:
	for sendersRunning || endC != nil {
		select {
		case <-sendersDone:
			sendersRunning = false
			sendersDone = nil
		case <-endC:
			endC = nil
		case <-ctx.Done():
			interrupted = true
			stopSenders()
			if sendersDone != nil {
				<-sendersDone
			}
			break loop
		case now := <-tick.C:
			cur := r.progress(now)
			dt := cur.t.Sub(prev.t).Seconds()
			iv := IntervalStats{T: now.Sub(start).Seconds(), Warmup: now.Before(tm.Measure)}
			if dt > 0 {
				sp, sb, rp, rb := r.serverRates()
				sp += float64(cur.sentPkts-prev.sentPkts) / dt
				sb += float64(cur.sentBytes-prev.sentBytes) / dt
				rp += float64(cur.recvPkts-prev.recvPkts) / dt
				rb += float64(cur.recvBytes-prev.recvBytes) / dt
				iv.SentPPS, iv.ReceivedPPS = sp, rp
				iv.SentBPS = (sb + sp*float64(overhead)) * 8
				iv.ReceivedBPS = (rb + rp*float64(overhead)) * 8
			}
			samplesMu.Lock()
			if lastSample != nil {
				iv.CPU = lastSample.CPU
			}
			samplesMu.Unlock()
			prev = cur
			res.Intervals = append(res.Intervals, iv)
			if cfg.OnInterval != nil {
				cfg.OnInterval(iv)
			}
		}
	}
	tick.Stop()
	stoppedAt := time.Now()
	if interrupted {
		// Tell the servers now; their senders stop too. What this end
		// reads from here on is past the window.
		res.Interrupted = true
		for _, t := range r.targets {
			if t.tcpRecv != nil {
				t.tcpRecv.Cut(stoppedAt)
			}
		}
	} else {
		// Let what is in flight arrive (and the servers' senders end).
		time.Sleep(300 * time.Millisecond)
	}

	// Stop: each server gets what the client sent to it.
	var fwdCounts = make([][]Count, len(r.targets))
	for i, t := range r.targets {
		switch {
		case r.udpSend != nil && t.spec.clientSends() && t.ring == nil:
			n := t.spec.flows()
			if len(udpOut.counts) >= t.firstFwd+n {
				fwdCounts[i] = renumber(udpOut.counts[t.firstFwd : t.firstFwd+n])
			}
		case t.ring != nil:
			fwdCounts[i] = ringCounts(t.ring)
		case t.tcpSend != nil:
			fwdCounts[i] = tcpOut[i].counts
		}
	}
	for i, t := range r.targets {
		if err := t.ctl.write(&Message{Type: msgStop, Sent: fwdCounts[i]}); err != nil {
			serverErr <- fmt.Errorf("%s: %w", t.name, err)
		}
	}
	var errs []error
	for _, t := range r.targets {
		select {
		case err := <-t.resultCh:
			if err != nil {
				errs = append(errs, err)
			}
		case <-time.After(stopGrace):
			errs = append(errs, fmt.Errorf("%s: no result from the server", t.name))
		}
	}
	close(serverErr)
	for err := range serverErr {
		errs = append(errs, err)
	}
	// The client's receivers and probes.
	revCounts := make([][]Count, len(r.targets))
	revStats := make([][]TCPStat, len(r.targets))
	var clientThreads []ThreadCPU
	if r.udpSend != nil {
		clientThreads = append(clientThreads, r.udpSend.Usage()...)
	}
	for i, t := range r.targets {
		if t.udpRecv != nil {
			c, err := t.udpRecv.Stop()
			revCounts[i] = c
			clientThreads = append(clientThreads, t.udpRecv.Usage()...)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", t.name, err))
			}
		}
		if t.tcpRecv != nil {
			c, st, err := t.tcpRecv.Stop(2 * time.Second)
			revCounts[i], revStats[i] = c, st
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", t.name, err))
			}
		}
		for _, rf := range t.ring {
			clientThreads = append(clientThreads, rf.usage)
			if rf.err != nil {
				errs = append(errs, fmt.Errorf("%s: ring: %w", t.name, rf.err))
			}
		}
	}
	clientSamples, _, err := samp.finish()
	if err != nil && len(clientSamples) == 0 {
		res.Notes = append(res.Notes, "client samples: "+err.Error())
	}
	var all [2][]time.Duration
	var allSent [2]int
	for _, t := range r.targets {
		tr := TargetResult{}
		if p := t.prober; p != nil {
			tr.LatencyIdle, tr.LatencyLoad = p.finish(200 * time.Millisecond)
			t.prober = nil
			for ph := range all {
				all[ph] = append(all[ph], p.rtts[ph]...)
				allSent[ph] += p.sent[ph]
			}
		}
		res.Targets = append(res.Targets, tr)
	}
	if allSent[phaseIdle] > 0 {
		res.Summary.LatencyIdle = summarize(all[phaseIdle], allSent[phaseIdle])
	}
	if allSent[phaseLoad] > 0 {
		res.Summary.LatencyLoad = summarize(all[phaseLoad], allSent[phaseLoad])
	}
	if udpOut.err != nil {
		errs = append(errs, udpOut.err)
	}
	for _, o := range tcpOut {
		if o.err != nil {
			errs = append(errs, o.err)
		}
	}
	// Assemble.
	clientWindow := stoppedAt.Sub(tm.Measure).Seconds()
	if !interrupted {
		clientWindow = tm.End.Sub(tm.Measure).Seconds()
	}
	clientWindow = max(clientWindow, 0)
	res.Notes = append(res.Notes, r.notes...)
	for i, t := range r.targets {
		tr := &res.Targets[i]
		tr.Target, tr.Address, tr.Local, tr.ServerID = t.name, t.addr.String(), t.local.String(), t.serverID
		t.mu.Lock()
		sr := t.result
		t.mu.Unlock()
		if sr == nil {
			sr = &ServerResult{}
			tr.Errors = append(tr.Errors, "no result from the server")
		}
		tr.Errors = append(tr.Errors, sr.Errors...)
		tr.Threads = sr.Threads
		tr.XDP = sr.XDP
		if t.spec.clientSends() {
			sent := fwdCounts[i]
			var stats []TCPStat
			if sp.Proto == "tcp" {
				stats = tcpStats[i]
			}
			tot, streams := combine(i, Forward, sp.Proto, sent, sr.Received, stats, clientWindow, overhead)
			tr.Forward = &tot
			res.Streams = append(res.Streams, streams...)
		}
		if t.spec.serverSends() {
			var stats []TCPStat
			for _, s := range sr.TCP {
				if s.Side == "sender" {
					stats = append(stats, s)
				}
			}
			w := sr.Seconds
			if w == 0 {
				w = clientWindow
			}
			tot, streams := combine(i, Reverse, sp.Proto, sr.Sent, revCounts[i], stats, w, overhead)
			tr.Reverse = &tot
			res.Streams = append(res.Streams, streams...)
		}
		for _, d := range []*Totals{tr.Forward, tr.Reverse} {
			if d != nil {
				tr.Totals.add(*d)
			}
		}
		res.Summary.Totals.add(tr.Totals)
		for _, s := range sr.Samples {
			res.Samples = append(res.Samples, Sample{Side: "server", Target: i, Rates: s})
		}
		if sr.SampleError != "" {
			tr.Notes = append(tr.Notes, "server samples: "+sr.SampleError)
		}
	}
	for _, s := range clientSamples {
		res.Samples = append([]Sample{{Side: "client", Target: -1, Rates: s}}, res.Samples...)
	}
	// Keep the client's samples first, in time order.
	orderSamples(res.Samples)
	r.cost(res, clientSamples)
	verdict(res, clientThreads)
	for _, e := range errs {
		res.Errors = append(res.Errors, e.Error())
	}
	return res, errors.Join(errs...)
}

// renumber gives counts stream ids from 0, in order.
func renumber(c []Count) []Count {
	out := make([]Count, len(c))
	for i, x := range c {
		x.Stream = i
		out[i] = x
	}
	return out
}

// combine matches a direction's sender and receiver counts stream by
// stream.
func combine(target int, dir, proto string, sent, recv []Count, stats []TCPStat, seconds float64, overhead int) (Totals, []StreamResult) {
	n := max(len(sent), len(recv))
	var tot Totals
	tot.Seconds = seconds
	var out []StreamResult
	for i := range n {
		var s, r Count
		if i < len(sent) {
			s = sent[i]
		}
		if i < len(recv) {
			r = recv[i]
		}
		st := StreamResult{Target: target, Stream: i, Direction: dir}
		t := &st.Totals
		t.Seconds = seconds
		t.SentPackets, t.SentBytes = s.Packets, s.Bytes
		t.ReceivedPackets, t.ReceivedBytes = r.Packets, r.Bytes
		if proto == "udp" {
			t.Reordered, t.Duplicates = r.Reorder, r.Dup
			if s.Packets > r.Unique {
				t.LostPackets = s.Packets - r.Unique
			}
			t.sentBits = float64(s.Bytes+s.Packets*uint64(overhead)) * 8
			t.recvBits = float64(r.Bytes+r.Packets*uint64(overhead)) * 8
		} else {
			// A byte stream: each end counts what it wrote or read between
			// the start and the end of the window by its own clock. The
			// bytes in flight at either edge are in one count and not the
			// other, so the two differ by at most what was queued
			// (written, not yet read) at the window's start or end.
			t.sentBits = float64(s.Bytes) * 8
			t.recvBits = float64(r.Bytes) * 8
			for j := range stats {
				if stats[j].Stream == i {
					st.TCP = &stats[j]
					t.Retransmits = uint64(stats[j].Retransmits)
				}
			}
		}
		t.rates()
		tot.add(*t)
		out = append(out, st)
	}
	tot.rates()
	return tot, out
}
