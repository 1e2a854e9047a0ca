package sysfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzThrottled parses get_throttled text: no panic, and a value read
// prints back to itself.
func FuzzThrottled(f *testing.F) {
	for _, s := range []string{"50005", "0x0", "throttled=0x50000", "0X1", "", "zz", "fffffffff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseThrottled(s)
		if err != nil {
			return
		}
		if back, err := ParseThrottled(fmt.Sprintf("%x", v)); err != nil || back != v {
			t.Errorf("ParseThrottled(%q) = %#x, reads back as %#x, %v", s, v, back, err)
		}
	})
}

// FuzzResolve follows a link of any target a capture may hold: the path
// it resolves to stays below the root, and reading an interface through it
// never panics.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"../../devices/pci0000:00/0000:00:00.0/0000:01:00.0/net/eth0", "/sys/devices/virtual/net/eth0",
		"/etc", "../../../../../../../etc", "eth0", ".", "..", "a/../../b", "../net/eth0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if target == "" || strings.ContainsRune(target, 0) || len(target) > 1024 {
			return
		}
		root := t.TempDir()
		dev := filepath.Join(root, "devices/pci0000:00/0000:00:00.0/0000:01:00.0/net/eth0")
		os.MkdirAll(dev, 0o755)
		os.WriteFile(filepath.Join(dev, "mtu"), []byte("1500\n"), 0o644)
		os.MkdirAll(filepath.Join(root, "class/net"), 0o755)
		if err := os.Symlink(target, filepath.Join(root, "class/net/eth0")); err != nil {
			return
		}
		fs := NewFS(root)
		p, err := fs.resolve("class/net/eth0/mtu")
		if err == nil && (strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../")) {
			t.Errorf("link to %q resolves to %q, not below the root", target, p)
		}
		fs.NetDevice("eth0")
	})
}
