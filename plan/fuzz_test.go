package plan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse: whatever the text, Parse returns a plan or one *Error of one
// line, and never panics.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../examples/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(hosts + "flows:\n  - &f {from: a, to: b, proto: udp}\n  - *f\n"))
	f.Add([]byte("hosts: {a: 1.2.3.4}\nflows: [{from: a, to: a}]\nceiling: {pcie: gen2x1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pl, err := Parse("f.yaml", data)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("%v is a %T", err, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		if len(pl.Flows) == 0 || len(pl.Hosts) == 0 {
			t.Fatalf("a plan without flows or hosts: %+v", pl)
		}
		if _, err := pl.Expect(nil); err != nil {
			t.Fatalf("expect: %v", err)
		}
	})
}

// FuzzMatrixCounts fuzzes a matrix by its counts rather than its bytes:
// flows, combinations, sizes, MSS and rates of any number. Whatever they
// multiply to, Parse refuses more than maxCells cells or builds at most
// that many, and allocates within a bound that does not grow with the
// product of the axes.
func FuzzMatrixCounts(f *testing.F) {
	f.Add(uint8(3), uint8(1), uint16(300), uint16(300), uint16(300), false)
	f.Add(uint8(14), uint8(6), uint16(0), uint16(0), uint16(0), true)
	f.Add(uint8(12), uint8(12), uint16(2), uint16(0), uint16(1), false)
	f.Add(uint8(2), uint8(2), uint16(64), uint16(64), uint16(1), true)
	f.Fuzz(func(t *testing.T, flows, combos uint8, sizes, msss, rates uint16, tune bool) {
		nf := 1 + int(flows)%40
		var b strings.Builder
		b.WriteString("hosts: {box: 10.0.0.1, a: 10.0.0.2}\nflows:\n")
		for i := range nf {
			proto := "udp"
			if i%2 == 1 {
				proto = "tcp"
			}
			fmt.Fprintf(&b, "  - {from: a, to: box, proto: %s, name: f%d}\n", proto, i)
		}
		b.WriteString("matrix:\n")
		if combos > 0 {
			ks := make([]string, 0, int(combos)%nf+1)
			for k := 1; k <= int(combos)%nf+1; k++ {
				ks = append(ks, strconv.Itoa(k))
			}
			fmt.Fprintf(&b, "  combinations: [%s]\n", strings.Join(ks, ", "))
		}
		axis := func(key string, n uint16, from int, unit string) {
			if n = n % 2000; n == 0 {
				return
			}
			vs := make([]string, n)
			for i := range vs {
				vs[i] = strconv.Itoa(from+i) + unit
			}
			fmt.Fprintf(&b, "  %s: [%s]\n", key, strings.Join(vs, ", "))
		}
		axis("sizes", sizes, 64, "")
		axis("mss", msss, 88, "")
		axis("rates", rates, 1, "Mbps")
		if tune {
			b.WriteString("  tune: /nonexistent/tuned.json\n")
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		pl, err := Parse("m.yaml", []byte(b.String()))
		runtime.ReadMemStats(&after)
		if err == nil && pl.Matrix != nil && len(pl.Matrix.Cells()) > maxCells {
			t.Fatalf("%d cells built", len(pl.Matrix.Cells()))
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 512<<20 {
			t.Fatalf("%d MiB allocated for %d bytes of plan", got>>20, b.Len())
		}
	})
}
