package iperf3

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
)

// pair is two namespaces joined by a veth: the client in a (10.77.0.1 on
// ia), the server in b (10.77.0.2 on ib).
type pair struct {
	a, b *testenv.NetNS
}

const (
	clientIP = "10.77.0.1"
	serverIP = "10.77.0.2"
)

func newPair(t *testing.T) *pair {
	t.Helper()
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Fatalf("iperf3 is not installed (make deps installs it): %v", err)
	}
	p := &pair{a: testenv.NewNetNS(t), b: testenv.NewNetNS(t)}
	testenv.Veth(t, p.a, "ia", p.b, "ib", 1)
	p.a.AddAddr(t, "ia", clientIP+"/24")
	p.b.AddAddr(t, "ib", serverIP+"/24")
	return p
}

// counters are a veth end's statistics, read inside its namespace.
type counters struct{ txPackets, txBytes, rxPackets, rxBytes uint64 }

func (c counters) sub(o counters) counters {
	return counters{c.txPackets - o.txPackets, c.txBytes - o.txBytes, c.rxPackets - o.rxPackets, c.rxBytes - o.rxBytes}
}

func readCounters(t *testing.T, ns *testenv.NetNS, iface string) counters {
	t.Helper()
	l, err := ns.Netlink(t).LinkByName(iface)
	if err != nil {
		t.Fatal(err)
	}
	st := l.Attrs().Statistics
	return counters{st.TxPackets, st.TxBytes, st.RxPackets, st.RxBytes}
}

// startIperf3Server runs `iperf3 -s` in ns, stopped when the test ends,
// and waits until it listens.
func startIperf3Server(t *testing.T, ns *testenv.NetNS, args ...string) {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns.Name, "iperf3", "-s", "-p", strconv.Itoa(DefaultPort)}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("iperf3 -s said:\n%s", out.String())
		}
	})
	waitListening(t, ns, DefaultPort)
}

// waitListening waits until a socket in ns listens on TCP port (read from
// the namespace's /proc/thread-self/net/tcp: a probe connection would
// count as a client at iperf3).
func waitListening(t *testing.T, ns *testenv.NetNS, port int) {
	t.Helper()
	want := fmt.Sprintf(":%04X 0A", port) // local port, remote 0, LISTEN
	deadline := time.Now().Add(10 * time.Second)
	for {
		var tcp string
		err := ns.Do(func() error {
			for _, f := range []string{"tcp", "tcp6"} {
				b, err := os.ReadFile("/proc/thread-self/net/" + f)
				if err != nil {
					return err
				}
				tcp += string(b)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(tcp, "\n") {
			if f := strings.Fields(l); len(f) > 3 && strings.HasSuffix(f[1], want[:5]) && strings.HasSuffix(f[2], ":0000") && f[3] == "0A" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on port %d", port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// within fails unless got is within 1 % of want.
func within(t *testing.T, what string, got, want uint64) {
	t.Helper()
	if want == 0 || got == 0 {
		t.Errorf("%s: %d, want %d (nothing counted)", what, got, want)
		return
	}
	d := float64(got) - float64(want)
	if d < 0 {
		d = -d
	}
	if d/float64(want) > 0.01 {
		t.Errorf("%s: %d, want %d within 1 %%", what, got, want)
	}
}

// runIn runs fn in ns.
func runIn[T any](ns *testenv.NetNS, fn func() (T, error)) (T, error) {
	var v T
	err := ns.Do(func() error {
		var err error
		v, err = fn()
		return err
	})
	return v, err
}
