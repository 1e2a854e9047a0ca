package vm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/hashicorp/yamux"
)

// How the host and linerate inside a guest talk, over the guest's
// virtio-serial port:
//
//  1. A handshake in lines, since the port is a byte stream that outlives
//     the guest's boots and may hold leftovers of an earlier session. The
//     host sends "LRSYNC NONCE" until the guest's agent answers "LRACK
//     NONCE HELLO-JSON"; the host then sends "LRGO NONCE", and the agent
//     "LRREADY NONCE" as its last line before the session. Each side
//     skips whatever else it reads before those lines (the host may have
//     sent a second LRSYNC before it read the first LRACK, and so read a
//     second LRACK).
//  2. A yamux session (streams with their own flow control, from
//     github.com/hashicorp/yamux): the host opens a stream per request.
//  3. On each stream, a Request in one JSON line, then what the request
//     carries: for a command, frames of stdin, signals, output and exit.
//
// A guest that reboots leaves the host's session dead; the host sees the
// reset (QEMU's RESET event) and starts over at step 1.

// Handshake words.
const (
	syncWord  = "LRSYNC"
	ackWord   = "LRACK"
	goWord    = "LRGO"
	readyWord = "LRREADY"
)

// maxLine bounds a handshake or request line.
const maxLine = 1 << 20

// Hello is what a guest's agent says of itself in the handshake.
type Hello struct {
	// BootID is the kernel's boot_id: a new one after each boot.
	BootID  string `json:"boot_id"`
	Kernel  string `json:"kernel"`
	Version string `json:"version"`
	// Uptime is the guest's, when it answered.
	Uptime float64 `json:"uptime_s"`
}

// Request is the first line of a stream the host opens.
type Request struct {
	Op     string       `json:"op"` // OpExec, OpConfig, OpReboot
	Exec   *ExecRequest `json:"exec,omitempty"`
	Config *Config      `json:"config,omitempty"`
}

// Operations of a Request.
const (
	OpExec   = "exec"
	OpConfig = "config"
	OpReboot = "reboot"
)

// ExecRequest is a command to run in the guest.
type ExecRequest struct {
	Argv []string `json:"argv"`
	// Env is added to the guest's own environment (PATH, HOME).
	Env []string `json:"env,omitempty"`
}

// Reply ends a config or reboot request: an error, or none.
type Reply struct {
	Error string `json:"error,omitempty"`
}

// Config is how a guest is to be set up after each boot: the lab's view
// of the node.
type Config struct {
	Lab  string `json:"lab"`
	Node string `json:"node"`
	// Ifaces are the node's NICs, found by MAC and named after their
	// peers.
	Ifaces     []IfaceConfig `json:"ifaces"`
	Gateway    netip.Addr    `json:"gateway,omitzero"`
	Forward    bool          `json:"forward,omitempty"`
	Masquerade string        `json:"masquerade,omitempty"`
	// Hosts is the node's /etc/hosts.
	Hosts string `json:"hosts"`
	// Persist names the NICs from boot on (systemd .link files), for a
	// guest with a root disk.
	Persist bool `json:"persist,omitempty"`
	// Serve, when set, is the lab's agent in this node.
	Serve *ServeConfig `json:"serve,omitempty"`
}

// IfaceConfig is one NIC of a guest.
type IfaceConfig struct {
	Name string       `json:"name"`
	MAC  string       `json:"mac"`
	Addr netip.Prefix `json:"addr"`
	MTU  int          `json:"mtu,omitempty"`
	// Rate caps the NIC's egress (bits/s), 0 for none.
	Rate uint64 `json:"rate_bps,omitempty"`
}

// ServeConfig is the agent a guest runs: linerate with Args, its secret
// in the file the args name (TokenFile).
type ServeConfig struct {
	Args      []string `json:"args"`
	Secret    string   `json:"secret"`
	TokenFile string   `json:"token_file"`
	Port      int      `json:"port"`
}

// GuestTokenFile is where a guest keeps the lab agents' secret.
const GuestTokenFile = "/run/linerate/token"

// Frame kinds on an exec stream.
const (
	frameStdin    = 'i' // host → guest: bytes for the command's stdin
	frameStdinEOF = 'I' // host → guest: stdin is closed
	frameSignal   = 's' // host → guest: one byte, a signal number
	frameStdout   = 'o' // guest → host
	frameStderr   = 'e' // guest → host
	frameExit     = 'x' // guest → host: an Exit, last
)

// maxFrame bounds a frame's payload.
const maxFrame = 1 << 20

// Exit is how a command in a guest ended.
type Exit struct {
	Code   int    `json:"code"`
	Signal int    `json:"signal,omitempty"`
	Error  string `json:"error,omitempty"` // it could not be started
}

func writeFrame(w io.Writer, kind byte, p []byte) error {
	var h [5]byte
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:], uint32(len(p)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	_, err := w.Write(p)
	return err
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes: at most %d", n, maxFrame)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	return h[0], p, nil
}

// writeLine writes v as one JSON line.
func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readLine reads one JSON line into v, at most maxLine bytes.
func readLine(r *bufio.Reader, v any) error {
	line, err := readBounded(r)
	if err != nil {
		return err
	}
	return json.Unmarshal(line, v)
}

// readBounded reads up to a newline, failing past maxLine bytes.
func readBounded(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		if err == nil {
			return bytes.TrimRight(line, "\r\n"), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// bufConn is a connection whose reads come through a bufio.Reader that
// may already hold some of its bytes.
type bufConn struct {
	*bufio.Reader
	io.WriteCloser
}

// yamuxConfig is the session's: no keepalive (the host pings when it
// wants to know), and a log that stays quiet.
func yamuxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.EnableKeepAlive = false
	c.LogOutput = io.Discard
	c.ConnectionWriteTimeout = 30 * time.Second
	c.StreamOpenTimeout = 30 * time.Second
	return c
}
