package page

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath finds Debian's chromium (the Makefile's deps install it).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (make deps installs it)")
	return ""
}

// browserLog is what the browser said while it showed the page.
type browserLog struct {
	mu       sync.Mutex
	problems []string
	requests []string
}

func (l *browserLog) add(to *[]string, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*to = append(*to, fmt.Sprintf(format, args...))
}

// TestInChromium opens a page of every kind of run in headless chromium
// with the network cut off: the page must load with no console error, no
// exception and no request for anything but itself, and draw its charts.
func TestInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	exe := chromiumPath(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	page := render(t, fixture(t, "bench-udp"), fixture(t, "bench-udp-1thread"), fixture(t, "bench-udp-1518"),
		fixture(t, "bench-tcp-bidir"), fixture(t, "bench-rrul"), fixture(t, "search"), fixture(t, "diagnose"), fixture(t, "tune-auto"),
		fixture(t, "bench-udp-flows"), matrixRun(t), matrixTuneRun(t), fixture(t, "bench-rr-connect"), fixture(t, "bench-rr-nat"),
		fixture(t, "bench-udp-imix"))
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}

	actx, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Any request that is not for a file goes to a proxy that is not
		// there: the page cannot reach out even if it tried.
		chromedp.ProxyServer("127.0.0.1:9"),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1280, 1600),
	)
	defer cancel()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	// The first Run starts the browser; its context must not time out.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	tctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()

	var bl browserLog
	if err := chromedp.Listen(tctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			what := ev.ExceptionDetails.Text
			if e := ev.ExceptionDetails.Exception; e != nil && e.Description != "" {
				what += " " + e.Description
			}
			bl.add(&bl.problems, "exception: %s", what)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				bl.add(&bl.problems, "console.%s", ev.Type)
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				bl.add(&bl.problems, "log %s: %s (%s)", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			bl.add(&bl.requests, "%s", ev.Request.URL)
		case *network.EventLoadingFailed:
			bl.add(&bl.problems, "loading failed: %s", ev.ErrorText)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(tctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("Log.enable: %v", err)
	}
	if _, err := chromedp.Call(tctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("Network.enable: %v", err)
	}
	// And the network offline for the page.
	if _, err := chromedp.Call(tctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		MatchedNetworkConditions: []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}},
	}); err != nil {
		t.Fatalf("Network.emulateNetworkConditionsByRule: %v", err)
	}
	if err := chromedp.Do(tctx, chromedp.Navigate("file://"+file)); err != nil {
		t.Fatalf("loading %s: %v", file, err)
	}

	// What the browser laid out: every chart drawn at a size.
	type layout struct {
		Figures, Drawn, Shapes int
		// HeatCells are the matrices' coloured heat map cells laid out
		// at a size.
		HeatCells int
		// RRCharts are the transaction tests' charts of transactions
		// per second and of conntrack drawn at a size.
		RRCharts int
		Title    string
	}
	got, err := chromedp.Run(tctx, chromedp.Evaluate[layout](`(() => {
		const figs = [...document.querySelectorAll("figure.chart > svg")];
		return {
			Figures: figs.length,
			Drawn: figs.filter(s => { const r = s.getBoundingClientRect(); return r.width > 100 && r.height > 50; }).length,
			Shapes: document.querySelectorAll("svg polyline, svg polygon, svg rect").length,
			HeatCells: [...document.querySelectorAll("figure.heat rect.cell:not(.none)")].filter(r => { const b = r.getBoundingClientRect(); return b.width > 50 && b.height > 10; }).length,
			RRCharts: figs.filter(s => {
				const r = s.getBoundingClientRect(), t = s.querySelector("title").textContent;
				return (t.startsWith("transactions per second:") || t.startsWith("conntrack entries on")) && r.width > 100 && r.height > 50;
			}).length,
			Title: document.title,
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d charts, %d drawn, %d shapes, %d heat map cells, %d transaction charts, title %q", got.Figures, got.Drawn, got.Shapes, got.HeatCells, got.RRCharts, got.Title)
	if got.Figures < 20 || got.Drawn != got.Figures || got.Shapes < 100 {
		t.Errorf("the browser drew %d of %d charts with %d shapes", got.Drawn, got.Figures, got.Shapes)
	}
	// matrixRun has 3 cells that measured, matrixTuneRun 2.
	if got.HeatCells != 5 {
		t.Errorf("the browser drew %d heat map cells, want 5", got.HeatCells)
	}
	// Each rr run has its transactions per second and one sampled host's
	// conntrack.
	if got.RRCharts != 4 {
		t.Errorf("the browser drew %d of the transaction tests' charts, want 4", got.RRCharts)
	}
	if got.Title != "linerate report: 14 runs" {
		t.Errorf("title %q", got.Title)
	}

	// The receive queues' bars: as wide as each queue's share (34,359 /
	// 0 / 51,600 / 51,600 packets), the empty queue's a sliver.
	bars, err := chromedp.Run(tctx, chromedp.Evaluate[[]float64](`[...document.querySelectorAll("table.queues .qbar")].map(b => b.getBoundingClientRect().width)`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("queue bars %v px", bars)
	if len(bars) != 4 || bars[1] > 2 || bars[0] < 20 || bars[2] < bars[0]*1.3 || bars[2] > bars[0]*1.7 || bars[2] != bars[3] {
		t.Errorf("queue bars %v px: not as wide as the shares 25 / 0 / 37.5 / 37.5 %%", bars)
	}

	// The IMIX run's frame sizes, as counted on both ends.
	sizes, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.sizes tr")].slice(1).map(r => r.innerText.replace(/\s+/g, " ").trim())`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("frame sizes %q", sizes)
	if len(sizes) != 3 || !strings.HasPrefix(sizes[0], "64 B 18 B 116,667 58.33 % 116,667 58.33 % 0") || !strings.HasPrefix(sizes[2], "1518 B 1472 B 16,667 8.33 %") {
		t.Errorf("frame sizes %q: want the IMIX's three rows, counted on both ends", sizes)
	}

	shot, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	colours, inked, h := inspectPNG(t, shot)
	t.Logf("screenshot: %d px high, %d colours, %.1f %% not white", h, colours, inked*100)
	if colours < 16 || inked < 0.03 || h < 3000 {
		t.Errorf("the screenshot looks blank: %d px high, %d colours, %.1f %% not white", h, colours, inked*100)
	}

	bl.mu.Lock()
	defer bl.mu.Unlock()
	for _, p := range bl.problems {
		t.Errorf("browser: %s", p)
	}
	for _, u := range bl.requests {
		if !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page asked for %s", u)
		}
	}
}

// inspectPNG decodes a screenshot and counts its distinct colours and the
// share of its pixels that are not white.
func inspectPNG(t *testing.T, b []byte) (colours int, inked float64, height int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	bounds := img.Bounds()
	seen := map[[3]uint32]bool{}
	n, ink := 0, 0
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
			n++
			if r>>8 < 240 || g>>8 < 240 || b>>8 < 240 {
				ink++
			}
		}
	}
	return len(seen), float64(ink) / float64(max(n, 1)), bounds.Dy()
}
