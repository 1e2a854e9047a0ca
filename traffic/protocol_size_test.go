package traffic

import (
	"bytes"
	"linerate/wire"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// hostile is a message of type typ whose field holds n empty objects: 3
// bytes each on the wire, a struct or a map each once decoded.
func hostile(typ, field string, n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"` + typ + `","` + field + `":[`)
	b.WriteString(strings.Repeat("{},", n-1))
	b.WriteString("{}]}\n")
	return b.Bytes()
}

// allocated is how many bytes fn allocates.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// A 4 MB message of empty objects, of any type and in any field, is
// refused within a small memory bound (a few times the line, which is
// read whole when a long test allows it), on either end, even an hour into a
// test of 65535 flows. Before each type had its own size, such a bye took
// serve to 725 MB and such an accept took bench to 1.5 GB.
func TestHostileMessageRefused(t *testing.T) {
	const n = 4 << 20 / 3
	types := make([]string, 0, len(wire.Sizes))
	for typ := range wire.Sizes {
		types = append(types, typ)
	}
	slices.Sort(types)
	for _, peer := range []wire.Role{wire.RoleClient, wire.RoleServer} {
		for _, typ := range types {
			fields := []string{"samples"}
			if f := wire.Sizes[typ].Fields; len(f) > 0 {
				fields = append(fields, f[0])
			}
			for _, field := range fields {
				in := hostile(typ, field, n)
				c := newCtl(fuzzConn{bytes.NewReader(in)})
				c.peer, c.asked, c.flows = peer, time.Now().Add(-time.Hour), 65535
				var err error
				got := allocated(func() { _, err = c.read(time.Second) })
				if err == nil {
					t.Errorf("from a %s: a %d-byte %q with %d objects in %q was taken", peer, len(in), typ, n, field)
				}
				if limit := uint64(6 * len(in)); got > limit {
					t.Errorf("from a %s: a %d-byte %q with %d objects in %q allocated %d MB, at most %d MB", peer, len(in), typ, n, field, got>>20, limit>>20)
				}
			}
		}
	}
}

// What a server reads from a client, whatever the test, is small: at most
// its type's bound before any test, and a stop grows only with the flows.
func TestServerReadsSmallMessages(t *testing.T) {
	in := hostile(wire.MsgBye, "samples", 4<<20/3)
	c := newCtl(fuzzConn{bytes.NewReader(in)})
	c.peer = wire.RoleClient
	var err error
	got := allocated(func() { _, err = c.read(time.Second) })
	if err == nil || got > 1<<20 {
		t.Fatalf("a 4 MB bye: %v, %d bytes allocated; want refused within 1 MB", err, got)
	}
}
