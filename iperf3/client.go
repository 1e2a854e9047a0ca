package iperf3

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"linerate/box"
	"linerate/internal/usage"
	"linerate/internal/version"
	"linerate/results"
	"linerate/wire"
)

// Scheme marks a target that runs a plain iperf3 server: iperf3://HOST[:PORT].
const Scheme = "iperf3://"

// IsTarget says whether target names an iperf3 server.
func IsTarget(target string) bool { return strings.HasPrefix(target, Scheme) }

// Config is a test against an iperf3 server.
type Config struct {
	// Target is iperf3://HOST[:PORT] (port 5201 by default) or HOST[:PORT].
	Target string
	// Spec is the test: Proto, Direction, Duration (whole seconds), Rate
	// (per direction: split evenly over the streams), Payload (the UDP
	// payload or TCP write size), Streams, MSS. Warmup must be 0: iperf3
	// counts from the first byte here.
	Spec wire.Spec
	// Bind is the local address to send from (zero: any).
	Bind netip.Addr
	// Sampling records this machine's counters over the test (nil: none).
	Sampling Sampling
	// OnInterval gets this end's figures once a second.
	OnInterval func(results.IntervalStats)
}

// Timeouts of the client: connecting, each control step, and how long
// past the test's end the server has to send its results.
// (variables: tests shorten them).
var (
	dialTimeout = 10 * time.Second
	stepTimeout = 15 * time.Second
)

// params turns the spec into iperf3's parameters; a field iperf3 cannot
// express is a usage.FieldError naming it.
func (c *Config) params(v4 bool) (*Params, error) {
	sp := c.Spec
	d := sp.Duration.D()
	switch {
	case d <= 0 || d%time.Second != 0:
		return nil, usage.Field("duration", "%s: iperf3 runs whole seconds", d)
	case sp.Warmup > 0:
		return nil, usage.Field("warmup", "%s: against iperf3, linerate counts from the first byte (give 0)", sp.Warmup.D())
	case sp.Streams < 1 || sp.Streams > maxStreams:
		return nil, usage.Field("streams", "%d: iperf3 takes 1 to %d", sp.Streams, maxStreams)
	case sp.Proto == wire.UDP && sp.Payload != 0 && sp.Payload < headerLen(true):
		return nil, usage.Field("payload", "%d: iperf3's datagram header takes %d bytes", sp.Payload, headerLen(true))
	case sp.Proto == wire.TCP && sp.Rate.PPS > 0:
		return nil, usage.Field("rate", "%s: a TCP rate is in bits per second", sp.Rate)
	}
	p := &Params{Time: d.Seconds(), Parallel: float64(sp.Streams), Len: float64(sp.Payload), MSS: float64(sp.MSS),
		ClientVersion: "linerate " + version.Version}
	if sp.Proto == wire.UDP {
		p.UDP, p.UDPCounters64 = true, 1
		if p.Len == 0 {
			p.Len = 1460
		}
	} else {
		p.TCP = true
	}
	p.Reverse, p.Bidir = sp.Direction == wire.Reverse, sp.Direction == wire.Bidir
	if !sp.Rate.Unlimited() {
		// linerate's rate counts UDP frames per direction; iperf3's counts
		// payload per stream.
		bps := sp.Rate.BPS
		if sp.Proto == wire.UDP {
			bps = sp.Rate.PacketsPerSecond(int(p.Len)+wire.UDPOverhead(v4)) * p.Len * 8
		}
		p.Bandwidth = max(1, bps/float64(sp.Streams))
	}
	return p, p.check()
}

// address resolves the target to the server's control address.
func address(target string) (string, error) {
	t := strings.TrimPrefix(target, Scheme)
	if _, _, err := net.SplitHostPort(t); err != nil {
		t = net.JoinHostPort(strings.Trim(t, "[]"), strconv.Itoa(DefaultPort))
	}
	host, port, _ := net.SplitHostPort(t)
	if host == "" {
		return "", usage.Field("Targets", "%q: no host", target)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return "", usage.Field("Targets", "%q: port %q is not 1-65535", target, port)
	}
	return t, nil
}

// Run runs one test against an iperf3 server and returns the result with
// both ends' figures. A test that ran but failed on the way returns its
// partial result with the error; ctx ending stops the test early, and the
// result is marked interrupted.
func Run(ctx context.Context, cfg Config) (*results.Result, error) {
	addr, err := address(cfg.Target)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: dialTimeout}
	if cfg.Bind.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: cfg.Bind.AsSlice()}
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("iperf3 server %s: %w", addr, err)
	}
	c := ctrl{nc}
	defer c.Close()
	remote := nc.RemoteAddr().(*net.TCPAddr).AddrPort()
	p, err := cfg.params(remote.Addr().Unmap().Is4())
	if err != nil {
		return nil, err
	}
	t := newTest(p, true, remote.Addr().Unmap().Is4())
	cr := &clientRun{cfg: cfg, c: c, t: t, d: d, addr: addr, cookie: newCookie()}
	defer cr.closeStreams()
	res, err := cr.run(ctx)
	if res != nil {
		tr := &res.Targets[0]
		tr.Target, tr.Address, tr.Local = cfg.Target, remote.String(), nc.LocalAddr().String()
		res.Interrupted = ctx.Err() != nil
		if err != nil {
			tr.Errors = append(tr.Errors, err.Error())
		}
		if cfg.Spec.ProbeInterval > 0 {
			res.Notes = append(res.Notes, "no latency probes: an iperf3 server does not echo them (a linerate agent does)")
		}
	}
	if err != nil {
		err = fmt.Errorf("iperf3 server %s: %w", addr, err)
	}
	return res, err
}

// clientRun is one test on the client.
type clientRun struct {
	cfg    Config
	c      ctrl
	t      *test
	d      net.Dialer
	addr   string
	cookie [CookieLen]byte
}

// run goes through the control states; once data flowed it returns a
// result even on an error.
func (cr *clientRun) run(ctx context.Context) (*results.Result, error) {
	c, t := cr.c, cr.t
	if err := c.write(cr.cookie[:], "cookie"); err != nil {
		return nil, err
	}
	if err := c.expect(ParamExchange, stepTimeout); err != nil {
		return nil, err
	}
	if err := c.writeJSON(t.p, "parameters"); err != nil {
		return nil, err
	}
	if err := c.expect(CreateStreams, stepTimeout); err != nil {
		return nil, err
	}
	for i := range t.streamCount() {
		if err := cr.openStream(ctx, t.newStream(i)); err != nil {
			return nil, fmt.Errorf("stream %d: %w", i+1, err)
		}
	}
	if err := c.expect(TestStart, stepTimeout); err != nil {
		return nil, err
	}
	if err := c.expect(TestRunning, stepTimeout); err != nil {
		return nil, err
	}
	var stop func() ([]box.Rates, error)
	if cr.cfg.Sampling != nil {
		stop = cr.cfg.Sampling(nil)
	}
	r, stopTick := t.begin(cr.cfg.OnInterval)
	runErr := cr.wait(ctx, t.start.Add(time.Duration(t.p.Time)*time.Second))
	r.stopSending(t.streams)
	t.finish()
	stopTick()
	samples, sampleErr := t.wrapUp(stop)
	var peer *Results
	if runErr == nil {
		peer, runErr = cr.exchange(r)
	}
	cr.closeStreams()
	r.wg.Wait()
	for _, s := range t.streams {
		if s.err != nil && runErr == nil {
			runErr = fmt.Errorf("stream %d: %w", s.id, s.err)
		}
	}
	res := t.result(peer, "server", samples, sampleErr)
	if err := t.doubtServer(peer).Mark(&res.Targets[0]); err != nil {
		if runErr != nil {
			res.Targets[0].Errors = append(res.Targets[0].Errors, err.Error())
		} else {
			runErr = err
		}
	}
	return res, runErr
}

// doubtServer checks the server's results against what this end counted
// and against what a host can do (results.Doubts): what it received of
// each stream this end sent, what it sent of each stream this end
// received, and its CPU use. iperf3 counts from the first byte (no
// warmup), and a UDP receiver's packet count is the highest packet
// number it saw, which this end's sender numbered.
func (t *test) doubtServer(peer *Results) results.Doubts {
	if peer == nil {
		return nil
	}
	var d results.Doubts
	for _, s := range t.streams {
		pr := peer.byID(s.id)
		if pr == nil {
			continue
		}
		who := fmt.Sprintf("the server's stream %d", s.id)
		bytes, packets := uint64(pr.Bytes), uint64(pr.Packets)
		if s.send {
			d.Received(who, "bytes", bytes, s.bytes.Load(), 0)
			if t.flow.udp {
				d.Received(who, "datagrams (the highest number it saw)", packets, s.packets.Load(), 0)
				if pr.Errors > pr.Packets {
					d.Addf("%s lost %v datagrams of the %v it numbers", who, pr.Errors, pr.Packets)
				}
			}
			continue
		}
		d.Sent(who, "bytes", bytes, 0, s.bytes.Load())
		if !t.flow.udp {
			packets = 0 // a TCP sender counts no packets
		} else {
			d.Sent(who, "datagrams", packets, 0, s.packets.Load())
		}
		d.Rate(who+" sent", bytes, packets, t.seconds())
	}
	// cpu_util_* are the process's CPU time over the test's wall time, in
	// percent of one CPU: a process runs on MaxCPUs at most, and the total
	// is user plus system.
	most := 100.0 * results.MaxCPUs
	d.Percent("the server's CPU use in percent (cpu_util_total)", peer.CPUTotal, most)
	d.Percent("the server's CPU use in percent (cpu_util_user)", peer.CPUUser, most)
	d.Percent("the server's CPU use in percent (cpu_util_system)", peer.CPUSystem, most)
	if sum := peer.CPUUser + peer.CPUSystem; math.Abs(peer.CPUTotal-sum) > 0.01*sum+0.01 {
		d.Addf("the server's CPU use: cpu_util_total %v%% is not cpu_util_user %v%% plus cpu_util_system %v%%", peer.CPUTotal, peer.CPUUser, peer.CPUSystem)
	}
	return d
}

// wait lets the test run until end, ctx ending, or the server saying
// something (which, before TEST_END, can only be an error).
func (cr *clientRun) wait(ctx context.Context, end time.Time) error {
	stop := context.AfterFunc(ctx, func() { _ = cr.c.SetReadDeadline(time.Now()) })
	defer stop()
	s, err := cr.c.readState(time.Until(end))
	switch {
	case ctx.Err() != nil:
		return nil // interrupted: end the test now and collect
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		return nil
	case err != nil:
		return fmt.Errorf("during the test: %w", err)
	}
	return fmt.Errorf("during the test: %w", unexpected(s, TestEnd, cr.c))
}

// exchange ends the test and trades results: TEST_END, then the
// server's EXCHANGE_RESULTS, this end's results, the server's,
// DISPLAY_RESULTS and IPERF_DONE.
func (cr *clientRun) exchange(r *running) (*Results, error) {
	c, t := cr.c, cr.t
	if t.flow.udp && !t.p.Reverse {
		// iperf3 counts only what arrives before TEST_END: let the
		// datagrams in flight and in its socket in first, or they would
		// count as lost.
		time.Sleep(100 * time.Millisecond)
	}
	if err := c.writeState(TestEnd); err != nil {
		return nil, err
	}
	if err := c.expect(ExchangeResults, stepTimeout); err != nil {
		return nil, err
	}
	// The server has stopped sending: what is in flight is in.
	time.Sleep(50 * time.Millisecond)
	cr.closeStreams()
	r.wg.Wait()
	if err := c.writeJSON(t.report(), "results"); err != nil {
		return nil, err
	}
	b, err := c.readJSON(maxResultsJSON, stepTimeout, "the server's results")
	if err != nil {
		return nil, err
	}
	peer, err := parseResults(b, t.ids())
	if err != nil {
		return nil, err
	}
	if err := c.expect(DisplayResults, stepTimeout); err != nil {
		return peer, err
	}
	return peer, c.writeState(IperfDone)
}

// openStream connects stream s: TCP with the cookie, UDP with the hello
// and the server's answer.
func (cr *clientRun) openStream(ctx context.Context, s *stream) error {
	d := cr.d
	if cr.t.flow.udp {
		if cr.cfg.Bind.IsValid() {
			d.LocalAddr = &net.UDPAddr{IP: cr.cfg.Bind.AsSlice()}
		}
		conn, err := d.DialContext(ctx, "udp", cr.addr)
		if err != nil {
			return err
		}
		s.write, s.recv = conn.Write, conn
		if uc, ok := conn.(*net.UDPConn); ok {
			_ = uc.SetReadBuffer(4 << 20)
			_ = uc.SetWriteBuffer(4 << 20)
		}
		return udpConnect(conn, cr.t.flow.size)
	}
	conn, err := d.DialContext(ctx, "tcp", cr.addr)
	if err != nil {
		return err
	}
	s.tcp, s.write = conn, conn.Write
	return ctrl{conn}.write(cr.cookie[:], "stream cookie")
}

// udpConnect says hello on a UDP stream and waits for the answer; in
// reverse a few of the server's datagrams may come first.
func udpConnect(conn net.Conn, size int) error {
	if _, err := conn.Write(udpHello[:]); err != nil {
		return fmt.Errorf("UDP hello: %w", err)
	}
	buf := make([]byte, max(size, 64<<10))
	_ = conn.SetReadDeadline(time.Now().Add(stepTimeout))
	defer conn.SetReadDeadline(time.Time{})
	for range 8 {
		n, err := conn.Read(buf)
		if err != nil {
			return fmt.Errorf("waiting for the server's UDP answer: %w", err)
		}
		if isReply(buf[:n]) {
			return nil
		}
	}
	return fmt.Errorf("%w: no answer among the server's first datagrams", ErrProtocol)
}

func (cr *clientRun) closeStreams() {
	for _, s := range cr.t.streams {
		if s.tcp != nil {
			s.tcp.Close()
		}
		if s.recv != nil {
			s.recv.Close()
		}
	}
}
