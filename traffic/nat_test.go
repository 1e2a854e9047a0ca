package traffic

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"linerate/internal/testenv"
	lrlab "linerate/lab"
	"linerate/traffic/frame"
	"linerate/wire"
)

// natLab is the lab's router topology (lan → router with nftables
// masquerade → wan) with a server in wan; the client runs in lan.
type natLab struct {
	l      *lrlab.Lab
	server string
	mu     sync.Mutex
	log    []string
}

func newNATLab(t *testing.T) *natLab {
	t.Helper()
	testenv.RequireRoot(t)
	d := lrlab.Dir(t.TempDir())
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := "n" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := d.Up(ctx, lrlab.Spec{Name: name, Topology: lrlab.Router})
	if err != nil {
		t.Fatalf("lab up router: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Down(name); err != nil {
			t.Errorf("lab down %s: %v", name, err)
		}
	})
	n := &natLab{l: l}
	srv := &Server{Setup: func(fn func() error) error { return l.Do("wan", fn) }}
	srv.Logf = func(format string, args ...any) {
		n.mu.Lock()
		n.log = append(n.log, fmt.Sprintf(format, args...))
		n.mu.Unlock()
	}
	wan, ok := l.Addr("lan", "wan")
	if !ok {
		t.Fatal("no address of wan from lan")
	}
	srvCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	if err := l.Do("wan", func() error {
		ln, err := net.Listen("tcp", net.JoinHostPort(wan.String(), "0"))
		if err != nil {
			return err
		}
		n.server = ln.Addr().String()
		go func() { done <- srv.Serve(srvCtx, ln) }()
		return nil
	}); err != nil {
		t.Fatalf("server in wan: %v", err)
	}
	t.Cleanup(func() {
		stop()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	return n
}

func (n *natLab) config(sp wire.Spec) Config {
	return Config{Targets: []string{n.server}, Spec: sp, Setup: func(fn func() error) error { return n.l.Do("lan", fn) }}
}

// logged is the server's log lines holding s.
func (n *natLab) logged(s string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, l := range n.log {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// movePorts makes the router's NAT map every UDP flow to a random source
// port (nft's "masquerade fully-random"), as a NAT set to randomise or
// short of ports does, in a table of the test's own that runs before the
// lab's masquerade: each of the server's sockets then sees the client's
// port at another port of the NAT.
func movePorts(t *testing.T, l *lrlab.Lab) {
	t.Helper()
	err := l.Do("router", func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		tb := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "lrtest"})
		prio := *nftables.ChainPriorityNATSource - 1
		ch := c.AddChain(&nftables.Chain{Name: "post", Table: tb, Type: nftables.ChainTypeNAT,
			Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityRef(prio)})
		c.AddRule(&nftables.Rule{Table: tb, Chain: ch, Exprs: []expr.Any{
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_UDP}},
			&expr.Masq{FullyRandom: true},
		}})
		return c.Flush()
	})
	if err != nil {
		t.Fatalf("nftables in router: %v", err)
	}
}

// TestUDPThroughNAT: the server's UDP reaches a client behind the lab's
// NAT router, reverse and bidir, because the client punches the NAT
// first; also when the NAT moves the client's ports, which the server
// learns from the punches. Without the punches every reverse datagram
// died at the router (UdpNoPorts).
func TestUDPThroughNAT(t *testing.T) {
	for _, moved := range []bool{false, true} {
		t.Run(fmt.Sprintf("ports moved=%v", moved), func(t *testing.T) {
			n := newNATLab(t)
			if moved {
				movePorts(t, n.l)
			}
			for _, dir := range []wire.Direction{wire.Reverse, wire.Bidir} {
				sp := udpSpec(time.Second, wire.Rate{PPS: 20000})
				sp.Direction, sp.Ports, sp.Streams, sp.Threads = dir, 2, 2, 2
				sp.Warmup = wire.Seconds(200 * time.Millisecond)
				cfg := n.config(sp)
				cfg.FrameSize = 100
				res, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatalf("%s: %v", dir, err)
				}
				tr := res.Targets[0]
				if tr.Reverse == nil || tr.Reverse.SentPackets == 0 {
					t.Fatalf("%s: the server sent nothing: %+v", dir, tr.Reverse)
				}
				t.Logf("%s: reverse %d sent, %d received (loss %.4f)", dir, tr.Reverse.SentPackets, tr.Reverse.ReceivedPackets, tr.Reverse.LossRatio)
				if tr.Reverse.LossRatio >= 0.01 {
					t.Errorf("%s through the NAT: reverse loss %.4f at 20 kpps, want < 1%%", dir, tr.Reverse.LossRatio)
				}
				if dir == wire.Bidir && (tr.Forward == nil || tr.Forward.LossRatio >= 0.01) {
					t.Errorf("bidir through the NAT: forward %+v", tr.Forward)
				}
			}
			// 2 ports × 2 streams, per test.
			punched := n.logged("4 of 4 UDP sockets punched")
			if len(punched) != 2 {
				t.Errorf("server log: %q, want 2 tests with every socket punched", n.logged("punched"))
			}
			for _, l := range punched {
				if moved != !strings.Contains(l, "(0 moved") {
					t.Errorf("ports moved %v, server says %q", moved, l)
				}
			}
		})
	}
}

// TestEngineAuto: --engine auto runs AF_XDP on a direct route from the
// client (its ports sharing the interface's one TX queue), else the ring; the
// socket engine through the lab's router (a gateway), and names the
// default for reverse, where the client sends nothing; the result says
// which ran and why.
func TestEngineAuto(t *testing.T) {
	direct := newLab(t, &Server{})
	routed := newNATLab(t)
	first, firstWhy := "xdp", "ran AF_XDP"
	var why string
	_ = direct.a.Do(func() error { why = frame.XDPUnavailable(); return nil })
	if why != "" {
		t.Logf("AF_XDP unavailable (%s): auto runs the ring", why)
		first, firstWhy = "ring", "ran the ring"
	}
	for _, c := range []struct {
		name      string
		dir       wire.Direction
		want, why string
		ports     int
		cfg       func(wire.Spec) Config
	}{
		{"direct", wire.Forward, first, firstWhy, 1, direct.config},
		// lra uses one TX queue: one AF_XDP socket sends both ports.
		{"direct, 2 ports", wire.Forward, first, firstWhy, 2, direct.config},
		{"through a router", wire.Forward, "socket", "is reached through the gateway", 1, routed.config},
		{"reverse", wire.Reverse, "socket", "", 1, direct.config},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := udpSpec(300*time.Millisecond, wire.Rate{PPS: 20000})
			sp.Direction = c.dir
			sp.Ports = c.ports
			cfg := c.cfg(sp)
			cfg.Engine = "auto"
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			note := strings.Join(res.Notes, "; ")
			t.Logf("engine %s: %s", res.Engine, note)
			if res.Engine != c.want || !strings.Contains(note, c.why) {
				t.Errorf("engine %q, notes %q: want %q and a note with %q", res.Engine, note, c.want, c.why)
			}
			if res.Summary.ReceivedPackets == 0 {
				t.Error("nothing received")
			}
		})
	}
}
