package traffic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	"linerate/internal/usage"
	"linerate/results"
	"linerate/traffic/rr"
	"linerate/traffic/session"
	"linerate/traffic/sock"
	"linerate/wire"
)

// target is one --to on the client side: its control connection, the test
// as its server runs it, and which parts of the session's flows are its.
type target struct {
	idx      int
	name     string
	addr     netip.AddrPort
	local    netip.Addr
	ctl      *ctl
	conn     net.Conn
	serverID string
	spec     wire.Spec
	acc      *wire.Accept
	// afxdp is how the AF_XDP engine's sockets to this target were bound
	// (nil: another engine).
	afxdp *results.AFXDPStat
	// fwd is what the client sends to this target, rev what it receives
	// from it: parts of the session's flows.
	fwd, rev []share
	prober   *rr.Prober
	// rr is the client of a transaction test (nil: another test).
	rr *rr.Client
	// Sent is what the client told the server it sent (the stop message).
	sent []results.Count

	mu       sync.Mutex
	reports  int            // server intervals filed
	filed    chan struct{}  // one more was filed (cap 1)
	last     *wire.Interval // latest server interval
	before   *wire.Interval // the one filed before it
	used     float64        // T of the latest interval the rates were taken from
	result   *results.ServerResult
	resultCh chan error
	// died is why the server failed before its result (its connection
	// broke, it reported an error), and base its report at the start of
	// the measured window: the last report less base is what it counted
	// up to then.
	died error
	base wire.Interval
}

// share is the part of a flow's per-stream counts that belongs to one
// target: n counts from from (n 0: all of them). The socket engine's one
// sender serves every target; the others serve one each.
type share struct {
	e       *session.Entry
	from, n int
}

func (s share) counts() []results.Count {
	c := s.e.Result().Counts
	if s.n == 0 {
		return c
	}
	if len(c) < s.from+s.n {
		return nil
	}
	return c[s.from : s.from+s.n]
}

// gather merges the counts of shares by stream id, every stream from 0 to
// the highest present (a missing one counts nothing); nil when there are
// no shares.
func gather(shares []share) []results.Count {
	var out []results.Count
	for _, s := range shares {
		for _, c := range s.counts() {
			for len(out) <= c.Stream {
				out = append(out, results.Count{Stream: len(out)})
			}
			out[c.Stream] = c
		}
	}
	return out
}

// gatherTCP is the TCP_INFO of the shares' flows.
func gatherTCP(shares []share) []results.TCPStat {
	var out []results.TCPStat
	for _, s := range shares {
		out = append(out, s.e.Result().TCP...)
	}
	return out
}

// parseTarget splits HOST[:PORT], defaulting the port.
func parseTarget(s string) (host string, port uint16, err error) {
	host, ps, err := net.SplitHostPort(s)
	if err != nil {
		// No port: a bare host or a bare IPv6 address.
		host, ps = s, strconv.Itoa(wire.DefaultPort)
		if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
			host = host[1 : len(host)-1]
		}
	}
	p, perr := strconv.ParseUint(ps, 10, 16)
	if perr != nil || p == 0 || host == "" {
		return "", 0, usage.Field("Targets", "%q: want HOST or HOST:PORT", s)
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
		return netip.AddrPort{}, usage.Field("Targets", "%s: cannot resolve %q: %v", s, host, err)
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
		return usage.Field("Bind", "%s: %w", bind, sock.ErrAddrNotLocal)
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
	err := t.dial(ctx, cfg)
	if !errors.Is(err, wire.ErrBusy) {
		return err
	}
	// Busy during the handshake: under a flood of silent connections the
	// server gives a slot to a newer one (traffic/door.go), this one's
	// maybe. One more try, a moment later, gets a slot of its own.
	t.conn.Close()
	select {
	case <-ctx.Done():
		return err
	case <-time.After(busyRetry):
	}
	return t.dial(ctx, cfg)
}

// busyRetry is how long connect waits before its one more try when the
// server answered busy.
const busyRetry = 300 * time.Millisecond

// dial opens the control connection to t and authenticates.
func (t *target) dial(ctx context.Context, cfg *Config) error {
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
	t.local = sock.AddrOf(conn.LocalAddr())
	m, err := clientHandshake(t.ctl, cfg.Token)
	if errors.Is(err, wire.ErrWrongToken) {
		return usage.Errorf("%s: %w", t.name, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	t.serverID = m.ServerID
	return nil
}

// readLoop files the server's messages after "running" until its result.
// A failure before the result (the connection broke: the server died; it
// reported an error; it broke the protocol) goes to resultCh and to fail,
// with the seconds since the server's start of its last interval report:
// what both ends' figures cover.
func (t *target) readLoop(deadline time.Time, fail func(lastT float64, err error)) {
	err := t.readResult(deadline)
	if err != nil {
		t.mu.Lock()
		t.died = err
		var lastT float64
		if t.last != nil {
			lastT = t.last.T
		}
		t.mu.Unlock()
		fail(lastT, err)
	}
	t.resultCh <- err
}

// readResult reads the server's messages until its result.
func (t *target) readResult(deadline time.Time) error {
	for {
		m, err := t.ctl.read(time.Until(deadline))
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("%s: the server's control connection closed mid-run (the server died?): %w", t.name, err)
		}
		if err != nil {
			return fmt.Errorf("%s: server: %w", t.name, err)
		}
		switch m.Type {
		case wire.MsgInterval:
			if m.Interval != nil {
				t.file(m.Interval)
			}
		case wire.MsgResult:
			if m.Result == nil {
				return fmt.Errorf("%s: %w: result without details", t.name, wire.ErrProtocol)
			}
			t.mu.Lock()
			t.result = m.Result
			t.mu.Unlock()
			return nil
		case wire.MsgError:
			return fmt.Errorf("%s: server: %w", t.name, peerError(m))
		default:
			return fmt.Errorf("%s: %w: unexpected %q", t.name, wire.ErrProtocol, m.Type)
		}
	}
}

// dead says whether the server failed before its result.
func (t *target) dead() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.died != nil
}

// file keeps the server's latest interval report, and the one that ends
// its warmup (the first tick at or after it) as the base of the window.
func (t *target) file(iv *wire.Interval) {
	t.mu.Lock()
	if iv.T < t.spec.Warmup.D().Seconds()+0.5 {
		t.base = *iv
	}
	t.before, t.last = t.last, iv
	t.reports++
	t.mu.Unlock()
	select {
	case t.filed <- struct{}{}:
	default:
	}
}

// hasReports says whether the server filed n interval reports.
func (t *target) hasReports(n int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reports >= n
}

// rates are what the server counted per second over its latest interval
// report (by its own clock): sent packets, bytes, received packets,
// bytes. ok is false when the server filed no report since the last call:
// what it counted since is unknown, and no earlier rate stands in for it.
func (t *target) rates() (rate [4]float64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	last, prev := t.last, t.before
	if last == nil || last.T <= t.used {
		return rate, false
	}
	t.used = last.T
	if prev == nil {
		prev = &wire.Interval{}
	}
	dt := last.T - prev.T
	return [4]float64{
		perSecond(last.SentPackets, prev.SentPackets, dt), perSecond(last.SentBytes, prev.SentBytes, dt),
		perSecond(last.ReceivedPackets, prev.ReceivedPackets, dt), perSecond(last.ReceivedBytes, prev.ReceivedBytes, dt),
	}, true
}

// serverResult is the server's result, or an empty one and why there is
// none. A server that died mid-run has none: died says so (its error is
// the run's already).
func (t *target) serverResult() (res *results.ServerResult, errs []string, died bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.result != nil:
		return t.result, nil, false
	case t.died != nil:
		return &results.ServerResult{}, nil, true
	}
	return &results.ServerResult{}, []string{"no result from the server"}, false
}

// reported is what the server counted in the measured window up to its
// last interval report, as one count per direction: its reports carry
// totals, not streams.
func (t *target) reported() (sent, received results.Count) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		return
	}
	d := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	l, b := t.last, t.base
	sent = results.Count{Packets: d(l.SentPackets, b.SentPackets), Bytes: d(l.SentBytes, b.SentBytes)}
	received = results.Count{Packets: d(l.ReceivedPackets, b.ReceivedPackets), Bytes: d(l.ReceivedBytes, b.ReceivedBytes)}
	received.Unique = received.Packets
	return sent, received
}

// sum adds counts up into one (stream 0).
func sum(cs []results.Count) results.Count {
	var out results.Count
	for _, c := range cs {
		out.Packets += c.Packets
		out.Bytes += c.Bytes
		out.Unique += c.Unique
		out.Dup += c.Dup
		out.Reorder += c.Reorder
	}
	return out
}

// close says bye and closes the control connection.
func (t *target) close() {
	if t.conn == nil {
		return
	}
	if t.ctl != nil {
		t.ctl.wt = time.Second
		_ = t.ctl.write(&Message{Type: wire.MsgBye})
	}
	t.conn.Close()
}

func ipName(v4 bool) string {
	if v4 {
		return "IPv4"
	}
	return "IPv6"
}

// perSecond is the rate of a counter that went from prev to cur in dt
// seconds; 0 when it went backwards (a connection's counter gone).
func perSecond(cur, prev uint64, dt float64) float64 {
	if cur < prev || dt <= 0 {
		return 0
	}
	return float64(cur-prev) / dt
}
