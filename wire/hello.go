package wire

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// The first bytes on every TCP data connection, from the client: the
// test's cookie (8 bytes), the stream id (4, big-endian), the direction
// ('f': the client sends, 'r': the server sends) and 3 zero bytes.
const DataHelloLen = 16

// PutDataHello builds a data connection's hello (DataHelloLen bytes).
func PutDataHello(cookie uint64, stream int, dir byte) []byte {
	b := make([]byte, DataHelloLen)
	binary.BigEndian.PutUint64(b, cookie)
	binary.BigEndian.PutUint32(b[8:], uint32(stream))
	b[12] = dir
	return b
}

// ParseDataHello reads a data connection's hello; anything but its exact
// form is ErrProtocol.
func ParseDataHello(b []byte) (cookie uint64, stream int, dir byte, err error) {
	if len(b) != DataHelloLen || (b[12] != 'f' && b[12] != 'r') || b[13]|b[14]|b[15] != 0 {
		return 0, 0, 0, fmt.Errorf("%w: bad data connection hello", ErrProtocol)
	}
	return binary.BigEndian.Uint64(b), int(binary.BigEndian.Uint32(b[8:])), b[12], nil
}

// CookieString writes a test's cookie as the control protocol carries
// it: 16 hex digits.
func CookieString(c uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], c)
	return hex.EncodeToString(b[:])
}

// ParseCookie reads what CookieString writes; anything else is
// ErrProtocol.
func ParseCookie(s string) (uint64, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 8 {
		return 0, fmt.Errorf("%w: cookie %q", ErrProtocol, s)
	}
	return binary.BigEndian.Uint64(b), nil
}
