package pci

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzConfig decodes arbitrary config spaces: no panic, and a capability
// it finds lies inside the bytes it was given.
func FuzzConfig(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/captures/*/pci/*/config")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := ParseConfig(b)
		if err == nil && (x.Offset < headerLen || x.Offset+expEnd > len(b)) {
			t.Errorf("capability at %#x of %d bytes", x.Offset, len(b))
		}
		ParseSpeed(string(b))
	})
}
