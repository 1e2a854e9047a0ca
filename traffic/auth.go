package traffic

import (
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"linerate/internal/version"
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
	nonceLen    = 32
)

// TokenEnv is the environment variable that holds the shared secret when
// no --token-file names one.
const TokenEnv = "LINERATE_TOKEN"

// ErrSlowDown: the server refuses a source for a while after failed
// attempts to authenticate.
var ErrSlowDown = errors.New("slow down")

func newNonce() string {
	var b [nonceLen]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// proof is what an end sends to show it knows secret: role is "server" or
// "client", first the nonce of the other end for the server's proof.
func proof(secret, role, a, b string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("linerate " + role + "\x00" + a + "\x00" + b))
	return hex.EncodeToString(m.Sum(nil))
}

func validNonce(n string) bool {
	if len(n) != 2*nonceLen {
		return false
	}
	_, err := hex.DecodeString(n)
	return err == nil
}

// serverHandshake runs the server's side on c up to the client's proof; it
// returns an error wrapping ErrWrongToken, ErrVersion or errProtocol when
// the client fails it. The welcome comes once the client has a slot.
func (s *Server) serverHandshake(c *ctl) error {
	c.limit = authLine
	deadline := time.Now().Add(cmp.Or(s.authTimeout, authTimeout))
	m, err := c.read(time.Until(deadline))
	if err != nil {
		return err
	}
	if m.Type != msgHello {
		return fmt.Errorf("%w: first message %q, want hello", errProtocol, m.Type)
	}
	if m.Version != ProtocolVersion {
		return fmt.Errorf("%w %d, this server speaks %d (linerate %s)", ErrVersion, m.Version, ProtocolVersion, version.Version)
	}
	if !validNonce(m.Nonce) {
		return fmt.Errorf("%w: hello without a valid nonce", errProtocol)
	}
	ch := &Message{Type: msgChallenge, Version: ProtocolVersion, Linerate: version.Version, Nonce: newNonce(), Open: s.Token == ""}
	if !ch.Open {
		ch.Proof = proof(s.Token, "server", m.Nonce, ch.Nonce)
	}
	if err := c.write(ch); err != nil {
		return err
	}
	a, err := c.expect(time.Until(deadline), msgAuth)
	if err != nil {
		return err
	}
	if !ch.Open && !hmac.Equal([]byte(a.Proof), []byte(proof(s.Token, "client", ch.Nonce, m.Nonce))) {
		return fmt.Errorf("%w: the server requires the secret it was given (serve --token-file or $%s)", ErrWrongToken, TokenEnv)
	}
	return nil
}

// welcome tells a client that passed the handshake and has a client slot
// that the server listens.
func (s *Server) welcome(c *ctl) error {
	c.limit = maxLine
	lim := s.Limits
	return c.write(&Message{Type: msgWelcome, Version: ProtocolVersion, Linerate: version.Version, Limits: &lim, ServerID: s.id})
}

// clientHandshake runs the client's side on c with secret (may be empty)
// and returns the welcome.
func clientHandshake(c *ctl, secret string) (*Message, error) {
	c.limit = authLine
	deadline := time.Now().Add(authTimeout + helloTimeout)
	hello := &Message{Type: msgHello, Version: ProtocolVersion, Linerate: version.Version, Nonce: newNonce()}
	if err := c.write(hello); err != nil {
		return nil, err
	}
	ch, err := c.expect(time.Until(deadline), msgChallenge)
	if err != nil {
		return nil, err
	}
	if !validNonce(ch.Nonce) {
		return nil, fmt.Errorf("%w: challenge without a valid nonce", errProtocol)
	}
	auth := &Message{Type: msgAuth}
	switch {
	case ch.Open:
	case secret == "":
		return nil, fmt.Errorf("%w: the server requires a secret: give --token-file or $%s", ErrWrongToken, TokenEnv)
	case !hmac.Equal([]byte(ch.Proof), []byte(proof(secret, "server", hello.Nonce, ch.Nonce))):
		return nil, fmt.Errorf("%w: the server does not know this secret (its proof does not match)", ErrWrongToken)
	default:
		auth.Proof = proof(secret, "client", ch.Nonce, hello.Nonce)
	}
	if err := c.write(auth); err != nil {
		return nil, err
	}
	w, err := c.expect(time.Until(deadline), msgWelcome)
	if err != nil {
		return nil, err
	}
	c.limit = maxLine
	return w, nil
}
