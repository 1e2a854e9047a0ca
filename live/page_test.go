//go:build !small

package live

import (
	"context"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"linerate/results"
)

// TestPageInChromium loads the page in headless Chromium while snapshots
// are published and checks that its script filled the tables from
// /events: the DOM Chromium dumps holds the CPUs, the interface, an
// interrupt and the bench figures. The page then says it lost the
// connection and keeps the last figures.
func TestPageInChromium(t *testing.T) {
	dom := pageDOM(t, func(n int) results.IntervalStats {
		return results.IntervalStats{T: float64(n), SentPPS: 1000, ReceivedPPS: 987654, ReceivedBPS: 5.5e8}
	})
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`<td>eth0</td><td>512k</td>`),
		regexp.MustCompile(`<td>41</td><td class="l">eth0-rx-0</td><td class="l">eth0</td><td>0</td><td>900</td>`),
		regexp.MustCompile(`<td>1</td><td class="l"><div class="bar">`),
		regexp.MustCompile(`id="brp">988k<`),
		regexp.MustCompile(`sample \d+ · `),
	} {
		if !want.MatchString(dom) {
			t.Errorf("the page after 3s lacks %s:\n%s", want, dom)
		}
	}
	if !strings.Contains(dom, "disconnected: linerate stopped") {
		t.Error("the page does not say the server went away")
	}
}

// TestPageDrawsUnknownAsGaps: a bench second whose received side is
// unknown (every third one here) is a gap in the chart's received line
// and "unknown" in the figures, never a 0; the sent line has no gap.
func TestPageDrawsUnknownAsGaps(t *testing.T) {
	dom := pageDOM(t, func(n int) results.IntervalStats {
		iv := results.IntervalStats{T: float64(n), SentPPS: 1000, ReceivedPPS: 900, ReceivedBPS: 5e5}
		if n%3 == 0 {
			iv.ReceivedUnknown = true
			iv.ClearUnknown()
		}
		return iv
	})
	attr := func(name string) string {
		m := regexp.MustCompile(name + `="([0-9, ]*)"`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("the chart has no %s:\n%s", name, dom)
		}
		return m[1]
	}
	recv, sent := attr("data-r"), attr("data-s")
	t.Logf("received runs %q, sent runs %q", recv, sent)
	if strings.Contains(sent, " ") || sent == "" {
		t.Errorf("sent runs %q: want one run, every second measured", sent)
	}
	runs := strings.Fields(recv)
	if len(runs) < 2 {
		t.Errorf("received runs %q: want gaps where the seconds were unknown", recv)
	}
	for _, run := range runs {
		for _, sec := range strings.Split(run, ",") {
			if n, _ := strconv.Atoi(sec); n%3 == 0 {
				t.Errorf("received runs %q: second %d, unknown, is drawn", recv, n)
			}
		}
	}
	if !regexp.MustCompile(`id="brp">(900|unknown)<`).MatchString(dom) {
		t.Errorf("the received figure is neither 900 nor unknown:\n%s", dom)
	}
}

// pageDOM serves the page in headless Chromium while rates and the bench
// second n (from bench) are published every 100 ms, and returns the DOM
// Chromium dumps. Chromium dumps it once nothing loads any more, so the
// server stops after the page got 8 events.
func pageDOM(t *testing.T, bench func(n int) results.IntervalStats) string {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium in $PATH (make deps installs it)")
	}
	h := NewHub(&View{Ifaces: []string{"eth0"}, irqs: names, checked: time.Now(), now: time.Now})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { Serve(ctx, ln, h); close(served) }()
	published := make(chan struct{})
	go func() {
		defer close(published)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		seen := 0
		for n := 1; ; n++ {
			h.Rates(rates())
			h.Bench(bench(n))
			h.mu.Lock()
			if len(h.subs) > 0 {
				seen++
			}
			h.mu.Unlock()
			if seen == 8 {
				cancel()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-served; <-published })

	run, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	cmd := exec.CommandContext(run, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=3000", "--dump-dom", "http://"+ln.Addr().String()+"/")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	return string(out)
}
