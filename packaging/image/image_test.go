package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// goBuild builds pkg (a directory or a package path) as a static
// executable for arch into dir.
func goBuild(t testing.TB, dir, pkg, arch string, ldflags ...string) string {
	t.Helper()
	out := filepath.Join(dir, "linerate-linux-"+arch)
	args := []string{"build", "-trimpath", "-o", out}
	if len(ldflags) > 0 {
		args = append(args, "-ldflags", strings.Join(ldflags, " "))
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s for %s: %v\n%s", pkg, arch, err, b)
	}
	return out
}

// archive is an OCI image layout in a tar archive, read back.
type archive struct {
	files map[string][]byte
}

func readArchive(t *testing.T, p string) archive {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := archive{files: map[string][]byte{}}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return a
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		a.files[h.Name] = b
	}
}

func (a archive) blob(t *testing.T, h v1.Hash) []byte {
	t.Helper()
	b, ok := a.files["blobs/sha256/"+h.Hex]
	if !ok {
		t.Fatalf("no blob %s", h)
	}
	return b
}

// The image of each architecture is an OCI layout in a tar: its index
// names it, its manifest's blobs are all there and match their digests,
// its config says the architecture, the entrypoint and the labels, and
// its one layer holds the binary as given and nothing but its
// directories. Written twice, it is the same bytes. A binary that needs a
// dynamic loader is refused: the base is empty.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, arch := range []string{"amd64", "arm64"} {
		bin := goBuild(t, dir, src, arch)
		s := Spec{Binary: bin, Arch: arch, Version: "v1.2.3", Source: "https://example.org/linerate", Revision: "abc123", Created: created}
		p := FileName(dir, s.Version, arch)
		if err := Write(s, p); err != nil {
			t.Fatal(err)
		}
		first, _ := os.ReadFile(p)
		if err := Write(s, p); err != nil {
			t.Fatal(err)
		}
		if again, _ := os.ReadFile(p); !bytes.Equal(first, again) {
			t.Errorf("%s: two builds of one binary differ", arch)
		}
		a := readArchive(t, p)
		if string(a.files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
			t.Errorf("oci-layout %q", a.files["oci-layout"])
		}
		var index v1.IndexManifest
		if err := json.Unmarshal(a.files["index.json"], &index); err != nil {
			t.Fatal(err)
		}
		if len(index.Manifests) != 1 || index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "localhost/linerate:v1.2.3" ||
			index.Manifests[0].Platform.Architecture != arch {
			t.Fatalf("%s: index %s", arch, a.files["index.json"])
		}
		mb := a.blob(t, index.Manifests[0].Digest)
		if h, _, _ := v1.SHA256(bytes.NewReader(mb)); h != index.Manifests[0].Digest {
			t.Errorf("%s: the manifest's digest is %s, the index says %s", arch, h, index.Manifests[0].Digest)
		}
		var m v1.Manifest
		if err := json.Unmarshal(mb, &m); err != nil {
			t.Fatal(err)
		}
		if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || m.Config.MediaType != "application/vnd.oci.image.config.v1+json" || len(m.Layers) != 1 {
			t.Fatalf("%s: manifest %s", arch, mb)
		}
		var cf v1.ConfigFile
		if err := json.Unmarshal(a.blob(t, m.Config.Digest), &cf); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"org.opencontainers.image.version": "v1.2.3", "org.opencontainers.image.source": "https://example.org/linerate",
			"org.opencontainers.image.licenses": Licenses, "org.opencontainers.image.revision": "abc123",
			"org.opencontainers.image.created": "2026-05-01T12:00:00Z", "org.opencontainers.image.title": "linerate"}
		for k, v := range want {
			if cf.Config.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", arch, k, cf.Config.Labels[k], v)
			}
		}
		if cf.OS != "linux" || cf.Architecture != arch || strings.Join(cf.Config.Entrypoint, " ") != BinaryPath ||
			strings.Join(cf.Config.Cmd, " ") != "serve" || !cf.Created.Equal(created) || cf.Config.User != "" {
			t.Errorf("%s: config %+v", arch, cf)
		}
		layer := a.blob(t, m.Layers[0].Digest)
		if h, _, _ := v1.SHA256(bytes.NewReader(layer)); h != m.Layers[0].Digest {
			t.Errorf("%s: the layer's digest is %s, the manifest says %s", arch, h, m.Layers[0].Digest)
		}
		files := layerFiles(t, layer)
		want2, _ := os.ReadFile(bin)
		if got := files["usr/bin/linerate"]; !bytes.Equal(got, want2) {
			t.Errorf("%s: usr/bin/linerate is %d bytes, not the binary's %d", arch, len(got), len(want2))
		}
		if len(files) != 4 {
			t.Errorf("%s: the layer holds %d entries, want usr/, usr/bin/, tmp/ and the binary", arch, len(files))
		}
	}
	if err := Write(Spec{Binary: "/bin/true", Arch: "amd64", Version: "v1"}, filepath.Join(dir, "x.tar")); err == nil ||
		!strings.Contains(err.Error(), "not a static ELF executable") {
		t.Errorf("a dynamic binary: %v", err)
	}
}

// layerFiles is every entry of a gzipped layer, by name, with what a
// regular file holds; it checks each is root's and the binary 0755.
func layerFiles(t *testing.T, layer []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	zr, err := gzipReader(layer)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: owned by %d:%d", h.Name, h.Uid, h.Gid)
		}
		if h.Name == "usr/bin/linerate" && h.Mode != 0o755 {
			t.Errorf("%s: mode %o", h.Name, h.Mode)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = b
	}
}

func gzipReader(b []byte) (io.Reader, error) { return gzip.NewReader(bytes.NewReader(b)) }

func TestPublicURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:ghp_secret@example.org/team/linerate.git": "https://example.org/team/linerate.git",
		"https://example.org/team/linerate":                     "https://example.org/team/linerate",
		"git@example.org:team/linerate.git":                     "",
		"":                                                      "",
	} {
		if got := publicURL(in); got != want {
			t.Errorf("publicURL(%q) = %q, want %q", in, got, want)
		}
	}
}
