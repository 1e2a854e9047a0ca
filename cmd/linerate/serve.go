package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"linerate/internal/usage"
	"linerate/remote"
	"linerate/traffic"
	"linerate/wire"
)

var serveOpts struct {
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
}

var serveCmd = &cobra.Command{
	Use:   "serve",
	Short: "Be the far end of 'linerate bench': receive, echo and send test traffic",
	Long: `serve listens for 'linerate bench' clients on TCP port 7557 (linerate's own;
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
handshake, docs/security.md the limits; the protocol is in docs/bench.md.`,
	Example: `  linerate serve                                  # every address, port 7557
  linerate serve --listen 10.0.1.1 --listen 10.0.2.1 --listen 10.0.3.1
  linerate serve --listen 192.168.6.2:9000 --token-file /etc/linerate.token
  LINERATE_TOKEN=$(cat /root/secret) linerate serve
  linerate serve --max-duration 60s --max-rate 500Mbps --cpus 2,3
  linerate serve --token-file /etc/linerate.token --allow 192.168.6.0/24   # flows only into the lab subnet
  linerate serve --peer-timeout 30s                # clients behind a slow, deep-buffered link
  ssh pi@cm4 linerate serve --stdio                # one controller on stdin/stdout (what ssh:// hosts run)`,
	Args: argsWith(cobra.NoArgs),
	RunE: runServe,
}

func init() {
	f := serveCmd.Flags()
	f.StringArrayVar(&serveOpts.listen, "listen", nil, "ADDR[:PORT] to listen on (repeatable; default every address, port 7557)")
	f.StringVar(&serveOpts.token, "token", "", "shared secret clients must prove they know (visible in ps: prefer --token-file or $LINERATE_TOKEN)")
	f.StringVar(&serveOpts.tokenFile, "token-file", "", "read the shared secret from this file (first line; chmod 600)")
	f.DurationVar(&serveOpts.maxDuration, "max-duration", 5*time.Minute, "longest test (warmup included) this server runs; longer ones are shortened")
	f.StringVar(&serveOpts.maxRate, "max-rate", "0", "fastest rate per direction a test may ask (\"500Mbps\", \"200kpps\"; 0: no cap)")
	f.IntVar(&serveOpts.maxClients, "max-clients", 8, "control connections open at once; more are refused with a reason")
	f.DurationVar(&serveOpts.peerTimeout, "peer-timeout", 10*time.Second, "end a client's test once it has been silent this long (nothing acknowledged, no keepalive answer): its host or network vanished")
	f.StringVar(&serveOpts.cpus, "cpus", "", "pin the server's sender and receiver threads to these CPUs, round robin (\"2,3\" or \"0-3\")")
	f.BoolVarP(&serveOpts.quiet, "quiet", "q", false, "do not log clients and tests to stderr")
	f.StringSliceVar(&serveOpts.allow, "allow", nil, "CIDR (repeatable, comma-separated): the only addresses a third-party flow may send to (bench --from); without a secret, the only way to allow such flows")
	f.BoolVar(&serveOpts.stdio, "stdio", false, "serve one controller on standard input and output instead of listening (a controller starts it over ssh); stdout carries nothing but the protocol, logs go to stderr")
	rootCmd.AddCommand(serveCmd)
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

func runServe(cmd *cobra.Command, _ []string) error {
	token, warnings, err := readSecret(serveOpts.token, cmd.Flags().Changed("token"), serveOpts.tokenFile)
	if err != nil {
		return err
	}
	if token == "" && !serveOpts.stdio {
		warnings = append(warnings, fmt.Sprintf("no secret (--token-file or $%s): any host that reaches this port may run tests", wire.TokenEnv))
	}
	warn(cmd.ErrOrStderr(), warnings)
	rate, err := wire.ParseRate(serveOpts.maxRate)
	if err != nil {
		return usage.Errorf("--max-rate: %w", err)
	}
	if serveOpts.maxDuration <= 0 {
		return usage.Errorf("--max-duration %s: must be more than 0", serveOpts.maxDuration)
	}
	if serveOpts.peerTimeout < time.Second {
		return usage.Errorf("--peer-timeout %s: must be at least 1s", serveOpts.peerTimeout)
	}
	if serveOpts.maxClients < 1 {
		return usage.Errorf("--max-clients %d: must be at least 1", serveOpts.maxClients)
	}
	cpus, err := parseCPUs(serveOpts.cpus)
	if err != nil {
		return err
	}
	if serveOpts.stdio && len(serveOpts.listen) > 0 {
		return usage.Errorf("--stdio and --listen: give one")
	}
	stderr := cmd.ErrOrStderr()
	var allow []netip.Prefix
	for _, a := range serveOpts.allow {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			if ip, ierr := netip.ParseAddr(a); ierr == nil {
				p = netip.PrefixFrom(ip, ip.BitLen())
			} else {
				return usage.Errorf("--allow %q: not a CIDR (10.0.0.0/24) or an address", a)
			}
		}
		allow = append(allow, p.Masked())
	}
	srv := &traffic.Server{
		Allow:       allow,
		Token:       token,
		Limits:      wire.Limits{MaxDuration: wire.Seconds(serveOpts.maxDuration), MaxRate: rate},
		MaxConns:    serveOpts.maxClients,
		PeerTimeout: serveOpts.peerTimeout,
		CPUs:        cpus,
		Sampling:    liveSampling(),
	}
	ends := openEndCounters()
	defer ends.close()
	srv.Drops, srv.Machine = ends.drops(), ends.machine
	if !serveOpts.quiet {
		var mu sync.Mutex
		srv.Logf = func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
		}
	}
	if serveOpts.stdio {
		conn, err := remote.Stdio()
		if err != nil {
			return err
		}
		return srv.ServeConn(cmd.Context(), conn)
	}
	addrs := serveOpts.listen
	if len(addrs) == 0 {
		addrs = []string{":" + strconv.Itoa(wire.DefaultPort)}
	}
	var lns []net.Listener
	for _, a := range addrs {
		addr, err := listenAddr(a)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			if errors.Is(err, traffic.ErrAddrNotLocal) || strings.Contains(err.Error(), "assign requested address") {
				return usage.Errorf("--listen %s: address not on this host", a)
			}
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
		lns = append(lns, ln)
		fmt.Fprintf(stderr, "linerate serve: listening on %s\n", ln.Addr())
	}
	// One listener failing stops the others too.
	ctx, cancel := context.WithCancel(cmd.Context())
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
