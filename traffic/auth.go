package traffic

import (
	"cmp"
	"crypto/hmac"
	"fmt"
	"net"
	"time"

	"linerate/internal/version"
	"linerate/wire"
)

// The handshake (protocol 2, docs/agents.md) proves that each end knows
// the shared secret without either sending it:
//
//	client → hello     {version, nonce Nc}
//	server → challenge {nonce Ns, proof HMAC-SHA256(secret, "linerate server" Nc Ns)}
//	client → auth      {proof HMAC-SHA256(secret, "linerate client" Ns Nc)}
//	server → welcome   {limits, server id}        or an error (wrong-token)
//
// A server without a secret says so in its challenge (open) and takes any
// client; a client that has a secret checks the server's proof, so a server
// that does not know the secret cannot pass for one that does.

// Handshake limits: until a client has proved it knows the secret, its
// lines are short and its time is short.
const (
	authTimeout = 5 * time.Second // from connect to welcome
	authLine    = 4 << 10         // longest message before welcome
)

// serverHandshake runs the server's side on c, whose secret is token (""
// takes any client), up to the client's proof, within timeout (0:
// authTimeout); it returns an error wrapping ErrWrongToken, ErrVersion or
// ErrProtocol when the client fails it. The welcome comes once the client
// has a slot.
func serverHandshake(c *ctl, token string, timeout time.Duration) error {
	c.limit, c.peer = authLine, wire.RoleClient
	deadline := time.Now().Add(cmp.Or(timeout, authTimeout))
	m, err := c.read(time.Until(deadline))
	if err != nil {
		return err
	}
	if m.Type != wire.MsgHello {
		return fmt.Errorf("%w: first message %q, want hello", wire.ErrProtocol, m.Type)
	}
	if m.Version != wire.ProtocolVersion {
		return fmt.Errorf("%w %d, this server speaks %d (linerate %s)", wire.ErrVersion, m.Version, wire.ProtocolVersion, version.Version)
	}
	if !wire.ValidNonce(m.Nonce) {
		return fmt.Errorf("%w: hello without a valid nonce", wire.ErrProtocol)
	}
	ch := &Message{Type: wire.MsgChallenge, Version: wire.ProtocolVersion, Linerate: version.Version, Nonce: wire.NewNonce(), Open: token == ""}
	if !ch.Open {
		ch.Proof = wire.Proof(token, wire.RoleServer, m.Nonce, ch.Nonce)
	}
	if err := c.write(ch); err != nil {
		return err
	}
	a, err := c.expect(time.Until(deadline), wire.MsgAuth)
	if err != nil {
		return err
	}
	if !ch.Open && !hmac.Equal([]byte(a.Proof), []byte(wire.Proof(token, wire.RoleClient, ch.Nonce, m.Nonce))) {
		return fmt.Errorf("%w: the server requires the secret it was given (serve --token-file or $%s)", wire.ErrWrongToken, wire.TokenEnv)
	}
	return nil
}

// welcome tells a client that passed the handshake and has a client slot
// that the server listens: its limits, its ID and, with features, what it
// does beyond the protocol's version.
func welcome(c *ctl, limits wire.Limits, serverID string, features bool) error {
	c.limit = maxLine
	m := &Message{Type: wire.MsgWelcome, Version: wire.ProtocolVersion, Linerate: version.Version, Limits: &limits, ServerID: serverID}
	if features {
		m.Features = []string{wire.FeatureStartBarrier, wire.FeatureMix}
	}
	return c.write(m)
}

// clientHandshake runs the client's side on c with secret (may be empty)
// and returns the welcome.
func clientHandshake(c *ctl, secret string) (*Message, error) {
	c.limit = authLine
	deadline := time.Now().Add(authTimeout + helloTimeout)
	hello := &Message{Type: wire.MsgHello, Version: wire.ProtocolVersion, Linerate: version.Version, Nonce: wire.NewNonce()}
	if err := c.write(hello); err != nil {
		return nil, err
	}
	ch, err := c.expect(time.Until(deadline), wire.MsgChallenge)
	if err != nil {
		return nil, err
	}
	if !wire.ValidNonce(ch.Nonce) {
		return nil, fmt.Errorf("%w: challenge without a valid nonce", wire.ErrProtocol)
	}
	auth := &Message{Type: wire.MsgAuth}
	switch {
	case ch.Open:
	case secret == "":
		return nil, fmt.Errorf("%w: the server requires a secret: give --token-file or $%s", wire.ErrWrongToken, wire.TokenEnv)
	case !hmac.Equal([]byte(ch.Proof), []byte(wire.Proof(secret, wire.RoleServer, hello.Nonce, ch.Nonce))):
		return nil, fmt.Errorf("%w: the server does not know this secret (its proof does not match)", wire.ErrWrongToken)
	default:
		auth.Proof = wire.Proof(secret, wire.RoleClient, ch.Nonce, hello.Nonce)
	}
	if err := c.write(auth); err != nil {
		return nil, err
	}
	w, err := c.expect(time.Until(deadline), wire.MsgWelcome)
	if err != nil {
		return nil, err
	}
	c.limit = maxLine
	return w, nil
}

// Greet runs the client's side of the handshake on c with secret (may be
// empty for a server without one) and returns the server's welcome (its
// version, limits and ID), within d. An error the server sends is a
// *PeerError; an error of the connection itself is returned as it is. The
// server says nothing more until the client speaks, so the connection can
// then be read by others.
func Greet(c net.Conn, secret string, d time.Duration) (*Message, error) {
	_ = c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	return clientHandshake(newCtl(c), secret)
}
