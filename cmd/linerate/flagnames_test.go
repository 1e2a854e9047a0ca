package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"linerate/internal/testenv"
	"linerate/wire"
)

// Errors name the flag the user gave: --threads 10000 (whose count is
// the UDP ports' when --ports is not given) was reported as --ports
// 10000.
func TestThreadsNamedInError(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--threads", "10000"}, "--threads 10000: want 1 to 256"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--threads", "2", "--ports", "10000"}, "--ports 10000: want 1 to 256"},
	} {
		if err := badInputStarting(t, c.args, c.want); err != nil {
			t.Error(err)
		}
	}
}

// badInputStarting runs linerate args and says how its error is not one
// line of bad input (exit 2) starting with want.
func badInputStarting(t *testing.T, args []string, want string) error {
	_, err := runArgs(t, args...)
	if code := exitCode(err); code != exitBadInput || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		return fmt.Errorf("%v: exit %d, %v; want bad input starting %q", args, code, err, want)
	}
	return nil
}

// --iperf3-port on the control port is bad input (exit 2), refused before
// anything listens; it was a failure to listen (exit 1). Run in a network
// namespace of its own, so that a regression listens there, not here.
func TestIperf3PortOnControlPort(t *testing.T) {
	ns := testenv.NewNetNS(t)
	control := strconv.Itoa(wire.DefaultPort)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--iperf3", "--iperf3-port", control}, "--iperf3-port " + control + ": the control port"},
		{[]string{"serve", "--listen", "127.0.0.1:17931", "--iperf3", "--iperf3-port", "17931"}, "--iperf3-port 17931: the control port of --listen 127.0.0.1:17931"},
	} {
		if err := ns.Do(func() error { return badInputStarting(t, c.args, c.want) }); err != nil {
			t.Error(err)
		}
	}
}
