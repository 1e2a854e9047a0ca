// Command image writes linerate's OCI images (make image): for each
// architecture, dist/linerate_VERSION_ARCH.oci.tar, an OCI image layout in
// a tar archive (what `podman load`, `skopeo copy oci-archive:` and
// containerd's `ctr image import` take) holding one image: the static
// binary `make release` builds as /usr/bin/linerate on an empty base, the
// entrypoint linerate, serve by default, and the usual labels.
//
// It is a Go program and not a Containerfile for buildah or docker: no
// daemon, no container storage, no root, no emulation for the other
// architecture (nothing runs inside the image to build it), and the same
// binary and version give the same image digest wherever it is built
// (every time in it is the commit's). go-containerregistry builds the
// image (layer digests, config, manifest); this program lays them out as
// the OCI image layout's files.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Spec is one image to write.
type Spec struct {
	// Binary is the static linerate for Arch (GOARCH: amd64, arm64).
	Binary, Arch string
	// Version is linerate's version (make's VERSION); Source the
	// repository it was built from; Revision its commit, when known.
	Version, Source, Revision string
	// Created is when the commit was made: every time in the image.
	Created time.Time
}

// Name is the image's name, which `podman load` tags it with.
func (s Spec) Name() string { return "localhost/linerate:" + s.Version }

// Licenses is the licence label: the repository states none yet, and
// NOASSERTION is SPDX's word for that.
const Licenses = "NOASSERTION"

// BinaryPath is where the binary is in the image.
const BinaryPath = "/usr/bin/linerate"

// Build makes the image of s.
func Build(s Spec) (v1.Image, error) {
	bin, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, err
	}
	if !isStatic(bin) {
		return nil, fmt.Errorf("%s: not a static ELF executable (build it with CGO_ENABLED=0, as make release does)", s.Binary)
	}
	fs, err := rootfs(bin, s.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(fs)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: s.Created}, CreatedBy: "make image: " + BinaryPath + " from linerate-linux-" + s.Arch,
		Comment: "linerate " + s.Version}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", s.Arch, v1.Time{Time: s.Created}
	cf.Config = v1.Config{
		Entrypoint: []string{BinaryPath},
		Cmd:        []string{"serve"},
		// The agent's control port, and where --web serves /metrics.
		ExposedPorts: map[string]struct{}{"7557/tcp": {}, "9464/tcp": {}},
		Env:          []string{"PATH=/usr/bin"},
		StopSignal:   "SIGTERM",
		Labels:       s.Labels(),
	}
	return mutate.ConfigFile(img, cf)
}

// Labels are the image's OCI annotations as labels.
func (s Spec) Labels() map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "linerate",
		"org.opencontainers.image.description": "linerate: inspect, benchmark, diagnose and tune Linux network boxes; the agent (linerate serve) by default",
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.licenses":    Licenses,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
	}
	if s.Source != "" {
		l["org.opencontainers.image.source"] = s.Source
	}
	if s.Revision != "" {
		l["org.opencontainers.image.revision"] = s.Revision
	}
	return l
}

// isStatic says whether b is an ELF executable with no program
// interpreter (PT_INTERP): one that runs on an empty base.
func isStatic(b []byte) bool {
	if len(b) < 64 || string(b[:4]) != "\x7fELF" || b[4] != 2 || b[5] != 1 {
		return false // 64-bit little-endian only: amd64 and arm64
	}
	le := func(o, n int) uint64 {
		var v uint64
		for i := n - 1; i >= 0; i-- {
			v = v<<8 | uint64(b[o+i])
		}
		return v
	}
	phoff, phentsize, phnum := le(32, 8), le(54, 2), le(56, 2)
	for i := range phnum {
		o := phoff + i*phentsize
		if o+4 > uint64(len(b)) {
			return false
		}
		if le(int(o), 4) == 3 { // PT_INTERP
			return false
		}
	}
	return true
}

// rootfs is the image's one layer: /usr/bin/linerate and the directories
// above it, owned by root, every time the commit's.
func rootfs(bin []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"usr/", "usr/bin/", "tmp/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777 // for programs that want a temporary directory
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode, ModTime: created, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: BinaryPath[1:], Mode: 0o755, Size: int64(len(bin)),
		ModTime: created, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteArchive writes img as an OCI image layout in a tar archive: the
// oci-layout file, index.json naming the image (ref.name), and a blob
// per manifest, config and layer under blobs/sha256/.
func WriteArchive(w io.Writer, img v1.Image, name string, created time.Time) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	index, err := json.Marshal(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex,
		Manifests: []v1.Descriptor{{MediaType: mt, Size: int64(len(manifest)), Digest: digest,
			Platform:    &v1.Platform{OS: cf.OS, Architecture: cf.Architecture},
			Annotations: map[string]string{"org.opencontainers.image.ref.name": name}}}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	add := func(name string, size int64, r io.Reader) error {
		typ, mode := byte(tar.TypeReg), int64(0o644)
		if r == nil {
			typ, mode = tar.TypeDir, 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: size, ModTime: created, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if r == nil {
			return nil
		}
		n, err := io.Copy(tw, r)
		if err == nil && n != size {
			err = fmt.Errorf("%s: %d bytes, want %d", name, n, size)
		}
		return err
	}
	addBytes := func(name string, b []byte) error { return add(name, int64(len(b)), bytes.NewReader(b)) }
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	if err := errors.Join(addBytes("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)), addBytes("index.json", index),
		add("blobs/", 0, nil), add("blobs/sha256/", 0, nil), addBytes(blob(digest), manifest)); err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	cd, err := img.ConfigName()
	if err != nil {
		return err
	}
	if err := addBytes(blob(cd), config); err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		size, err := l.Size()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		err = add(blob(d), size, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// publicURL is a repository's URL without what may be secret in it (a
// user and password or token, as in a clone's https://user:token@host
// remote); "" when it is not a URL with a host.
func publicURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return ""
	}
	u.User = nil
	return u.String()
}

// FileName is where make image writes the image of an architecture.
func FileName(dir, version, arch string) string {
	return filepath.Join(dir, fmt.Sprintf("linerate_%s_%s.oci.tar", version, arch))
}

// Write builds the image of s and writes it to path, through a temporary
// file renamed over it once whole.
func Write(s Spec, path string) error {
	img, err := Build(s)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".image-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := WriteArchive(f, img, s.Name(), s.Created); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func main() {
	var (
		s       Spec
		out     string
		created int64
		archs   = []string{"amd64", "arm64"}
	)
	flag.StringVar(&s.Version, "version", "", "linerate's version (make's VERSION)")
	flag.StringVar(&s.Source, "source", "", "the repository it was built from (org.opencontainers.image.source)")
	flag.StringVar(&s.Revision, "revision", "", "the commit it was built from")
	flag.Int64Var(&created, "created", 0, "the commit's time, in seconds since 1970 (git log -1 --format=%ct): every time in the image")
	flag.StringVar(&out, "out", "dist", "where the binaries are (linerate-linux-ARCH) and the images go")
	flag.Parse()
	if s.Version == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./packaging/image -version VERSION [-source URL] [-revision COMMIT] [-created UNIX] [-out DIR]")
		os.Exit(2)
	}
	s.Created = time.Unix(created, 0).UTC()
	if !tagRE.MatchString(s.Version) {
		fmt.Fprintf(os.Stderr, "-version %q: an image tag is 1 to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'\n", s.Version)
		os.Exit(2)
	}
	s.Source = publicURL(s.Source)
	for _, arch := range archs {
		s.Arch, s.Binary = arch, filepath.Join(out, "linerate-linux-"+arch)
		p := FileName(out, s.Version, arch)
		if err := Write(s, p); err != nil {
			fmt.Fprintf(os.Stderr, "image %s: %v\n", arch, err)
			os.Exit(1)
		}
		st, _ := os.Stat(p)
		fmt.Printf("%s  %s  %s bytes\n", p, s.Name(), strconv.FormatInt(st.Size(), 10))
	}
}
