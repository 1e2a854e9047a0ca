package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"linerate/internal/usage"
	"linerate/live"
	"linerate/remote"
	"linerate/source/procfs"
	"linerate/traffic"
	"linerate/traffic/sock"
	"linerate/wire"
)

// serveOptions are the flags of serve.
type serveOptions struct {
	listen      []string
	token       string
	tokenFile   string
	maxDuration time.Duration
	maxRate     string
	maxClients  int
	peerTimeout time.Duration
	cpus        string
	quiet       bool
	stdio       bool
	allow       []string
	iperf3      iperf3ServeOptions
	web         string
}

// serveMaxClients is serve's --max-clients by default.
const serveMaxClients = 8

// serveLong is the --help text of serve.
const serveLong = `serve listens for 'linerate bench' clients on TCP port 7557 (linerate's own;
iperf3 uses 5201) and runs the tests they ask for, one after another or at
once, without restarting: it receives UDP and TCP test traffic, answers
latency probes, sends traffic back for --reverse and --bidir, samples this
machine's counters once a second and returns its results and samples to the
client.

It only ever sends to the address of a client's control connection, caps
each test's duration and rate (--max-duration, --max-rate), refuses more
than --max-clients control connections at once with a reason, and gives up
on a client that sends garbage or vanishes: at once when its connection
closes, after --peer-timeout when its host or network went silent.

With a shared secret (--token-file FILE, or $LINERATE_TOKEN), every client
must prove it knows it by challenge and response: the secret never crosses
the wire, and a client checks the server knows it too. Connections still
authenticating have their own few slots, apart from --max-clients; a source
that fails waits longer after each failure. Without a secret, anyone who
reaches the port may run tests (a warning says so).

As an agent, serve also runs third-party flows: a controller asks it to
send to another agent ('linerate bench --from THIS --to OTHER'). It sends
only to an agent that accepts the test on its own control port with the
same secret, only with a secret of its own (or --allow), and only to the
addresses --allow names when given. docs/agents.md has the
handshake, docs/security.md the limits; the protocol is in docs/bench.md.

--web ADDR serves what 'linerate watch --web' serves while the agent runs:
this box's live page, /events and /metrics in the Prometheus text format
(docs/watch.md lists the metrics), sampled once a second, so a fleet of
agents is a set of scrape targets ('linerate run PLAN --prometheus-targets
FILE' writes their list). There is no authentication on it: give an
address only those who may see the box's counters reach.`

// serveExample are the --help examples of serve.
const serveExample = `  linerate serve                                  # every address, port 7557
  linerate serve --listen 10.0.1.1 --listen 10.0.2.1 --listen 10.0.3.1
  linerate serve --listen 192.168.6.2:9000 --token-file /etc/linerate.token
  LINERATE_TOKEN=$(cat /root/secret) linerate serve
  linerate serve --max-duration 60s --max-rate 500Mbps --cpus 2,3
  linerate serve --token-file /etc/linerate.token --allow 192.168.6.0/24   # flows only into the lab subnet
  linerate serve --iperf3 --allow 192.168.1.0/24   # iperf3 -c from a phone or a Mac, too
  linerate serve --peer-timeout 30s                # clients behind a slow, deep-buffered link
  ssh pi@cm4 linerate serve --stdio                # one controller on stdin/stdout (what ssh:// hosts run)
  linerate serve --web 10.0.0.5:9464               # and be a Prometheus scrape target: http://10.0.0.5:9464/metrics`

func newServeCmd() *cobra.Command {
	o := &serveOptions{}
	c := &cobra.Command{
		Use:     "serve",
		Short:   "Be the far end of 'linerate bench': receive, echo and send test traffic",
		Long:    serveLong,
		Example: serveExample,
		Args:    argsWith(cobra.NoArgs),
		RunE:    o.run,
	}
	f := c.Flags()
	f.StringArrayVar(&o.listen, "listen", nil, "ADDR[:PORT] to listen on (repeatable; default every address, port 7557)")
	f.StringVar(&o.token, "token", "", "shared secret clients must prove they know (visible in ps: prefer --token-file or $LINERATE_TOKEN)")
	f.StringVar(&o.tokenFile, "token-file", "", "read the shared secret from this file (first line; chmod 600)")
	f.DurationVar(&o.maxDuration, "max-duration", 5*time.Minute, "longest test (warmup included) this server runs; longer ones are shortened")
	f.StringVar(&o.maxRate, "max-rate", "0", "fastest rate per direction a test may ask (\"500Mbps\", \"200kpps\"; 0: no cap)")
	f.IntVar(&o.maxClients, "max-clients", serveMaxClients, "control connections open at once; more are refused with a reason")
	f.DurationVar(&o.peerTimeout, "peer-timeout", 10*time.Second, "end a client's test once it has been silent this long (nothing acknowledged, no keepalive answer): its host or network vanished")
	f.StringVar(&o.cpus, "cpus", "", "pin the server's sender and receiver threads to these CPUs, round robin (\"2,3\" or \"0-3\")")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "do not log clients and tests to stderr")
	f.StringSliceVar(&o.allow, "allow", nil, "CIDR (repeatable, comma-separated): the only addresses a third-party flow may send to (bench --from), and with --iperf3 the only iperf3 clients served; without a secret, the only way to allow such flows")
	o.iperf3.add(f)
	f.StringVar(&o.web, "web", "", "also serve this box's live page, /events and /metrics at HOST:PORT (9464 is the usual port) while serving")
	f.BoolVar(&o.stdio, "stdio", false, "serve one controller on standard input and output instead of listening (a controller starts it over ssh); stdout carries nothing but the protocol, logs go to stderr")
	return c
}

// listenAddr turns --listen ADDR[:PORT] into an address to listen on.
func listenAddr(s string) (string, error) {
	host, port := s, strconv.Itoa(wire.DefaultPort)
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	}
	if host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			return "", usage.Errorf("--listen %q: %q is not an IP address", s, host)
		}
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return "", usage.Errorf("--listen %q: port %q is not 1-65535", s, port)
	}
	return net.JoinHostPort(host, port), nil
}

func (o *serveOptions) run(cmd *cobra.Command, _ []string) error {
	srv, err := o.server(cmd)
	if err != nil {
		return err
	}
	ends := openEndCounters()
	defer ends.close()
	srv.Drops, srv.Machine = ends.drops(), ends.machine
	if !o.quiet {
		srv.Logf = timedLog(cmd.ErrOrStderr())
	}
	stopIperf3, err := o.iperf3.start(cmd, srv, o.listen, o.stdio)
	if err != nil {
		return err
	}
	defer stopIperf3()
	if o.web != "" {
		stop, err := o.serveWeb(cmd)
		if err != nil {
			return err
		}
		defer stop()
	}
	if o.stdio {
		conn, err := remote.Stdio()
		if err != nil {
			return err
		}
		return srv.ServeConn(cmd.Context(), conn)
	}
	lns, err := listen(cmd.ErrOrStderr(), o.listen)
	if err != nil {
		return err
	}
	return serveAll(cmd.Context(), srv, lns)
}

// serveWeb samples this box once a second and serves its live view on
// --web until stop.
func (o *serveOptions) serveWeb(cmd *cobra.Command) (stop func(), err error) {
	hub := live.NewHub(liveView(nil))
	_, stopWeb, err := startLiveWeb(cmd.Context(), o.web, hub, cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	stopSampling, err := sampleLive(procfs.NewFS("/proc"), time.Second, hub, nil)
	if err != nil {
		stopWeb()
		return nil, err
	}
	return func() { stopSampling(); stopWeb() }, nil
}

// server checks the flags and builds the server they describe; the
// warnings about its secret go to stderr.
func (o *serveOptions) server(cmd *cobra.Command) (*traffic.Server, error) {
	token, warnings, err := readSecret(o.token, cmd.Flags().Changed("token"), o.tokenFile)
	if err != nil {
		return nil, err
	}
	if token == "" && !o.stdio {
		warnings = append(warnings, fmt.Sprintf("no secret (--token-file or $%s): any host that reaches this port may run tests", wire.TokenEnv))
	}
	warn(cmd.ErrOrStderr(), warnings)
	rate, err := wire.ParseRate(o.maxRate)
	if err != nil {
		return nil, usage.Errorf("--max-rate: %w", err)
	}
	switch {
	case o.maxDuration <= 0:
		return nil, usage.Errorf("--max-duration %s: must be more than 0", o.maxDuration)
	case o.peerTimeout < time.Second:
		return nil, usage.Errorf("--peer-timeout %s: must be at least 1s", o.peerTimeout)
	case o.maxClients < 1:
		return nil, usage.Errorf("--max-clients %d: must be at least 1", o.maxClients)
	}
	cpus, err := parseCPUs(o.cpus)
	if err != nil {
		return nil, err
	}
	if o.stdio && len(o.listen) > 0 {
		return nil, usage.Errorf("--stdio and --listen: give one")
	}
	allow, err := parseAllow(o.allow)
	if err != nil {
		return nil, err
	}
	return &traffic.Server{
		Allow:       allow,
		Token:       token,
		Limits:      wire.Limits{MaxDuration: wire.Seconds(o.maxDuration), MaxRate: rate},
		MaxConns:    o.maxClients,
		PeerTimeout: o.peerTimeout,
		CPUs:        cpus,
		Sampling:    liveSampling(),
	}, nil
}

// parseAllow reads --allow: CIDRs, or addresses standing for themselves.
func parseAllow(list []string) ([]netip.Prefix, error) {
	var allow []netip.Prefix
	for _, a := range list {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			ip, ierr := netip.ParseAddr(a)
			if ierr != nil {
				return nil, usage.Errorf("--allow %q: not a CIDR (10.0.0.0/24) or an address", a)
			}
			p = netip.PrefixFrom(ip, ip.BitLen())
		}
		allow = append(allow, p.Masked())
	}
	return allow, nil
}

// timedLog logs a line with the time of day to w, one line at a time.
func timedLog(w io.Writer) func(format string, args ...any) {
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
}

// listen opens a listener on each --listen address (every address, the
// default port, when none is given) and says so on stderr. An address
// that is not on this host is bad input.
func listen(stderr io.Writer, addrs []string) ([]net.Listener, error) {
	if len(addrs) == 0 {
		addrs = []string{":" + strconv.Itoa(wire.DefaultPort)}
	}
	var lns []net.Listener
	for _, a := range addrs {
		ln, err := listenOn(a)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, err
		}
		lns = append(lns, ln)
		fmt.Fprintf(stderr, "linerate serve: listening on %s\n", ln.Addr())
	}
	return lns, nil
}

// listenOn listens on one --listen ADDR[:PORT].
func listenOn(a string) (net.Listener, error) {
	addr, err := listenAddr(a)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, sock.ErrAddrNotLocal) || errors.Is(err, syscall.EADDRNOTAVAIL):
		return nil, usage.Errorf("--listen %s: address not on this host", a)
	case err != nil:
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// serveAll serves on every listener until the context ends; one listener
// failing stops the others too.
func serveAll(ctx context.Context, srv *traffic.Server, lns []net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- srv.Serve(ctx, ln) }()
	}
	var first error
	for range lns {
		if err := <-errc; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}
