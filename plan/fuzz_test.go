package plan

import (
	"errors"
	"os"
	"path/filepath"
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
