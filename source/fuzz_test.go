package source

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzIPLink parses `ip -d link show` text: no panic, and the links read
// render to text that reads back the same.
func FuzzIPLink(f *testing.F) {
	for _, g := range []string{"testdata/ip-link.txt", "../testdata/captures/*/ip/link.txt"} {
		files, _ := filepath.Glob(g)
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("7: veth0@if6: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1400 qdisc noqueue state UP\n    link/ether 1a:2b:3c:4d:5e:6f brd ff:ff:ff:ff:ff:ff link-netns lrt-1 promiscuity 0 minmtu 68 maxmtu 65535\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		links, err := ParseIPLink(bytes.NewReader(text))
		if err != nil {
			if len(err.Error()) > 512 {
				t.Errorf("a message of %d bytes", len(err.Error()))
			}
			return
		}
		var buf bytes.Buffer
		if err := RenderIPLink(&buf, links); err != nil {
			t.Fatal(err)
		}
		back, err := ParseIPLink(bytes.NewReader(buf.Bytes()))
		if err != nil || !reflect.DeepEqual(back, links) {
			t.Errorf("%+v renders as\n%s\nwhich reads back as %+v, %v", links, buf.Bytes(), back, err)
		}
	})
}

// rawTar is a tar stream (not gzipped) of entries, for seeds.
func rawTar(entries []entry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		switch {
		case e.dir:
			h.Typeflag, h.Size = tar.TypeDir, 0
		case e.hard:
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, e.link, 0
		case e.link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		}
		if tw.WriteHeader(h) != nil {
			return nil
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	return buf.Bytes()
}

// FuzzExtract unpacks arbitrary tar streams: nothing is ever written
// outside the destination, and an archive accepted holds no link that
// resolves out of it and no file over the cap.
func FuzzExtract(f *testing.F) {
	for _, es := range [][]entry{
		goodEntries,
		{{name: "proc/", dir: true}, {name: "up", link: "."}, {name: "c/d", link: "../up/.."}},
		{{name: "l", link: "."}, {name: "l/proc/stat", body: "x"}},
		{{name: "proc/", dir: true}, {name: "up", link: "."}, {name: "c/f", link: "../up/../etc/passwd"}, {name: "proc/stat", link: "c/f", hard: true}},
		{{name: "a", link: "/etc/passwd"}},
		{{name: "../x", body: "x"}},
		{{name: "proc/stat", body: "0"}, {name: "proc/x", link: "proc/stat", hard: true}},
	} {
		if b := rawTar(es); b != nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dst := filepath.Join(parent, "dst")
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		err := extract(context.Background(), tar.NewReader(bytes.NewReader(data)), dst)
		if ents, _ := os.ReadDir(parent); len(ents) != 1 {
			t.Fatalf("wrote outside the destination: %v", ents)
		}
		if err != nil {
			return
		}
		real, _ := filepath.EvalSymlinks(dst)
		filepath.Walk(dst, func(p string, st os.FileInfo, err error) error {
			if err != nil {
				return nil
			}
			if st.Mode().IsRegular() && st.Size() > maxEntryBytes {
				t.Errorf("%s: %d bytes", p, st.Size())
			}
			if st.Mode()&os.ModeSymlink != 0 {
				if r, err := filepath.EvalSymlinks(p); err == nil && r != real && !strings.HasPrefix(r, real+"/") {
					t.Errorf("%s resolves to %s, outside", p, r)
				}
			}
			return nil
		})
	})
}
