package rr

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"linerate/results"
	"linerate/traffic/session"
	"linerate/traffic/sock"
	"linerate/wire"
)

// Echo answers latency probes on a UDP socket, only from the address of
// the control connection's peer. It is a receiving flow that answers from
// the moment it is made (the client probes before the test starts) until
// it is closed; it counts nothing.
type Echo struct {
	conn *net.UDPConn
	peer netip.Addr
	done chan struct{}
	halt chan struct{}
	once sync.Once
}

// NewEcho answers probes on a port of local from peer alone, from now
// until it is closed.
func NewEcho(local netip.Addr, peer netip.Addr) (*Echo, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0)))
	if err != nil {
		return nil, err
	}
	if err := stampReceipts(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("latency echo: %w", err)
	}
	e := &Echo{conn: c, peer: peer.Unmap(), done: make(chan struct{}), halt: make(chan struct{})}
	go e.serve()
	return e, nil
}

// Port is the port the echo answers on.
func (e *Echo) Port() uint16 { return netip.MustParseAddrPort(e.conn.LocalAddr().String()).Port() }

func (e *Echo) Run(session.Timing)                { <-e.halt }
func (e *Echo) Cut(time.Time)                     {}
func (e *Echo) Stop(time.Duration)                { e.once.Do(func() { close(e.halt) }) }
func (e *Echo) Progress() (packets, bytes uint64) { return 0, 0 }
func (e *Echo) Collect() session.Result           { return session.Result{} }

// serve answers each probe with itself, flagged as a reply, and (in a
// probe long enough to carry it) how long it held it since the kernel
// received it.
func (e *Echo) serve() {
	defer close(e.done)
	buf := make([]byte, 2048)
	oob := make([]byte, unix.CmsgSpace(16))
	for {
		n, oobn, _, from, err := e.conn.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return
		}
		h, ok := wire.ParseHeader(buf[:n])
		if !ok || h.Flags != wire.FlagProbe || from.Addr().Unmap() != e.peer {
			continue
		}
		buf[1] = wire.FlagReply
		if n >= wire.ProbeLen {
			var held time.Duration
			if at, ok := kernelTime(oob[:oobn]); ok {
				held = time.Since(at)
			}
			wire.PutHeld(buf[:n], held)
		}
		_, _ = e.conn.WriteToUDPAddrPort(buf[:n], from)
	}
}

func (e *Echo) Close() error {
	e.Stop(0)
	err := e.conn.Close()
	<-e.done
	return err
}

// Prober sends probes to a server's echo port at a fixed interval and
// keeps the round trips, labelled by the phase they were sent in. It is a
// receiving flow that probes from the moment it is made (the idle phase
// comes before the test) until it is stopped; it counts no traffic.
type Prober struct {
	conn     *net.UDPConn
	raw      syscall.RawConn
	interval time.Duration
	mu       sync.Mutex
	phase    int // index into rtts
	rtts     [2][]time.Duration
	sent     [2]int
	keep     bool         // keep every reply (replies), not only the round trips
	replies  []probeReply // every answered probe, in the order answered, with keep
	seq      uint32
	quiet    chan struct{} // closed: send no more probes
	rbuf     []byte        // a reply read (by send, then by finish)
	oob      []byte        // its control message
	halt     chan struct{} // closed: stop was called
	haltOnce sync.Once
	finished sync.Once
	wg       sync.WaitGroup
}

// The phases a probe is sent in: before the load, and under it.
const (
	PhaseIdle = 0
	PhaseLoad = 1
)

// probeReply is one answered probe: when it was sent and its round trip.
type probeReply struct {
	sent time.Time
	rtt  time.Duration
	idle bool
}

// NewProber starts probing to from local (any address when invalid) every
// interval; with keep it keeps every answered probe for OverTime.
func NewProber(local netip.Addr, to netip.AddrPort, interval time.Duration, keep bool) (*Prober, error) {
	var laddr *net.UDPAddr
	if local.IsValid() {
		laddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0))
	}
	c, err := net.DialUDP("udp", laddr, net.UDPAddrFromAddrPort(to))
	if err != nil {
		return nil, err
	}
	raw, err := c.SyscallConn()
	if err == nil {
		err = stampReceipts(c)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("latency probes: %w", err)
	}
	p := &Prober{conn: c, raw: raw, interval: interval, keep: keep, quiet: make(chan struct{}), halt: make(chan struct{}),
		rbuf: make([]byte, 2048), oob: make([]byte, unix.CmsgSpace(16))}
	p.wg.Add(1)
	go p.send()
	return p, nil
}

// SetPhase files the probes sent from now on under phase ph.
func (p *Prober) SetPhase(ph int) {
	p.mu.Lock()
	p.phase = ph
	p.mu.Unlock()
}

// send sends a probe every interval, and before each one reads the
// replies that came since the last: one wakeup a probe on this end, not
// two (a goroutine woken for each reply), on a machine whose CPUs the
// test is using. A reply's round trip ends when the kernel received it
// (SO_TIMESTAMPNS), however long it then waited to be read, less the
// time the echo held it.
func (p *Prober) send() {
	defer p.wg.Done()
	t := time.NewTicker(p.interval)
	defer t.Stop()
	buf := make([]byte, wire.ProbeLen)
	for {
		select {
		case <-p.quiet:
			return
		case <-t.C:
		}
		p.drain()
		p.mu.Lock()
		ph := p.phase
		p.sent[ph]++
		p.seq++
		seq := p.seq
		p.mu.Unlock()
		// The phase rides in the stream field so that a late reply is
		// filed under the phase it was sent in.
		wire.PutHeader(buf, wire.Header{Flags: wire.FlagProbe, Stream: uint16(ph), Seq: seq, Sent: time.Now().UnixNano()})
		_, _ = p.conn.Write(buf)
	}
}

// drain reads every reply waiting on the socket, without waiting for
// more.
func (p *Prober) drain() {
	_ = p.raw.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, err := unix.Recvmsg(int(fd), p.rbuf, p.oob, unix.MSG_DONTWAIT)
			switch {
			case err == unix.EINTR, err == unix.ECONNREFUSED:
				// Interrupted, or an ICMP answer to an earlier probe:
				// read on.
				continue
			case err != nil:
				return true
			}
			p.reply(p.rbuf[:n], p.oob[:oobn])
		}
	})
}

// reply files one datagram read from the socket, if it is a reply.
func (p *Prober) reply(b, oob []byte) {
	h, ok := wire.ParseHeader(b)
	if !ok || h.Flags != wire.FlagReply || h.Stream > PhaseLoad {
		return
	}
	at, ok := kernelTime(oob)
	if !ok {
		at = time.Now()
	}
	rtt := at.Sub(h.SentTime())
	// The echo's own delay is not the path's; a hold time that does not
	// fit in the round trip is not believed.
	if held := wire.Held(b); held > 0 && held < rtt {
		rtt -= held
	}
	p.mu.Lock()
	p.rtts[h.Stream] = append(p.rtts[h.Stream], rtt)
	if p.keep {
		p.replies = append(p.replies, probeReply{sent: h.SentTime(), rtt: rtt, idle: h.Stream == PhaseIdle})
	}
	p.mu.Unlock()
}

// stampReceipts has the kernel stamp every datagram c receives with its
// time of receipt (SO_TIMESTAMPNS), for kernelTime.
func stampReceipts(c *net.UDPConn) error {
	return sock.WithFD(c, func(fd int) error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) })
}

// kernelTime is the receive time in a datagram's SCM_TIMESTAMPNS control
// message.
func kernelTime(oob []byte) (time.Time, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return time.Unix(sec, nsec), true
		}
	}
	return time.Time{}, false
}

// lateReplies is how long a stopped prober waits for the replies to its
// last probes.
const lateReplies = 200 * time.Millisecond

// Run waits for stop, then for late replies.
func (p *Prober) Run(session.Timing) {
	<-p.halt
	p.finish(lateReplies)
}

func (p *Prober) Cut(time.Time)                     {}
func (p *Prober) Stop(time.Duration)                { p.haltOnce.Do(func() { close(p.halt) }) }
func (p *Prober) Progress() (packets, bytes uint64) { return 0, 0 }
func (p *Prober) Collect() session.Result           { return session.Result{} }

func (p *Prober) Close() error {
	p.finish(0)
	return nil
}

// finish, the first time, sends no more probes, waits for late replies,
// reads them and closes the socket.
func (p *Prober) finish(wait time.Duration) {
	p.finished.Do(func() {
		close(p.quiet)
		p.wg.Wait()
		time.Sleep(wait)
		p.drain()
		p.conn.Close()
	})
}

// Latency is the idle and loaded round trips (nil when no probe of that
// phase was sent); valid after finish.
func (p *Prober) Latency() (idle, load *results.Latency) {
	if p.sent[PhaseIdle] > 0 {
		idle = results.Summarize(p.rtts[PhaseIdle], p.sent[PhaseIdle])
	}
	if p.sent[PhaseLoad] > 0 {
		load = results.Summarize(p.rtts[PhaseLoad], p.sent[PhaseLoad])
	}
	return idle, load
}

// Phase is the round trips of the probes sent in phase ph that were
// answered, and how many were sent; valid after the prober finished.
func (p *Prober) Phase(ph int) (rtts []time.Duration, sent int) { return p.rtts[ph], p.sent[ph] }

// OverTime is every answered probe's round trip by when it was sent, in
// seconds since start (negative: before it, idle), for target; valid
// after finish, empty unless the prober keeps its replies.
func (p *Prober) OverTime(start time.Time, target int) []results.ProbeSample {
	out := make([]results.ProbeSample, 0, len(p.replies))
	for _, r := range p.replies {
		out = append(out, results.ProbeSample{Target: target, T: r.sent.Sub(start).Round(time.Millisecond).Seconds(),
			RTT: float64(r.rtt.Microseconds()) / 1000, Idle: r.idle})
	}
	return out
}
