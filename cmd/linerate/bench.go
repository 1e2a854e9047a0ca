package main

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"linerate/ceiling"
	"linerate/history"
	"linerate/internal/units"
	"linerate/internal/usage"
	"linerate/iperf3"
	"linerate/report"
	"linerate/results"
	"linerate/sample"
	"linerate/source/cpuset"
	"linerate/source/ethtool"
	"linerate/source/procfs"
	"linerate/source/qstats"
	"linerate/traffic"
	"linerate/traffic/session"
	"linerate/wire"
)

// benchOptions are the flags of `linerate bench udp|tcp|rr|rrul`.
type benchOptions struct {
	to         []string
	from       []string
	sample     []string
	port       int
	duration   time.Duration
	warmup     time.Duration
	interval   time.Duration
	rate       string
	threads    int
	streams    int
	reverse    bool
	bidir      bool
	bind       string
	cpus       string
	token      string
	tokenFile  string
	json       bool
	csv        bool
	jsonStream bool
	web        string
	out        string
	probe      time.Duration
	idle       time.Duration
	dscp       string
	// udp
	size    string
	frame   int         // --size as one frame size
	mix     ceiling.Mix // --size as a mix of sizes
	payload int
	ports   int
	flows   int
	src     []string
	rcvbuf  int
	engine  string
	xdp     bool
	search  searchOptions
	soak    soakOptions
	// tcp
	mss        int
	zerocopy   bool
	copy       bool
	writeSize  int
	window     string
	congestion string
	fqRate     string
	noDelay    bool
	nagle      bool
	history    historyFlags
	// warnings found while reading the flags, for stderr
	warnings []string
	// extra sets what a subcommand of its own adds to the run (bench rrul).
	extra func(*traffic.Config)
}

// benchFlags names the flag behind each field the traffic package names in
// its errors (usage.FieldError).
var benchFlags = map[string]string{
	"Engine": "--engine", "Targets": "--to", "To": "--to", "From": "--from", "Sample": "--sample", "Bind": "--bind", "FrameSize": "--size", "Ports": "--ports",
	"Goals": "--search", "Sizes": "--sizes", "Precision": "--precision", "Trial": "--trial", "MaxTrial": "--max-trial", "Loss": "--loss",
	// wire.Spec's fields, by their JSON names.
	"duration": "--duration", "warmup": "--warmup", "streams": "--streams", "ports": "--ports", "threads": "--threads",
	"rcvbuf": "--rcvbuf", "probe_interval": "--probe-interval", "payload": "--payload", "write_size": "--write-size", "mss": "--mss",
	"dscp": "--dscp", "sources": "--src", "Sources": "--src", "window": "--window", "congestion": "--congestion", "fq_rate": "--fq-rate", "nagle": "--nagle",
}

// benchFlagsFor is benchFlags for a run given the flags changed: without
// --ports or --flows a UDP test has as many ports as --threads
// (defaultPorts), so what is wrong with its ports is --threads' value.
func benchFlagsFor(proto wire.Proto, changed func(string) bool) map[string]string {
	if proto != wire.UDP || changed("ports") || changed("flows") {
		return benchFlags
	}
	m := maps.Clone(benchFlags)
	m["ports"], m["Ports"] = "--threads", "--threads"
	return m
}

func newBenchCmd() *cobra.Command { return (&benchOptions{}).command() }

// command builds `bench` with its udp, tcp, rr and rrul subcommands, their flags
// bound to o.
func (o *benchOptions) command() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench udp|tcp|rr|rrul --to HOST[:PORT] [--to ...]",
		Short: "Measure throughput, packet rate, loss and latency against 'linerate serve'",
		Long: `bench runs one test against every --to target at once (each running
'linerate serve') and reports per stream, per target and in total: packets
and bytes sent and received, rates, loss, reordering and duplicates (UDP),
goodput, retransmits and RTT (TCP), round-trip latency idle and under load,
and the CPU each end spent per million packets and per gigabit. Both ends
sample their counters once a second into the result, and the result says
what limited the run (the link, the sender, the receiver, a device in the
middle or the path) and, for UDP, where the lost packets died: each end
reads its namespace's drop counters around the measured window (and the
kernel's drop reasons where it can: docs/ledger.md). 'bench udp --search'
finds the zero-loss rate per frame size instead (docs/search.md); 'bench rr'
measures transactions per second and their round trips (docs/rr.md);
'bench rrul' loads the link 4 streams each way, marked, and measures the
latency the load adds (docs/rrul.md).

An interval line is printed every second (-i changes that; one live line on
a terminal). --json prints the final result as JSON, --json-stream one JSON
event per line as iperf3 3.17 does ({"event":"start"|"interval"|"end"|"error",
"data":...}); the schema is in docs/bench.md. Ctrl-C stops the run, prints
and saves (--out) the partial result and tells the servers.

iperf3's flags work as they do there: -c HOST, -p PORT, -t SECONDS,
-i SECONDS, -P STREAMS, -R, -b RATE, -l LENGTH, -B ADDR, -J
(docs/iperf3.md maps flags and JSON fields).

Exit codes: 0 success, 1 the network or a server failed, 2 bad input (a
flag, an address not on this host, a wrong token, a frame too big for the
path MTU), 130 interrupted (the partial result was printed).`,
		Example: `  linerate bench udp --to 10.0.0.2                       # 64-byte frames, as fast as possible
  linerate bench udp --to 10.0.0.2 --rate 100kpps --size 512 --threads 2 --ports 4
  linerate bench udp --to 192.168.6.2 --to 192.168.6.3 --cpus 2,3 --json > r.json
  linerate bench tcp --to 10.0.0.2 --streams 4 --bidir
  linerate bench tcp --to 10.0.0.2 --mss 88             # really small segments
  linerate bench tcp -c 10.0.0.2 -t 30 -P 8 -R -J       # as with iperf3
  linerate bench udp --to iperf3://10.0.0.2 -b 50M -l 1000 -t 5   # against a plain iperf3 -s
  linerate bench udp --to 10.0.0.2 --engine ring --warmup 1s --duration 10s
  linerate bench rr --to 10.0.0.2 --connect --sample router   # connections per second through a router
  linerate bench rrul --to 10.0.0.2                     # latency under load, as flent's RRUL`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage.Errorf("bench %q: want udp, tcp, rr or rrul", args[0])
			}
			return cmd.Help()
		},
	}
	o.addFlags(c.PersistentFlags())
	c.AddCommand(o.protoCmd(wire.UDP), o.protoCmd(wire.TCP), o.rrCmd(), o.rrulCmd())
	return c
}

// addFlags binds the flags every bench subcommand has to o.
func (o *benchOptions) addFlags(p *pflag.FlagSet) {
	p.StringArrayVarP(&o.to, "to", "c", nil, "target HOST[:PORT] running 'linerate serve' (repeatable; iperf3's -c), or one iperf3://HOST[:PORT] running a plain 'iperf3 -s' (docs/iperf3.md)")
	p.StringArrayVar(&o.from, "from", nil, "agent that sends instead of this host: HOST[:PORT] running 'linerate serve', or ssh://[user@]host (repeatable: the i-th --from sends to the i-th --to; one --from with several --to fans out; several --from with one --to fans in)")
	p.StringArrayVar(&o.sample, "sample", nil, "with --from, or with rr: also record this host's counters once a second (HOST[:PORT] of its agent, or ssh://), as the device in the middle (repeatable)")
	p.IntVarP(&o.port, "port", "p", wire.DefaultPort, "control port of targets given without one")
	secondsVarP(p, &o.duration, "duration", "t", 10*time.Second, "measured time: 10, 1.5 (seconds) or 500ms")
	secondsVarP(p, &o.warmup, "warmup", "", time.Second, "time sent before the measured window, excluded from the results")
	secondsVarP(p, &o.interval, "interval", "i", time.Second, "seconds between interval lines (1 or more; 0: none); the result keeps every second")
	p.StringVarP(&o.rate, "rate", "b", "0", "rate per target and direction: \"100kpps\", \"940Mbps\", \"1G\" (bits/s); 0 is as fast as possible")
	p.IntVar(&o.threads, "threads", 1, "sender threads, and receiver threads on each end (TCP: at least one per stream, up to the CPUs)")
	p.IntVarP(&o.streams, "streams", "P", 1, "flows per port (UDP) or connections (TCP), per target and direction")
	p.BoolVarP(&o.reverse, "reverse", "R", false, "the server sends, this end receives")
	p.BoolVar(&o.bidir, "bidir", false, "both directions at once")
	p.StringVarP(&o.bind, "bind", "B", "", "local source address")
	p.StringVar(&o.cpus, "cpus", "", "pin sender and receiver threads to these CPUs, round robin (\"0,1\" or \"2-3\")")
	p.StringVar(&o.token, "token", "", "shared secret the servers require (visible in ps: prefer --token-file or $LINERATE_TOKEN)")
	p.StringVar(&o.tokenFile, "token-file", "", "read the shared secret from this file (first line; chmod 600)")
	p.BoolVarP(&o.json, "json", "J", false, "print the final result as JSON (docs/bench.md)")
	p.BoolVar(&o.csv, "csv", false, "print the final result as CSV: a header row, then one row per target and direction (docs/bench.md)")
	p.BoolVar(&o.jsonStream, "json-stream", false, "print one JSON event per line, as iperf3 does: start, each interval, end (or error)")
	p.StringVarP(&o.out, "out", "o", "", "also save the JSON result to this file (partial on Ctrl-C)")
	p.StringVar(&o.web, "web", "", "serve a live page, /events and /metrics of the run at this HOST:PORT (docs/watch.md)")
	secondsVarP(p, &o.probe, "probe-interval", "", 10*time.Millisecond, "time between latency probes (0: no probes)")
	secondsVarP(p, &o.idle, "idle", "", 500*time.Millisecond, "how long to probe latency before the load starts")
	p.StringVar(&o.dscp, "dscp", "", "mark what both ends send with this DSCP: a name (CS0-CS7, AF11-AF43, EF, BE, LE) or a number 0-63 (IP_TOS, IPV6_TCLASS; the socket engine and TCP)")
	o.history.add(p, true)
}

func (o *benchOptions) protoCmd(proto wire.Proto) *cobra.Command {
	c := &cobra.Command{
		Use:  proto.String() + " --to HOST[:PORT] [--to ...]",
		Args: argsWith(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, proto) },
	}
	f := c.Flags()
	o.soak.flags(f)
	if proto == wire.UDP {
		c.Short = "UDP: packets per second, loss, reordering and duplicates"
		c.Example = `  linerate bench udp --to 10.0.0.2 --size 64 --duration 10s
  linerate bench udp --to 10.0.0.2 --rate 1Mpps --threads 2 --ports 8 --json
  linerate bench udp --to 10.0.0.2 --rate 1G --size imix   # 64:7,570:4,1518:1, counted per size on both ends
  linerate bench udp --to 10.0.0.2 --flows 8 --xdp         # 8 source ports; the server's rx queues show the spread
  linerate bench udp --to 192.168.6.2 --flows 4 --src 192.168.6.10-192.168.6.13   # RSS that hashes addresses only
  linerate bench udp -c 10.0.0.2 -b 100M -l 1472 -t 5     # as with iperf3 -u`
		f.StringVar(&o.size, "size", "", "Ethernet frame size in bytes, FCS included (default 64 for IPv4, 84 for IPv6; the payload is size minus 46 for IPv4, 66 for IPv6), or a mix sent interleaved in its ratio: imix (64:7,570:4,1518:1) or SIZE:WEIGHT,... (64:7,570:4,1518:1)")
		f.IntVarP(&o.payload, "payload", "l", 0, "UDP payload bytes instead of --size (at least 16; iperf3's -l)")
		f.IntVar(&o.ports, "ports", 0, "spread the flows over this many destination ports: RSS queues, receiver threads (default: --threads)")
		f.IntVar(&o.flows, "flows", 0, "UDP flows per target, each from a source port of its own (and round robin over --src), so that RSS or a flow hash spreads them over queues; spread over --ports (default 1 with --flows)")
		f.StringArrayVar(&o.src, "src", nil, "send the flows from these addresses of this host, round robin: an address or a range 10.0.0.2-10.0.0.5 (repeatable; forward only)")
		f.IntVar(&o.rcvbuf, "rcvbuf", 0, "SO_RCVBUF of each receiver socket in bytes (default 4 MiB)")
		f.StringVar(&o.engine, "engine", "auto", "send engine: socket (batched sendmmsg), ring (AF_PACKET TX_RING: IPv4, forward, direct route, root), xdp (AF_XDP: as the ring; a socket per TX queue, ports sharing one when there are fewer queues) or auto (xdp, else the ring, else socket, whichever applies first; with auto and no --threads, one thread per CPU up to 4)")
		f.BoolVar(&o.xdp, "xdp", false, "also count the packets reaching the server's interface with an XDP program (beside those reaching its sockets)")
		o.search.flags(f)
		if searchExample != "" {
			c.Example += "\n" + searchExample
		}
	} else {
		c.Short = "TCP: goodput per stream, retransmits and RTT"
		c.Example = `  linerate bench tcp --to 10.0.0.2 --streams 4
  linerate bench tcp --to 10.0.0.2 --mss 88 --reverse
  linerate bench tcp -c 10.0.0.2 -P 4 -t 30 -i 5           # as with iperf3
  linerate bench tcp --to 10.0.0.2 -P 4 --copy             # write from user memory, as iperf3 does
  linerate bench tcp --to 10.0.0.2 -w 4M -C bbr --fq-rate 500M --dscp AF41`
		f.IntVar(&o.mss, "mss", 0, "set TCP_MAXSEG before connecting (88 or more) and write one segment at a time, so that small payloads are small packets")
		f.BoolVar(&o.copy, "copy", false, "write from user memory, as iperf3 does (default as fast as possible: sendfile(2) from an in-memory file, which copies nothing on the sender)")
		f.BoolVar(&o.zerocopy, "zerocopy", false, "send with sendfile(2) from an in-memory file, also at a --rate (as fast as possible it is the default)")
		f.IntVarP(&o.writeSize, "write-size", "l", 0, "bytes per write (default: whole packets, at most 128 KiB copying (130320 at an MSS of 1448), at most 64 KiB with sendfile (65160); one segment with --mss; iperf3's -l)")
		f.StringVarP(&o.window, "window", "w", "", "SO_SNDBUF and SO_RCVBUF of every data socket on both ends: 416K, 4M (iperf3's -w; default: the kernel's autotuning)")
		f.StringVarP(&o.congestion, "congestion", "C", "", "TCP congestion control on both ends (TCP_CONGESTION): cubic, bbr, reno... one the kernels have (iperf3's -C)")
		f.StringVar(&o.fqRate, "fq-rate", "", "cap each connection's pacing rate on both ends (SO_MAX_PACING_RATE): 500M, 1G (bits/s)")
		f.BoolVar(&o.noDelay, "no-delay", true, "Nagle off on the data sockets (TCP_NODELAY; iperf3's -N): the default, as large writes gain nothing from Nagle")
		f.BoolVar(&o.nagle, "nagle", false, "leave Nagle on on the data sockets, as the kernel and iperf3 without -N do (not with --mss)")
	}
	return c
}

// parseCPUs reads a --cpus list and checks each CPU is one this process
// may run on.
func parseCPUs(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	cpus, err := cpuset.ParseList(s)
	if err != nil {
		return nil, usage.Errorf("--cpus %q: %w", s, err)
	}
	if len(cpus) == 0 {
		return nil, usage.Errorf("--cpus %q: no CPU", s)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		for _, c := range cpus {
			if !set.IsSet(c) {
				return nil, usage.Errorf("--cpus %q: CPU %d is not available to this process", s, c)
			}
		}
	}
	return cpus, nil
}

// liveSampling samples this machine's counters once a second, in the
// network namespace the process runs in.
func liveSampling() session.Sampling {
	var et ethtool.Client
	if l, err := ethtool.NewLive(); err == nil {
		et = l
	}
	read := sample.Live(procfs.NewFS("/proc"), et, nil).WithQueues(qstats.ByName, nil)
	return session.Sampling(sample.Func(read, time.Second))
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// config checks the flags and builds the run; changed says whether the
// user gave a flag (so that an explicit --size 0 is refused).
func (o *benchOptions) config(proto wire.Proto, changed func(string) bool) (traffic.Config, error) {
	var cfg traffic.Config
	if len(o.to) == 0 {
		return cfg, usage.Errorf("no target: give --to HOST[:PORT] (a machine running 'linerate serve')")
	}
	rate, err := wire.ParseRate(o.rate)
	if err != nil {
		return cfg, usage.Errorf("--rate: %w", err)
	}
	if o.soak.on && !changed("duration") {
		o.duration = soakDefault
	}
	if err := checkLoadFlags(o.duration, o.warmup, o.threads, o.streams); err != nil {
		return cfg, err
	}
	if err := o.checkCommon(); err != nil {
		return cfg, err
	}
	dir := wire.Forward
	if o.reverse {
		dir = wire.Reverse
	} else if o.bidir {
		dir = wire.Bidir
	}
	sp := wire.Spec{Proto: proto, Direction: dir, Duration: wire.Seconds(o.duration), Warmup: wire.Seconds(o.warmup),
		Rate: rate, Streams: o.streams, Ports: 1, Threads: o.threads, ProbeInterval: wire.Seconds(o.probe)}
	if o.dscp != "" {
		if sp.DSCP, err = wire.ParseDSCP(o.dscp); err != nil {
			return cfg, usage.Errorf("--%w", err)
		}
	}
	if proto == wire.UDP {
		if err := o.udpSpec(&sp, changed); err != nil {
			return cfg, err
		}
		cfg.FrameSize, cfg.Mix, cfg.Engine = o.frame, o.mix, o.engine
	} else if err := o.tcpSpec(&sp); err != nil {
		return cfg, err
	}
	cfg.Spec = sp
	cfg.Targets = withPort(o.to, o.port)
	cfg.Idle = o.idle
	if o.bind != "" {
		a, err := netip.ParseAddr(o.bind)
		if err != nil {
			return cfg, usage.Errorf("--bind %q: not an IP address", o.bind)
		}
		cfg.Bind = a
	}
	if cfg.CPUs, err = parseCPUs(o.cpus); err != nil {
		return cfg, err
	}
	if cfg.Token, o.warnings, err = readSecret(o.token, changed("token"), o.tokenFile); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// checkCommon refuses the values of the flags every test has that no
// test takes, and the output flags that do not go together.
func (o *benchOptions) checkCommon() error {
	switch {
	case o.reverse && o.bidir:
		return usage.Errorf("--reverse and --bidir: give one")
	case o.probe < 0:
		return usage.Errorf("--probe-interval %s: negative", o.probe)
	case o.idle < 0:
		return usage.Errorf("--idle %s: negative", o.idle)
	case o.json && o.jsonStream:
		return usage.Errorf("--json and --json-stream: give one")
	case o.csv && (o.json || o.jsonStream):
		return usage.Errorf("--csv and --json: give one")
	case o.interval < 0 || (o.interval > 0 && o.interval < time.Second):
		return usage.Errorf("--interval %s: want 0 (no interval lines) or 1s or more: linerate counts once a second", o.interval)
	case o.port < 1 || o.port > 65535:
		return usage.Errorf("--port %d: want 1-65535", o.port)
	}
	return nil
}

// udpSpec checks the UDP flags and sets sp's payload, threads and ports
// from them.
func (o *benchOptions) udpSpec(sp *wire.Spec, changed func(string) bool) error {
	o.frame, o.mix = 0, ceiling.Mix{}
	if changed("size") {
		m, err := ceiling.ParseMix(o.size)
		if err != nil {
			return usage.Errorf("--size %s: %w", o.size, err)
		}
		if len(m.Parts) == 1 {
			o.frame = m.Parts[0].Bytes
		} else {
			o.mix = m
		}
	}
	switch {
	case changed("size") && o.payload != 0:
		return usage.Errorf("--size and --payload: give one")
	case o.payload == 0 && changed("payload"):
		return usage.Errorf("--payload 0: linerate's header needs at least %d bytes", wire.HeaderLen)
	case o.payload < 0:
		return usage.Errorf("--payload %d: negative", o.payload)
	case o.ports < 0:
		return usage.Errorf("--ports %d: must be at least 1", o.ports)
	case o.rcvbuf < 0:
		return usage.Errorf("--rcvbuf %d: negative", o.rcvbuf)
	}
	if !changed("size") && o.payload == 0 {
		// The smallest frame: 64 bytes over IPv4 (84 over IPv6).
		o.payload = wire.MinUDPPayload
	}
	sp.Payload = o.payload
	if o.engine == "auto" && !changed("threads") {
		// What the user did not choose suits the machine: a sender and
		// a receiver thread per CPU (as trafgen -P does), up to 4.
		sp.Threads = min(runtime.NumCPU(), 4)
		o.threads = sp.Threads
	}
	sp.Ports, sp.RecvBuf, sp.XDP = defaultPorts(o.ports, o.threads), o.rcvbuf, o.xdp
	return o.flowSpec(sp, changed)
}

// flowSpec sets sp's flows (ports × streams) from --flows and its source
// addresses from --src.
func (o *benchOptions) flowSpec(sp *wire.Spec, changed func(string) bool) error {
	if changed("flows") {
		ports := max(o.ports, 1)
		switch {
		case changed("streams"):
			return usage.Errorf("--flows and --streams: give one (--flows counts every flow of a target, --streams those of one port)")
		case o.flows < 1 || o.flows > 65535:
			return usage.Errorf("--flows %d: want 1 to 65535", o.flows)
		case o.flows%ports != 0:
			return usage.Errorf("--flows %d over --ports %d: want a multiple of --ports (each port carries as many flows)", o.flows, ports)
		}
		sp.Ports, sp.Streams = ports, o.flows/ports
	}
	for _, s := range o.src {
		addrs, err := wire.ParseAddrRange(s)
		if err != nil {
			return usage.Errorf("--src %w", err)
		}
		sp.Sources = append(sp.Sources, addrs...)
	}
	return nil
}

// tcpSpec checks the TCP flags and sets sp's MSS, write size and way of
// sending from them.
func (o *benchOptions) tcpSpec(sp *wire.Spec) error {
	switch {
	case o.writeSize < 0:
		return usage.Errorf("--write-size %d: negative", o.writeSize)
	case o.copy && o.zerocopy:
		return usage.Errorf("--copy and --zerocopy: one or the other")
	}
	// sendfile as fast as possible (where the sender's copy costs);
	// a paced stream writes from user memory unless --zerocopy.
	sp.MSS, sp.ZeroCopy, sp.Payload = o.mss, o.zerocopy || (!o.copy && sp.Rate.Unlimited()), o.writeSize
	nagle := o.nagle || !o.noDelay // --no-delay=false is --nagle
	if nagle && o.mss > 0 {
		return usage.Errorf("--nagle and --mss: --mss writes one segment at a time, with Nagle off")
	}
	sp.Congestion, sp.Nagle = o.congestion, nagle
	if o.window != "" {
		w, err := units.ParseBytes(o.window)
		if err != nil {
			return usage.Errorf("--window %w", err)
		}
		sp.Window = int(min(w, 1<<40))
	}
	if o.fqRate != "" {
		r, err := wire.ParseRate(o.fqRate)
		if err != nil || r.PPS > 0 {
			return usage.Errorf("--fq-rate %q: want bits per second (500M, 1G)", o.fqRate)
		}
		sp.FQRate = uint64(r.BPS)
	}
	return nil
}

// defaultPorts is --ports of a UDP load: as many destination ports as
// threads unless the user said.
func defaultPorts(ports, threads int) int {
	if ports == 0 {
		return threads
	}
	return ports
}

func (o *benchOptions) run(cmd *cobra.Command, proto wire.Proto) error {
	if err := o.checkModes(); err != nil {
		return err
	}
	switch {
	case len(o.from) > 0:
		return o.runFlows(cmd, proto)
	case o.search.asked():
		return o.runSearch(cmd, proto)
	}
	return o.runOne(cmd, proto)
}

// checkModes refuses flags that do not go together: bench --from (this
// host coordinates), --search and --soak each exclude some.
func (o *benchOptions) checkModes() error {
	from := len(o.from) > 0
	switch {
	case o.soak.on && (from || o.search.asked()):
		return usage.Errorf("--soak: not with --from or --search: a soak watches the heat of the box that sends")
	case from && len(o.src) > 0:
		return usage.Errorf("--src and --from: --src names this host's addresses, and with --from this host does not send")
	case !from && len(o.sample) > 0:
		return usage.Errorf("--sample goes with --from: without it this host is an end, and the far ends are sampled already")
	case !from && o.search.asked() && o.web != "":
		return usage.Errorf("--web: not for --search")
	}
	return nil
}

// runOne runs one bench from this host to its targets and prints it.
func (o *benchOptions) runOne(cmd *cobra.Command, proto wire.Proto) error {
	var stream *report.BenchStream
	if o.jsonStream {
		stream = report.NewBenchStream(cmd.OutOrStdout())
	}
	cfg, err := o.config(proto, cmd.Flags().Changed)
	if err != nil {
		stream.Error(err)
		return err
	}
	if o.extra != nil {
		o.extra(&cfg)
	}
	warn(cmd.ErrOrStderr(), o.warnings)
	cfg.Sampling = liveSampling()
	ends := openEndCounters()
	defer ends.close()
	cfg.Drops, cfg.Machine = ends.drops(), ends.machine
	stream.Start(cfg.Targets, cfg.Engine, cfg.FrameSize, cfg.Spec)
	show, live := o.intervals(cmd, stream)
	if show != nil && o.interval > 0 {
		cfg.OnInterval = results.GroupIntervals(o.interval, show)
	}
	ctx, finishSoak, err := o.soak.start(cmd.Context(), &cfg, cmd.Flags().Changed)
	if err == nil && o.web != "" {
		var stop func()
		if stop, err = benchLive(cmd.Context(), o.web, &cfg, cmd.ErrOrStderr()); err == nil {
			defer stop()
		}
	}
	if err != nil {
		stream.Error(err)
		return err
	}
	res, runErr := runBench(ctx, cfg, cmd.Flags().Changed)
	runErr = usage.Flags(runErr, benchFlagsFor(proto, cmd.Flags().Changed))
	if res != nil {
		if err := finishSoak(res); err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "linerate: warning:", err)
		}
	}
	if live && cfg.OnInterval != nil {
		report.BenchEndLive(cmd.ErrOrStderr())
		if !o.json && !o.csv {
			report.BenchEndLive(cmd.OutOrStdout())
		}
	}
	if res == nil {
		stream.Error(runErr)
		return runErr
	}
	return o.finish(cmd, stream, res, runErr)
}

// finish keeps a bench's result (--out, the history) and prints it as
// asked; the error is for the exit code.
func (o *benchOptions) finish(cmd *cobra.Command, stream *report.BenchStream, res *results.Result, runErr error) error {
	if o.out != "" {
		if err := saveResult(o.out, res); err != nil {
			return err
		}
	}
	o.history.save(cmd, history.KindBench, res)
	stdout := cmd.OutOrStdout()
	var err error
	switch {
	case o.jsonStream:
		stream.End(res)
		if runErr != nil {
			stream.Error(runErr)
		}
	case o.json:
		err = report.BenchJSON(stdout, res)
	case o.csv:
		err = report.BenchCSV(stdout, res)
	default:
		report.BenchText(stdout, res)
		report.SoakText(stdout, res.Soak)
	}
	if err != nil {
		return err
	}
	if res.Interrupted {
		return errInterrupted
	}
	// The text and the stream print the errors; plain JSON only carries
	// them, so they go to stderr once.
	return failure(runErr, res.Problems(), !(o.json || o.csv) || o.jsonStream)
}

// intervals is where interval lines go: the JSON stream, a terminal on
// stderr only with --json (none when stderr is not one), else stdout; live
// says the line is rewritten in place on a terminal.
func (o *benchOptions) intervals(cmd *cobra.Command, stream *report.BenchStream) (show func(results.IntervalStats), live bool) {
	stdout := cmd.OutOrStdout()
	switch {
	case o.jsonStream:
		return stream.Interval, false
	case o.json || o.csv:
		if f, ok := cmd.ErrOrStderr().(*os.File); ok && isTerminal(f) {
			return func(iv results.IntervalStats) { report.BenchInterval(f, iv, true) }, true
		}
		return nil, false
	}
	f, ok := stdout.(*os.File)
	live = ok && isTerminal(f)
	return func(iv results.IntervalStats) { report.BenchInterval(stdout, iv, live) }, live
}

// withPort gives each target without a port the control port (an
// iperf3:// target has a default of its own).
func withPort(targets []string, port int) []string {
	out := make([]string, len(targets))
	for i, t := range targets {
		out[i] = t
		if iperf3.IsTarget(t) {
			continue
		}
		if _, _, err := net.SplitHostPort(t); err != nil {
			h := strings.TrimSuffix(strings.TrimPrefix(t, "["), "]")
			out[i] = net.JoinHostPort(h, strconv.Itoa(port))
		}
	}
	return out
}

func saveResult(path string, res *results.Result) error { return saveJSON(path, res) }

// saveJSON writes v as indented JSON to path (--out).
func saveJSON(path string, v any) error {
	f, err := os.Create(path)
	if err != nil {
		return usage.Errorf("--out: %w", err)
	}
	if err := report.JSON(f, v); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// checkLoadFlags checks the flags bench and tune auto share, naming the
// flag in the error.
func checkLoadFlags(duration, warmup time.Duration, threads, streams int) error {
	switch {
	case duration <= 0:
		return usage.Errorf("--duration %s: must be more than 0", duration)
	case warmup < 0:
		return usage.Errorf("--warmup %s: negative", warmup)
	case threads < 1:
		return usage.Errorf("--threads %d: must be at least 1", threads)
	case streams < 1:
		return usage.Errorf("--streams %d: must be at least 1", streams)
	}
	return nil
}
