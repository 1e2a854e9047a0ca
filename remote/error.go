package remote

import (
	"errors"
	"fmt"
	"strings"
)

// Why a host could not be reached or its channel ended; an *Error wraps
// one of them.
var (
	// ErrUnreachable: no agent answered at the address, or ssh could not
	// connect (refused, no route, timed out, a name that does not resolve).
	ErrUnreachable = errors.New("unreachable")
	// ErrAuth: ssh could not log in (the key, the user, BatchMode with no
	// key that works).
	ErrAuth = errors.New("authentication failed")
	// ErrNotInstalled: the host has no linerate on the PATH of a
	// non-interactive ssh session.
	ErrNotInstalled = errors.New("linerate is not installed")
	// ErrArch: no linerate binary of the host's architecture to copy.
	ErrArch = errors.New("no binary for the host's architecture")
	// ErrAgent: linerate started on the host but ended with an error (an
	// old version without serve --stdio, a bad flag, a crash).
	ErrAgent = errors.New("the agent failed")
	// ErrSSH: anything else ssh reports (a bad config, a host key that
	// changed, a copy that failed).
	ErrSSH = errors.New("ssh failed")
)

// Error is one host that could not be reached, or whose channel ended
// badly. Its message is one line: the host, what went wrong, and the cause
// (ssh's exit code and the last line it wrote on stderr, or the dial
// error).
type Error struct {
	// Host is the spec as given.
	Host string
	// Kind is one of the sentinels above.
	Kind error
	// ExitCode is ssh's exit code (255: ssh itself failed; otherwise the
	// remote command's), or -1 when no ssh ran or it was killed.
	ExitCode int
	// Stderr is the last line ssh (or the remote command) wrote on stderr.
	Stderr string
	// Err is the underlying error, when there is one (a dial error).
	Err error
	// Hint says what to do about it, when something can be done.
	Hint string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Host, e.Kind)
	var cause []string
	if e.ExitCode >= 0 {
		cause = append(cause, fmt.Sprintf("ssh exit %d", e.ExitCode))
	}
	if e.Stderr != "" {
		cause = append(cause, e.Stderr)
	} else if e.Err != nil {
		cause = append(cause, e.Err.Error())
	}
	if len(cause) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(cause, ": "))
	}
	if e.Hint != "" {
		b.WriteString(": " + e.Hint)
	}
	return b.String()
}

// Unwrap gives the sentinel and the underlying error.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// installHint says how to put linerate on a host.
const installHint = "put a static release binary there as linerate on the PATH of a non-interactive ssh session " +
	"(make release: dist/linerate-linux-amd64, -arm64 or -armv7, e.g. as /usr/local/bin/linerate), or let linerate copy itself there for the run (--copy)"

// sshError classifies how an ssh run ended. ssh exits 255 for its own
// failures and says which only in English on stderr, so its words are
// matched here, once, and turned into a Kind; any other code is the remote
// command's (127: not found, as every POSIX shell reports it).
func sshError(host string, code int, lastLine string, agent bool) *Error {
	e := &Error{Host: host, ExitCode: code, Stderr: lastLine}
	low := strings.ToLower(lastLine)
	switch {
	case code == 255 && (strings.Contains(low, "permission denied") || strings.Contains(low, "too many authentication failures") ||
		strings.Contains(low, "no supported authentication methods")):
		e.Kind = ErrAuth
	case code == 255 && (strings.Contains(low, "connection refused") || strings.Contains(low, "no route to host") ||
		strings.Contains(low, "timed out") || strings.Contains(low, "could not resolve hostname") ||
		strings.Contains(low, "network is unreachable") ||
		strings.Contains(low, "connection reset") || strings.Contains(low, "not responding")):
		e.Kind = ErrUnreachable
	case code == 255:
		e.Kind = ErrSSH
	case code == 127 && agent:
		e.Kind, e.Hint = ErrNotInstalled, installHint
	case agent:
		e.Kind = ErrAgent
	default:
		e.Kind = ErrSSH
	}
	return e
}
