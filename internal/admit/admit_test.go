package admit

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"
)

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// enter fails the test unless a slot is taken; cut counts the slot's
// cuts in cuts[s].
func enter(t *testing.T, tab *Table, a string, cuts map[string]int) *Slot {
	t.Helper()
	s, err := tab.Enter(addr(a), func() { cuts[a]++ })
	if err != nil {
		t.Fatalf("enter %s: %v", a, err)
	}
	return s
}

func TestPerSourceCap(t *testing.T) {
	tab := NewTable(8, 2)
	cuts := map[string]int{}
	enter(t, tab, "10.0.0.1", cuts)
	enter(t, tab, "10.0.0.1", cuts)
	if _, err := tab.Enter(addr("10.0.0.1"), nil); !errors.Is(err, ErrSourceFull) {
		t.Errorf("a third from one address: %v, want ErrSourceFull", err)
	}
	// An IPv4-mapped address is the same source.
	if _, err := tab.Enter(addr("::ffff:10.0.0.1"), nil); !errors.Is(err, ErrSourceFull) {
		t.Errorf("the same address mapped: %v, want ErrSourceFull", err)
	}
	enter(t, tab, "10.0.0.2", cuts)
	if tab.Len() != 3 || len(cuts) != 0 {
		t.Errorf("%d held, cuts %v", tab.Len(), cuts)
	}
}

// A full table gives up the slot of an idle connection before a busy one,
// of the address holding the most, then its network's, then the oldest.
func TestVictim(t *testing.T) {
	tab := NewTable(4, 4)
	cuts := map[string]int{}
	a := enter(t, tab, "10.0.0.1", cuts)
	enter(t, tab, "10.0.1.1", cuts)
	enter(t, tab, "10.0.1.2", cuts) // 10.0.1.0/24 holds two
	d := enter(t, tab, "10.0.2.1", cuts)
	a.Busy(true)
	// Every address holds one; 10.0.1.1, the oldest of its /24's two.
	e := enter(t, tab, "10.0.3.1", cuts)
	if cuts["10.0.1.1"] != 1 || len(cuts) != 1 {
		t.Fatalf("cuts %v, want 10.0.1.1's", cuts)
	}
	// Now the oldest idle: 10.0.1.2, then 10.0.2.1; never the busy one
	// while one is idle.
	enter(t, tab, "10.0.4.1", cuts)
	enter(t, tab, "10.0.5.1", cuts)
	if cuts["10.0.1.2"] != 1 || cuts["10.0.2.1"] != 1 || cuts["10.0.0.1"] != 0 || !d.Gone() || d.Leave() {
		t.Fatalf("cuts %v", cuts)
	}
	if !e.Leave() || e.Gone() {
		t.Error("a slot left by its own connection is not gone")
	}
	// Busy ones go too when nothing is idle: the oldest.
	enter(t, tab, "10.0.6.1", cuts)
	for _, s := range tab.held {
		s.Busy(true)
	}
	enter(t, tab, "10.0.7.1", cuts)
	if cuts["10.0.0.1"] != 1 {
		t.Errorf("cuts %v, want the busy 10.0.0.1's too", cuts)
	}
}

// Shed gives up an idle slot, never a busy one.
func TestShed(t *testing.T) {
	tab := NewTable(4, 4)
	cuts := map[string]int{}
	busy := enter(t, tab, "10.0.0.1", cuts)
	busy.Busy(true)
	idle := enter(t, tab, "10.0.0.2", cuts)
	if !tab.Shed() || !idle.Gone() || cuts["10.0.0.2"] != 1 {
		t.Fatalf("shed: cuts %v", cuts)
	}
	if tab.Shed() || busy.Gone() {
		t.Error("shed a busy slot")
	}
}

// errListener fails its first n accepts with err, then accepts from ln.
type errListener struct {
	net.Listener
	n   int
	err error
}

func (l *errListener) Accept() (net.Conn, error) {
	if l.n > 0 {
		l.n--
		return nil, l.err
	}
	return l.Listener.Accept()
}

// Accept survives a process out of descriptors: it sheds, pauses longer
// each time and then accepts; another error is returned.
func TestAcceptSurvivesEMFILE(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	el := &errListener{Listener: ln, n: 4, err: &net.OpError{Op: "accept", Err: syscall.EMFILE}}
	shed := 0
	var pauses []time.Duration
	c, err := Accept(el, nil, func() bool { shed++; return false }, func(_ error, p time.Duration) { pauses = append(pauses, p) })
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	c.Close()
	if shed != 4 || len(pauses) != 4 || pauses[0] != firstPause || pauses[3] != 8*firstPause {
		t.Errorf("shed %d times, pauses %v", shed, pauses)
	}
	el.n, el.err = 1, net.ErrClosed
	if _, err := Accept(el, nil, nil, nil); !errors.Is(err, net.ErrClosed) {
		t.Errorf("closed listener: %v", err)
	}
}
