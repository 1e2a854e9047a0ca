//go:build !small

package live

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"linerate/results"
)

// readEvents reads Server-Sent Events from body and sends each data line's
// snapshot to out until body ends.
func readEvents(t *testing.T, body io.Reader, out chan<- Snapshot) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var s Snapshot
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			t.Errorf("event data is not a snapshot: %v: %s", err, data)
			continue
		}
		out <- s
	}
	close(out)
}

func TestServe(t *testing.T) {
	h := NewHub(&View{Ifaces: []string{"eth0"}, irqs: names, checked: time.Now(), now: time.Now})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		if err := Serve(ctx, ln, h); err != nil {
			t.Errorf("Serve: %v", err)
		}
		close(served)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-served:
		case <-time.After(5 * time.Second):
			t.Error("Serve did not stop")
		}
	})
	base := "http://" + ln.Addr().String()

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/metrics before any sample: %s", resp.Status)
	}

	resp, err = http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `new EventSource("/events")`) ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("page: %s %q", resp.Status, resp.Header)
	}
	// Self-contained: no URL with a scheme or a host anywhere.
	if m := regexp.MustCompile(`(?i)(https?:|//[a-z0-9.-]+\.[a-z]{2,})`).FindString(string(b)); m != "" {
		t.Errorf("the page refers to %q", m)
	}
	if resp, err := http.Get(base + "/nothing"); err != nil || resp.StatusCode != 404 {
		t.Errorf("/nothing: %v %v", resp.Status, err)
	}

	resp, err = http.Get(base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("/events Content-Type %q", ct)
	}
	got := make(chan Snapshot, 16)
	go readEvents(t, resp.Body, got)
	// Publish until the stream has shown a bench second after a sample.
	deadline := time.After(5 * time.Second)
	for n := 0; ; n++ {
		if n%2 == 0 {
			h.Rates(rates())
		} else {
			h.Bench(results.IntervalStats{T: float64(n), ReceivedPPS: 990, SentPPS: 1000})
		}
		select {
		case s := <-got:
			if s.Bench != nil && s.Bench.ReceivedPPS == 990 && len(s.CPUs) == 2 && s.Seq > 1 {
				goto metrics
			}
		case <-deadline:
			t.Fatal("no event with a sample and a bench second in 5s")
		case <-time.After(20 * time.Millisecond):
		}
	}
metrics:
	resp2, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp2.Body)
	resp2.Body.Close()
	fams := parseMetrics(t, string(b))
	if v, ok := value(fams, "linerate_bench_received_packets_total", nil); !ok || v < 990 {
		t.Errorf("bench received %v %v", v, ok)
	}
	if resp2.Header.Get("Content-Type") != MetricsContentType {
		t.Errorf("/metrics Content-Type %q", resp2.Header.Get("Content-Type"))
	}

	// Stopping the server ends the open event stream.
	cancel()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not stop with an open event stream")
	}
	timeout := time.After(5 * time.Second)
	for {
		select {
		case _, open := <-got:
			if !open {
				return
			}
		case <-timeout:
			t.Fatal("the event stream stayed open after the server stopped")
		}
	}
}

func TestWriteText(t *testing.T) {
	s := Build(rates(), []string{"eth0"}, names)
	s.Bench = &results.IntervalStats{T: 3, SentPPS: 1000, ReceivedPPS: 990}
	var b strings.Builder
	if err := WriteText(&b, s, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"bench    3s  sent 1k pps",
		"CPU     usr%", "\n0       10.0    5.0    1.0   20.0   36.0",
		"IFACE", "eth0           512k         0        1k ",
		"41    eth0-rx-0        eth0            0     900      900",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Error("escape sequences off a terminal")
	}
	b.Reset()
	WriteText(&b, s, TextOptions{Terminal: true, MaxIRQs: 1})
	out = b.String()
	if !strings.HasPrefix(out, "\x1b[H") || !strings.HasSuffix(out, "\x1b[J") || !strings.Contains(out, "(1 more interrupts)") {
		t.Errorf("terminal frame: %q", out)
	}
}

func TestSI(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.4: "0", 950: "950", 999.6: "1k", 12345: "12.3k", 1.5e6: "1.5M", 999.9e6: "1G", 9.41e9: "9.41G"} {
		if got := si(v); got != want {
			t.Errorf("si(%v) = %q, want %q", v, got, want)
		}
	}
}

// Beyond maxStreamsPerSource open event streams from one address,
// /events answers it 503; a closed stream frees its place.
func TestEventStreamLimit(t *testing.T) {
	h := NewHub(&View{Ifaces: []string{"eth0"}, irqs: names, checked: time.Now(), now: time.Now})
	srv := httptest.NewServer(Handler(h))
	defer srv.Close()
	defer h.Close()
	open := func() *http.Response {
		t.Helper()
		resp, err := http.Get(srv.URL + "/events")
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var streams []*http.Response
	defer func() {
		for _, r := range streams {
			r.Body.Close()
		}
	}()
	for range maxStreamsPerSource {
		r := open()
		if r.StatusCode != 200 {
			t.Fatalf("stream %d: %s", len(streams)+1, r.Status)
		}
		streams = append(streams, r)
	}
	if r := open(); r.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("stream %d: %s, want 503", maxStreamsPerSource+1, r.Status)
		r.Body.Close()
	}
	streams[0].Body.Close()
	streams = streams[1:]
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := open()
		if r.StatusCode == 200 {
			streams = append(streams, r)
			break
		}
		r.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("a closed stream did not free its place")
		}
		// The server notices the closed connection on its next write.
		h.Rates(rates())
		time.Sleep(10 * time.Millisecond)
	}
}
