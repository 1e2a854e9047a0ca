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

	helperCrash = "crash" // NAME DIR K [serve]: Up a router (with agents), SIGKILL after step K
	helperDial  = "dial"  // HOST:PORT: dial, send "hello", print the reply
	helperAgent = "agent" // NODE PORT SECRET: an agent that answers "NODE SECRET'S-LENGTH"
)

// testAgentPort is the port of the test agents.
const testAgentPort = 7559

// testServe starts the test binary as every node's agent.
func testServe(t interface{ Fatal(...any) }) *Serve {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Serve{Port: testAgentPort, Command: func(node, secret string) *exec.Cmd {
		return helperCmd(exe, helperAgent, node, strconv.Itoa(testAgentPort), secret)
	}}
}

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
		if len(args) > 3 && args[3] == "serve" {
			s.Serve = testServe(fatal{})
		}
		_, err := Dir(args[1]).Up(context.Background(), s)
		fmt.Fprintf(os.Stderr, "Up ran to its end without being killed: %v\n", err)
		return 3
	case helperAgent:
		return agent(args[0], args[1], args[2])
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

// fatal ends a helper process on an error.
type fatal struct{}

func (fatal) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, args...)
	os.Exit(1)
}

// agent listens on port and answers each connection with the node's name
// and the length of the secret it read; it ends by itself after two
// minutes, should nothing stop it.
func agent(node, port, secretFile string) int {
	b, err := os.ReadFile(secretFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", ":"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	time.AfterFunc(2*time.Minute, func() { os.Exit(4) })
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		fmt.Fprintf(c, "%s %d", node, len(strings.TrimSpace(string(b))))
		c.Close()
	}
}
