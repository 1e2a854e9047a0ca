package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"linerate/box"
	"linerate/internal/usage"
	"linerate/live"
	"linerate/results"
	"linerate/sample"
	"linerate/source/procfs"
	"linerate/source/sysfs"
	"linerate/traffic"
)

// watchOptions are the flags of `linerate watch`.
type watchOptions struct {
	interval time.Duration
	count    int
	json     bool
	web      string
}

func newWatchCmd() *cobra.Command {
	o := &watchOptions{}
	c := &cobra.Command{
		Use:   "watch [IFACE...]",
		Short: "This box, once a second: CPUs, interfaces, interrupts, softnet drops",
		Long: `watch shows what this box does each second, instead of dstat and
'watch cat /proc/interrupts': each CPU's usr/sys/irq/softirq shares,
interrupts, NET_RX/NET_TX softirqs, softnet backlog, drops and time
squeezes; each interface's bits, packets and drops per second, received
and sent; and each interrupt of those interfaces (a queue, usually) per
CPU, with any other interrupt that fired.

Without IFACE, every interface that is up except lo (looked at again every
10 seconds). On a terminal the view is redrawn in place; otherwise one
block is printed per interval, or with --json one JSON object per line.
Ctrl-C stops it (exit 0).

--web ADDR also serves the view over HTTP at ADDR: a page that updates
itself (Server-Sent Events at /events) and /metrics in the Prometheus text
format (docs/watch.md lists the metrics). Nothing listens without --web;
give a loopback address (127.0.0.1:9464) unless others should see it.`,
		Example: `  linerate watch                        # every interface up, redrawn each second
  linerate watch eth0 eth1 --interval 2s
  linerate watch --count 10 > ten-seconds.txt
  linerate watch --json --count 60 | jq .cpus[0].softirq
  linerate watch --web 127.0.0.1:9464   # and open http://127.0.0.1:9464/`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	f := c.Flags()
	secondsVarP(f, &o.interval, "interval", "i", time.Second, "time between samples: 1, 0.5 (seconds) or 500ms; at least 100ms")
	f.IntVarP(&o.count, "count", "n", 0, "stop after this many samples (0: until Ctrl-C)")
	f.BoolVar(&o.json, "json", false, "print one JSON object per sample and line (the snapshot /events sends)")
	f.StringVar(&o.web, "web", "", "also serve a live page, /events and /metrics at this HOST:PORT (e.g. 127.0.0.1:9464)")
	return c
}

func (o *watchOptions) run(cmd *cobra.Command, ifaces []string) error {
	switch {
	case o.interval < 100*time.Millisecond:
		return usage.Errorf("--interval %s: want 100ms or more", o.interval)
	case o.count < 0:
		return usage.Errorf("--count %d: negative", o.count)
	}
	proc := procfs.NewFS("/proc")
	netdev, err := proc.NetDev()
	if err != nil {
		return err
	}
	for _, n := range ifaces {
		if _, ok := netdev[n]; !ok {
			return usage.Errorf("no interface %q here (ip link lists them)", n)
		}
	}
	hub := live.NewHub(liveView(ifaces))
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	var page string
	if o.web != "" {
		var stop func()
		if page, stop, err = startLiveWeb(ctx, o.web, hub, cmd.ErrOrStderr()); err != nil {
			return err
		}
		defer stop()
	}
	// The sampler never waits for the terminal: a frame that finds the
	// last one still unprinted is skipped.
	frames := make(chan live.Snapshot, 1)
	stopSampling, err := sampleLive(proc, o.interval, hub, func(s live.Snapshot) {
		select {
		case frames <- s:
		default:
		}
	})
	if err != nil {
		return err
	}
	defer stopSampling()
	return o.print(ctx, cmd.OutOrStdout(), frames, page)
}

// print writes each frame as it comes, as text (redrawn in place on a
// terminal) or a JSON line, until --count frames or ctx ends (Ctrl-C is
// how watch ends).
func (o *watchOptions) print(ctx context.Context, w io.Writer, frames <-chan live.Snapshot, page string) error {
	f, _ := w.(*os.File)
	term := !o.json && f != nil && isTerminal(f)
	if term {
		fmt.Fprint(w, "\x1b[2J\x1b[?25l") // clear, hide the cursor
		defer fmt.Fprint(w, "\x1b[?25h")
	}
	enc := json.NewEncoder(w)
	for n := 0; o.count == 0 || n < o.count; n++ {
		var s live.Snapshot
		select {
		case <-ctx.Done():
			return nil
		case s = <-frames:
		}
		var err error
		if o.json {
			err = enc.Encode(s)
		} else {
			err = live.WriteText(w, s, live.TextOptions{Terminal: term, MaxIRQs: irqRows(f, term, s), Web: page})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// irqRows is how many interrupt rows fit under the rest on a terminal.
func irqRows(f *os.File, term bool, s live.Snapshot) int {
	if !term {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Row == 0 {
		return 0
	}
	used := 12 + len(s.CPUs) + len(s.Ifaces)
	return max(3, int(ws.Row)-used)
}

// liveView shows ifaces (none: those up except lo) of the namespace
// linerate runs in.
func liveView(ifaces []string) *live.View {
	return &live.View{Ifaces: ifaces, Proc: procfs.NewFS("/proc"), Sys: sysfs.NewFS("/sys")}
}

// sampleLive samples this namespace's counters through proc every
// interval into hub until stop, each snapshot also going to each (if not
// nil). A first read that fails is the error.
func sampleLive(proc procfs.FS, interval time.Duration, hub *live.Hub, each func(live.Snapshot)) (stop func(), err error) {
	read := sample.Live(proc, nil, nil)
	if _, err := read(); err != nil {
		return nil, err
	}
	loop := sample.Stream(read, interval, func(r box.Rates) {
		s := hub.Rates(r)
		if each != nil {
			each(s)
		}
	})
	return func() { loop.Stop() }, nil
}

// startLiveWeb serves hub's page, /events and /metrics on addr until stop
// is called or ctx ends, and says where on stderr; page is its URL.
func startLiveWeb(ctx context.Context, addr string, hub *live.Hub, stderr io.Writer) (page string, stop func(), err error) {
	if err := live.WebBuilt(); err != nil {
		return "", nil, usage.Errorf("--web %s: %w", addr, err)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", nil, usage.Errorf("--web %q: want HOST:PORT, such as 127.0.0.1:9464", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return "", nil, usage.Errorf("--web %q: port %q is not 0-65535", addr, port)
	}
	if host != "" && host != "localhost" && net.ParseIP(host) == nil {
		return "", nil, usage.Errorf("--web %q: %q is not an IP address of this host", addr, host)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--web %s: %w", addr, err)
	}
	page = "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(stderr, "live view: %s (metrics: /metrics)\n", page)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- live.Serve(ctx, ln, hub) }()
	return page, func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(stderr, "linerate:", err)
		}
	}, nil
}

// benchLive serves the live view of a bench on addr: each second of the
// run and each sample of this machine's counters go to the page, /events
// and /metrics. Call it with cfg's Sampling and OnInterval set; stop ends
// the server after the run.
func benchLive(ctx context.Context, addr string, cfg *traffic.Config, stderr io.Writer) (stop func(), err error) {
	hub := live.NewHub(liveView(nil))
	if _, stop, err = startLiveWeb(ctx, addr, hub, stderr); err != nil {
		return nil, err
	}
	if sampling := cfg.Sampling; sampling != nil {
		cfg.Sampling = func(each func(box.Rates)) func() ([]box.Rates, error) {
			return sampling(func(r box.Rates) {
				if each != nil {
					each(r)
				}
				hub.Rates(r)
			})
		}
	}
	show := cfg.OnInterval
	cfg.OnInterval = func(iv results.IntervalStats) {
		hub.Bench(iv)
		if show != nil {
			show(iv)
		}
	}
	return stop, nil
}
