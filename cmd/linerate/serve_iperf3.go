//go:build !small

package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"linerate/history"
	"linerate/internal/usage"
	"linerate/iperf3"
	"linerate/results"
	"linerate/traffic"
	"linerate/wire"
)

// iperf3ServeOptions are serve's flags for answering iperf3 clients.
type iperf3ServeOptions struct {
	on      bool
	port    int
	history historyFlags
}

func (o *iperf3ServeOptions) add(f *pflag.FlagSet) {
	f.BoolVar(&o.on, "iperf3", false, "also answer unmodified iperf3 clients ('iperf3 -c HOST'), one test at a time, each kept in the run history with this box's samples; with a secret, only the addresses --allow names may use it")
	f.IntVar(&o.port, "iperf3-port", iperf3.DefaultPort, "TCP and UDP port for iperf3 clients (--iperf3); not the control port of --listen")
	o.history.add(f, true)
}

// hosts are the addresses iperf3 clients are answered on: those of the
// --listen addresses, or every address; --iperf3-port may not be a
// control port.
func (o *iperf3ServeOptions) hosts(listen []string) ([]string, error) {
	hosts := []string{""}
	if len(listen) > 0 {
		hosts = hosts[:0]
	}
	for _, l := range listen {
		a, err := listenAddr(l)
		if err != nil {
			return nil, err
		}
		h, p, _ := net.SplitHostPort(a)
		if p == strconv.Itoa(o.port) {
			return nil, usage.Errorf("--iperf3-port %d: the control port of --listen %s; give another", o.port, l)
		}
		hosts = append(hosts, h)
	}
	if len(listen) == 0 && o.port == wire.DefaultPort {
		return nil, usage.Errorf("--iperf3-port %d: the control port; give another", o.port)
	}
	return hosts, nil
}

// start answers iperf3 clients beside srv, on the --listen hosts (every
// address when none), with srv's limits; stop ends it and waits.
func (o *iperf3ServeOptions) start(cmd *cobra.Command, srv *traffic.Server, listen []string, stdio bool) (stop func(), err error) {
	if !o.on {
		return func() {}, nil
	}
	switch {
	case stdio:
		return nil, usage.Errorf("--iperf3 and --stdio: iperf3 clients need a listening port; give one")
	case o.port < 1 || o.port > 65535:
		return nil, usage.Errorf("--iperf3-port %d: not 1-65535", o.port)
	case srv.Token != "" && len(srv.Allow) == 0:
		return nil, usage.Errorf("--iperf3 with a secret: iperf3 clients cannot prove they know it; give --allow with the addresses that may use iperf3")
	}
	hosts, err := o.hosts(listen)
	if err != nil {
		return nil, err
	}
	var lns []net.Listener
	for _, h := range hosts {
		ln, err := listenOn(net.JoinHostPort(h, strconv.Itoa(o.port)))
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "linerate serve: iperf3 clients on %s\n", ln.Addr())
		lns = append(lns, ln)
	}
	var saveMu sync.Mutex
	is := &iperf3.Server{Allow: srv.Allow, Limits: srv.Limits, MaxClients: srv.MaxConns,
		Sampling: iperf3.Sampling(srv.Sampling), Logf: srv.Logf,
		Done: func(r *results.Result) {
			saveMu.Lock()
			defer saveMu.Unlock()
			o.history.save(cmd, history.KindBench, r)
		}}
	ctx, cancel := context.WithCancel(cmd.Context())
	var wg sync.WaitGroup
	for _, ln := range lns {
		wg.Go(func() {
			if err := is.Serve(ctx, ln); err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "linerate serve:", err)
			}
		})
	}
	return func() { cancel(); wg.Wait() }, nil
}
