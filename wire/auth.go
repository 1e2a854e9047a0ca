package wire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// NonceLen is the bytes of randomness in a nonce; it travels as twice as
// many hex digits.
const NonceLen = 32

// TokenEnv is the environment variable that holds the shared secret when
// no --token-file names one.
const TokenEnv = "LINERATE_TOKEN"

// ErrSlowDown: the server refuses a source for a while after failed
// attempts to authenticate.
var ErrSlowDown = errors.New("slow down")

// NewNonce is a fresh nonce from crypto/rand, in hex: what each end
// sends for the other to prove the secret over.
func NewNonce() string {
	var b [NonceLen]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Role is which end of the handshake a proof is for; it is part of what
// the proof covers, so one end's proof is never the other's.
type Role string

// The two ends of the handshake.
const (
	RoleClient Role = "client"
	RoleServer Role = "server"
)

// Proof is what an end sends to show it knows secret, for role: first the
// nonce of the other end for the server's proof.
func Proof(secret string, role Role, a, b string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("linerate " + string(role) + "\x00" + a + "\x00" + b))
	return hex.EncodeToString(m.Sum(nil))
}

// ValidNonce reports whether n has a nonce's form (NonceLen bytes in
// hex); a peer's nonce of any other form is refused before use.
func ValidNonce(n string) bool {
	if len(n) != 2*NonceLen {
		return false
	}
	_, err := hex.DecodeString(n)
	return err == nil
}
