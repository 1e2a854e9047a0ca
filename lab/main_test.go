package lab

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a helper process that tests run on purpose:
// one that builds a lab and kills itself half way, and one that, started
// inside a node, dials another node by name.
const (
	helperEnv  = "LINERATE_LAB_TEST_HELPER"
	helperArgs = "LINERATE_LAB_TEST_ARGS"

	helperCrash = "crash" // NAME DIR K: Up a router, SIGKILL after step K
	helperDial  = "dial"  // HOST:PORT: dial, send "hello", print the reply
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode, strings.Fields(os.Getenv(helperArgs))))
	}
	os.Exit(m.Run())
}

func runHelper(exe, mode string, args ...string) (string, error) {
	cmd := helperCmd(exe, mode, args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func helperCmd(exe, mode string, args ...string) *exec.Cmd {
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperArgs+"="+strings.Join(args, " "))
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

func helper(mode string, args []string) int {
	switch mode {
	case helperCrash:
		k, _ := strconv.Atoi(args[2])
		s := Spec{Name: args[0], Topology: Router, afterStep: func(done int) {
			if done == k {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // never returns: the kill is synchronous for ourselves
			}
		}}
		_, err := Dir(args[1]).Up(context.Background(), s)
		fmt.Fprintf(os.Stderr, "Up ran to its end without being killed: %v\n", err)
		return 3
	case helperDial:
		host, _, _ := net.SplitHostPort(args[0])
		if a, ok, err := Resolve(host); err != nil || !ok {
			fmt.Fprintf(os.Stderr, "Resolve(%s) = %v, %v\n", host, ok, err)
			return 1
		} else {
			fmt.Printf("resolve %s %s\n", host, a)
		}
		c, err := net.DialTimeout("tcp", args[0], 5*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("hello")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		c.(*net.TCPConn).CloseWrite()
		reply, err := io.ReadAll(c)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("dialled %s from %s: %s\n", c.RemoteAddr(), c.LocalAddr(), reply)
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper", mode)
	return 2
}
