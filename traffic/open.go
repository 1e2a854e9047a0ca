package traffic

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"linerate/internal/usage"
	"linerate/traffic/rr"
	"linerate/traffic/session"
	"linerate/traffic/sock"
	"linerate/traffic/tcp"
	"linerate/traffic/udp"
	"linerate/wire"
)

// prepare sends the test, makes this end's receiving sockets and reads the
// accept.
func (t *target) prepare(r *clientRun, sp wire.Spec) error {
	cfg := r.cfg
	v4 := t.addr.Addr().Is4()
	if sp.Proto == wire.UDP && cfg.FrameSize > 0 {
		sp.Payload = cfg.FrameSize - wire.UDPOverhead(v4)
		if sp.Payload < wire.HeaderLen {
			return usage.Field("FrameSize", "%d: too small for %s UDP: frames carry at least %d bytes (%d of headers and FCS, %d of linerate's header)",
				cfg.FrameSize, ipName(v4), wire.UDPOverhead(v4)+wire.HeaderLen, wire.UDPOverhead(v4), wire.HeaderLen)
		}
	}
	if err := cfg.mixSpec(&sp, v4); err != nil {
		return err
	}
	var recv *udp.Receiver
	if sp.Proto == wire.UDP && sp.ServerSends() {
		var err error
		if recv, err = t.openUDPReceiver(r, sp); err != nil {
			return err
		}
		sp.ClientPorts = recv.Ports()
		sp.Punch = true
	}
	if err := sp.Check(); err != nil {
		return usage.Wrap(err)
	}
	if err := t.ctl.write(&Message{Type: wire.MsgTest, Spec: &sp}); err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	m, err := t.ctl.expect(helloTimeout, wire.MsgAccept)
	if errors.Is(err, wire.ErrTestRefused) {
		// The server found the test itself wrong: bad input.
		return usage.Errorf("%s: %w", t.name, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	if m.Accept == nil {
		return fmt.Errorf("%s: %w: accept without details", t.name, wire.ErrProtocol)
	}
	if sp.RR != nil && m.Accept.Spec.RR == nil {
		return usage.Errorf("%s: %w", t.name, wire.ErrNoRR)
	}
	if len(sp.Sizes) > 0 && len(m.Accept.Spec.Sizes) == 0 {
		return usage.Errorf("%s: %w", t.name, wire.ErrNoMix)
	}
	if len(sp.StreamDSCP) > 0 && len(m.Accept.Spec.StreamDSCP) != len(sp.StreamDSCP) {
		return usage.Errorf("%s: %w", t.name, wire.ErrNoStreamDSCP)
	}
	t.acc = m.Accept
	t.spec = m.Accept.Spec
	t.spec.ClientPorts = sp.ClientPorts
	if recv != nil && m.Accept.Punch != nil {
		if err := sendPunches(recv.PortFDs(), t.addr.Addr(), m.Accept.Punch, t.spec.Streams); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	return nil
}

// openUDPReceiver makes the sockets the server sends to (reverse, bidir).
func (t *target) openUDPReceiver(r *clientRun, sp wire.Spec) (*udp.Receiver, error) {
	var recv *udp.Receiver
	err := r.cfg.setup(func() error {
		var err error
		recv, err = udp.NewReceiver(udp.ReceiverOf(&sp, t.local, t.addr.Addr(), r.cfg.CPUs))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	t.rev = append(t.rev, share{e: r.sess.Add(session.Receiving, t.name, recv)})
	return recv, nil
}

// openUDP makes this target's forward sockets, one per flow.
func (t *target) openUDP(cfg *Config) ([]int, error) {
	sp := &t.spec
	if len(t.acc.UDPPorts) != sp.Ports {
		return nil, fmt.Errorf("%s: %w: %d ports for %d", t.name, wire.ErrProtocol, len(t.acc.UDPPorts), sp.Ports)
	}
	locals := sp.Sources
	if len(locals) == 0 {
		locals = []netip.Addr{t.local}
	}
	var fds []int
	err := cfg.setup(func() error {
		var err error
		fds, err = udp.DialFlows(locals, t.addr.Addr(), t.acc.UDPPorts, sp.Streams, sp.Payload, sp.DSCP, false)
		return err
	})
	if len(sp.Sources) > 0 && errors.Is(err, sock.ErrAddrNotLocal) {
		return nil, usage.Field("Sources", "%w", err)
	}
	var me *udp.MTUError
	if errors.As(err, &me) {
		v4 := t.addr.Addr().Is4()
		return nil, usage.Errorf("%s: %d-byte frames (payload %d) do not fit the path MTU %d to %s without fragmentation",
			t.name, sp.Payload+wire.UDPOverhead(v4), sp.Payload, me.MTU, t.addr.Addr())
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	return fds, nil
}

// openTCP makes this target's data connections, n in each direction the
// client takes part in, and the flows over them.
func (t *target) openTCP(r *clientRun) error {
	sp := &t.spec
	if sp.ClientSends() {
		conns, err := t.dialData(r.cfg, 'f')
		if err != nil {
			return err
		}
		s, err := tcp.NewSender(conns, tcp.SendConfigOf(sp))
		if err != nil {
			tcp.CloseConns(conns)
			return err
		}
		t.fwd = append(t.fwd, share{e: r.sess.Add(session.Sending, t.name, s)})
	}
	if sp.ServerSends() {
		conns, err := t.dialData(r.cfg, 'r')
		if err != nil {
			return err
		}
		rcv, err := tcp.NewReceiver(conns, sp.Threads)
		if err != nil {
			tcp.CloseConns(conns)
			return err
		}
		t.rev = append(t.rev, share{e: r.sess.Add(session.Receiving, t.name, rcv)})
	}
	return nil
}

// dialData opens the data connections of one direction.
func (t *target) dialData(cfg *Config, dir byte) ([]*net.TCPConn, error) {
	sp := &t.spec
	cookie, err := wire.ParseCookie(t.acc.Cookie)
	if err != nil {
		return nil, err
	}
	to := netip.AddrPortFrom(t.addr.Addr(), t.acc.TCPPort).String()
	var conns []*net.TCPConn
	for i := range sp.Streams {
		knobs := tcp.KnobsOf(sp).ForStream(sp, i)
		d := net.Dialer{Timeout: 5 * time.Second, Control: knobs.Control(true)}
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(t.local, 0))
		var c net.Conn
		err := cfg.setup(func() error {
			var err error
			c, err = d.Dial("tcp", to)
			return err
		})
		if err == nil {
			conns = append(conns, c.(*net.TCPConn))
			if err = knobs.Conn(conns[i]); err == nil {
				_, err = c.Write(wire.PutDataHello(cookie, i, dir))
			}
		}
		if err != nil {
			tcp.CloseConns(conns)
			return nil, fmt.Errorf("%s: tcp data connection: %w", t.name, err)
		}
	}
	return conns, nil
}

// openRR makes this target's transaction streams toward its data port.
func (t *target) openRR(r *clientRun) error {
	sp := &t.spec
	port := t.acc.TCPPort
	if sp.Proto == wire.UDP {
		if len(t.acc.UDPPorts) != 1 {
			return fmt.Errorf("%s: %w: %d transaction ports", t.name, wire.ErrProtocol, len(t.acc.UDPPorts))
		}
		port = t.acc.UDPPorts[0]
	}
	if port == 0 {
		return fmt.Errorf("%s: %w: no transaction port", t.name, wire.ErrProtocol)
	}
	cookie, err := wire.ParseCookie(t.acc.Cookie)
	if err != nil {
		return err
	}
	c, err := rr.NewClient(sp, t.local, netip.AddrPortFrom(t.addr.Addr(), port), cookie, r.cfg.setup)
	if err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	t.rr = c
	t.fwd = append(t.fwd, share{e: r.sess.Add(session.Sending, t.name, c)})
	return nil
}
