package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
)

// doorsLab is serve in b under a descriptor limit, a client in a
// (10.79.0.1 → 10.79.0.2) and, in c, 40 addresses a flood comes from
// (10.79.1.10-49 → 10.79.1.2). serve listens on both of b's addresses,
// its live view on port 9464 of both.
type doorsLab struct {
	bin     string
	a, b, c *testenv.NetNS
	log     *syncBuffer
	flooder []string
	pid     int // serve's (ip netns exec and prlimit exec it)
}

func newDoorsLab(t *testing.T, bin string, nofile int) *doorsLab {
	t.Helper()
	l := &doorsLab{bin: bin, a: testenv.NewNetNS(t), b: testenv.NewNetNS(t), c: testenv.NewNetNS(t), log: &syncBuffer{}}
	testenv.Veth(t, l.a, "ia", l.b, "ib", 1)
	testenv.Veth(t, l.c, "ic", l.b, "ib2", 1)
	l.a.AddAddr(t, "ia", "10.79.0.1/24")
	l.b.AddAddr(t, "ib", "10.79.0.2/24")
	l.b.AddAddr(t, "ib2", "10.79.1.2/24")
	for i := range 40 {
		a := fmt.Sprintf("10.79.1.%d", 10+i)
		l.c.AddAddr(t, "ic", a+"/24")
		l.flooder = append(l.flooder, a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	lim := strconv.Itoa(nofile)
	srv := exec.CommandContext(ctx, "ip", "netns", "exec", l.b.Name, "prlimit", "--nofile="+lim+":"+lim, "--",
		bin, "serve", "--listen", "10.79.0.2", "--listen", "10.79.1.2", "--web", "0.0.0.0:9464")
	srv.Stdout, srv.Stderr = l.log, l.log
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	l.pid = srv.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("serve said:\n%s", l.tail(40))
		}
	})
	waitFor(t, func() bool { return strings.Count(l.log.String(), "listening on") == 2 }, "serve listening")
	return l
}

// tail is the last n lines serve wrote.
func (l *doorsLab) tail(n int) string {
	lines := strings.Split(l.log.String(), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// bench runs a short UDP bench from a to serve and fails the test unless
// it succeeds and the server received its packets.
func (l *doorsLab) bench(t *testing.T) {
	t.Helper()
	l.benchArgs(t, "udp", "--rate", "2kpps")
}

// benchArgs runs bench PROTO ARGS for 1 s from a to serve, as bench does.
func (l *doorsLab) benchArgs(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args = append([]string{"netns", "exec", l.a.Name, l.bin, "bench"}, args...)
	cmd := exec.CommandContext(ctx, "ip", append(args, "--to", "10.79.0.2", "--duration", "1s", "--warmup", "0s", "--no-save", "--json")...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench: %v\n%s%s", err, out, stderr.String())
	}
	var r struct {
		Summary struct {
			ReceivedPackets float64 `json:"received_packets"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.Summary.ReceivedPackets == 0 {
		t.Fatalf("bench: %v, received %v\n%s", err, r.Summary.ReceivedPackets, out)
	}
}

// An agent survives its descriptors running out, and strangers cannot
// make them run out. It used to exit when accept failed with EMFILE: with
// 300 descriptors, 400 idle --web connections stopped it and a bench from
// the next node was reset.
func TestServeSurvivesDescriptorFloods(t *testing.T) {
	testenv.RequireRoot(t)
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Fatalf("prlimit (util-linux) is not installed: %v", err)
	}
	bin := buildLinerate(t, t.TempDir())

	// 400 web connections held idle after one request each, from 40
	// addresses: the page's door keeps its share, and a bench and a
	// viewer from elsewhere get in while they are held.
	t.Run("idle web connections", func(t *testing.T) {
		l := newDoorsLab(t, bin, 300)
		l.c.Hold(t, l.flooder, "10.79.1.2:9464", 10, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		l.bench(t)
		var resp *http.Response
		err := l.a.Do(func() error {
			c, err := net.DialTimeout("tcp", "10.79.0.2:9464", 2*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err = http.ReadResponse(bufio.NewReader(c), nil)
			return err
		})
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("the page while the flood holds its connections: %v %v", resp, err)
		}
	})

	// With room for a few connections beyond its own, silent connections
	// to the control port from 40 addresses run serve out of descriptors:
	// it gives up handshakes, pauses and goes on; once the flood stops a
	// bench gets in.
	t.Run("control port out of descriptors", func(t *testing.T) {
		l := newDoorsLab(t, bin, 40)
		stop := l.c.Hold(t, l.flooder, "10.79.1.2:7557", 4, "")
		waitFor(t, func() bool { return strings.Contains(l.log.String(), "too many open files") }, "serve to run out of descriptors")
		stop()
		l.bench(t)
	})
}

// memory is serve's resident memory now and at its peak, in kB.
func (l *doorsLab) memory(t *testing.T) (rss, peak int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", l.pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			rss, _ = strconv.Atoi(f[1])
		case "VmHWM:":
			peak, _ = strconv.Atoi(f[1])
		}
	}
	if rss == 0 || peak == 0 {
		t.Fatalf("no VmRSS or VmHWM in serve's status:\n%s", b)
	}
	return rss, peak
}

// An agent's memory returns when a test ends: after 128 TCP streams each
// way, serve holds less than half of what the test added at its peak. It
// used to keep all of it for minutes (the runtime hands memory back
// slowly), and an agent idles between tests.
func TestServeReturnsMemoryAfterTest(t *testing.T) {
	testenv.RequireRoot(t)
	l := newDoorsLab(t, buildLinerate(t, t.TempDir()), 4096)
	idle, _ := l.memory(t)
	l.benchArgs(t, "tcp", "--streams", "128", "--bidir")
	// The test is torn down once its result is sent: wait (at most 3 s).
	rss, peak := l.memory(t)
	for deadline := time.Now().Add(3 * time.Second); rss-idle > (peak-idle)/2 && time.Now().Before(deadline); rss, peak = l.memory(t) {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("serve: %d kB idle, %d kB at the peak, %d kB after the test", idle, peak, rss)
	if rss-idle > (peak-idle)/2 {
		t.Errorf("serve holds %d kB more than before the test, of the %d kB the test added", rss-idle, peak-idle)
	}
}
