package traffic

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"linerate/results"
	"linerate/wire"
)

// echo answers latency probes on a UDP socket, only from the address of
// the control connection's peer. It is a receiving flow that answers from
// the moment it is made (the client probes before the test starts) until
// it is closed; it counts nothing.
type echo struct {
	conn *net.UDPConn
	peer netip.Addr
	done chan struct{}
	halt chan struct{}
	once sync.Once
}

func newEcho(local netip.Addr, peer netip.Addr) (*echo, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0)))
	if err != nil {
		return nil, err
	}
	e := &echo{conn: c, peer: peer.Unmap(), done: make(chan struct{}), halt: make(chan struct{})}
	go e.serve()
	return e, nil
}

func (e *echo) port() uint16 { return netip.MustParseAddrPort(e.conn.LocalAddr().String()).Port() }

func (e *echo) run(Timing)                        { <-e.halt }
func (e *echo) cut(time.Time)                     {}
func (e *echo) stop(time.Duration)                { e.once.Do(func() { close(e.halt) }) }
func (e *echo) progress() (packets, bytes uint64) { return 0, 0 }
func (e *echo) collect() flowResult               { return flowResult{} }

func (e *echo) serve() {
	defer close(e.done)
	buf := make([]byte, 2048)
	for {
		n, from, err := e.conn.ReadFromUDPAddrPort(buf)
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
		_, _ = e.conn.WriteToUDPAddrPort(buf[:n], from)
	}
}

func (e *echo) close() error {
	e.stop(0)
	err := e.conn.Close()
	<-e.done
	return err
}

// prober sends probes to a server's echo port at a fixed interval and
// keeps the round trips, labelled by the phase they were sent in. It is a
// receiving flow that probes from the moment it is made (the idle phase
// comes before the test) until it is stopped; it counts no traffic.
type prober struct {
	conn     *net.UDPConn
	interval time.Duration
	mu       sync.Mutex
	phase    int // index into rtts
	rtts     [2][]time.Duration
	sent     [2]int
	keep     bool         // keep every reply (replies), not only the round trips
	replies  []probeReply // every answered probe, in the order answered, with keep
	seq      uint32
	quiet    chan struct{} // closed: send no more probes
	done     chan struct{} // closed: stop reading
	halt     chan struct{} // closed: stop was called
	haltOnce sync.Once
	finished sync.Once
	wg       sync.WaitGroup
}

const (
	phaseIdle = 0
	phaseLoad = 1
)

// probeReply is one answered probe: when it was sent and its round trip.
type probeReply struct {
	sent time.Time
	rtt  time.Duration
	idle bool
}

func newProber(local netip.Addr, to netip.AddrPort, interval time.Duration, keep bool) (*prober, error) {
	var laddr *net.UDPAddr
	if local.IsValid() {
		laddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0))
	}
	c, err := net.DialUDP("udp", laddr, net.UDPAddrFromAddrPort(to))
	if err != nil {
		return nil, err
	}
	p := &prober{conn: c, interval: interval, keep: keep, quiet: make(chan struct{}), done: make(chan struct{}), halt: make(chan struct{})}
	p.wg.Add(2)
	go p.send()
	go p.recv()
	return p, nil
}

func (p *prober) setPhase(ph int) {
	p.mu.Lock()
	p.phase = ph
	p.mu.Unlock()
}

func (p *prober) send() {
	defer p.wg.Done()
	t := time.NewTicker(p.interval)
	defer t.Stop()
	buf := make([]byte, wire.HeaderLen)
	for {
		select {
		case <-p.quiet:
			return
		case <-t.C:
		}
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

func (p *prober) recv() {
	defer p.wg.Done()
	buf := make([]byte, 2048)
	for {
		n, err := p.conn.Read(buf)
		if err != nil {
			select {
			case <-p.done:
				return
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			// ECONNREFUSED from an ICMP answer: keep listening.
			time.Sleep(p.interval)
			continue
		}
		now := time.Now()
		h, ok := wire.ParseHeader(buf[:n])
		if !ok || h.Flags != wire.FlagReply || h.Stream > phaseLoad {
			continue
		}
		rtt := now.Sub(h.SentTime())
		p.mu.Lock()
		p.rtts[h.Stream] = append(p.rtts[h.Stream], rtt)
		if p.keep {
			p.replies = append(p.replies, probeReply{sent: h.SentTime(), rtt: rtt, idle: h.Stream == phaseIdle})
		}
		p.mu.Unlock()
	}
}

// lateReplies is how long a stopped prober waits for the replies to its
// last probes.
const lateReplies = 200 * time.Millisecond

// run waits for stop, then for late replies.
func (p *prober) run(Timing) {
	<-p.halt
	p.finish(lateReplies)
}

func (p *prober) cut(time.Time)                     {}
func (p *prober) stop(time.Duration)                { p.haltOnce.Do(func() { close(p.halt) }) }
func (p *prober) progress() (packets, bytes uint64) { return 0, 0 }
func (p *prober) collect() flowResult               { return flowResult{} }

func (p *prober) close() error {
	p.finish(0)
	return nil
}

// finish, the first time, sends no more probes, waits for late replies and
// stops.
func (p *prober) finish(wait time.Duration) {
	p.finished.Do(func() {
		close(p.quiet)
		time.Sleep(wait)
		close(p.done)
		_ = p.conn.SetReadDeadline(time.Now())
		p.wg.Wait()
		p.conn.Close()
	})
}

// latency is the idle and loaded round trips (nil when no probe of that
// phase was sent); valid after finish.
func (p *prober) latency() (idle, load *results.Latency) {
	if p.sent[phaseIdle] > 0 {
		idle = results.Summarize(p.rtts[phaseIdle], p.sent[phaseIdle])
	}
	if p.sent[phaseLoad] > 0 {
		load = results.Summarize(p.rtts[phaseLoad], p.sent[phaseLoad])
	}
	return idle, load
}

// overTime is every answered probe's round trip by when it was sent, in
// seconds since start (negative: before it, idle), for target; valid
// after finish, empty unless the prober keeps its replies.
func (p *prober) overTime(start time.Time, target int) []results.ProbeSample {
	out := make([]results.ProbeSample, 0, len(p.replies))
	for _, r := range p.replies {
		out = append(out, results.ProbeSample{Target: target, T: r.sent.Sub(start).Round(time.Millisecond).Seconds(),
			RTT: float64(r.rtt.Microseconds()) / 1000, Idle: r.idle})
	}
	return out
}
