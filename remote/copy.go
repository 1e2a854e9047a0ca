package remote

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
)

// The architectures linerate is released for (`make release`), as the
// suffix of dist/linerate-linux-ARCH.
const (
	AMD64 = "amd64"
	ARM64 = "arm64"
	ARMv7 = "armv7"
)

// Arch maps what `uname -m` prints to the release architecture that runs
// there. A 32-bit ARM user space on a 64-bit core prints armv8l and runs
// armv7 binaries.
func Arch(machine string) (string, error) {
	switch strings.TrimSpace(machine) {
	case "x86_64", "amd64":
		return AMD64, nil
	case "aarch64", "arm64":
		return ARM64, nil
	case "armv7l", "armv7", "armv8l":
		return ARMv7, nil
	}
	return "", fmt.Errorf("%q (uname -m): linerate is released for amd64 (x86_64), arm64 (aarch64) and armv7 (armv7l)", machine)
}

// selfArch is the release architecture of this build, "" when it is none
// of them (an ARMv6 build, another GOARCH).
func selfArch() string {
	switch runtime.GOARCH {
	case "amd64", "arm64":
		return runtime.GOARCH
	case "arm":
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "GOARM" && strings.HasPrefix(s.Value, "7") {
					return ARMv7
				}
			}
		}
	}
	return ""
}

// errDynamic is an executable that needs a dynamic loader and the host's
// libraries.
var errDynamic = errors.New("not a static binary (it has a dynamic loader)")

// The ELF header's fields elfArch reads (the System V ABI's "ELF Header"
// and "Program Header" tables): the class, the byte order, the machine,
// and where the program headers are.
const (
	elfClass32, elfClass64 = 1, 2
	elfBigEndian           = 2
	elfPTInterp            = 3 // a program header naming the dynamic loader
	elfX86_64              = 62
	elfAArch64             = 183
	elfARM                 = 40
)

// elfArch reads which release architecture an executable is built for and
// refuses one that is not static (it would need the host's libraries). It
// reads the header itself: debug/elf would link its DWARF tables into
// every build, the small one for routers included.
func elfArch(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: not a Linux executable: %w", path, err)
	}
	defer f.Close()
	var h [64]byte // a 64-bit header's size; a 32-bit one has 52 bytes
	got, _ := io.ReadFull(f, h[:])
	if got < 52 || string(h[:4]) != "\x7fELF" || h[4] == elfClass64 && got < 64 {
		return "", fmt.Errorf("%s: not a Linux executable (no ELF header)", path)
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if h[5] == elfBigEndian {
		bo = binary.BigEndian
	}
	class, machine := h[4], bo.Uint16(h[18:])
	var off int64
	var size, n int
	switch class {
	case elfClass64:
		off, size, n = int64(bo.Uint64(h[32:])), int(bo.Uint16(h[54:])), int(bo.Uint16(h[56:]))
	case elfClass32:
		off, size, n = int64(bo.Uint32(h[28:])), int(bo.Uint16(h[42:])), int(bo.Uint16(h[44:]))
	default:
		return "", fmt.Errorf("%s: not a Linux executable (ELF class %d)", path, class)
	}
	if size < 4 && n > 0 {
		return "", fmt.Errorf("%s: not a Linux executable (program headers of %d bytes)", path, size)
	}
	for i := range n {
		var t [4]byte
		if _, err := f.ReadAt(t[:], off+int64(i*size)); err != nil {
			return "", fmt.Errorf("%s: not a Linux executable (program header %d: %w)", path, i, err)
		}
		if bo.Uint32(t[:]) == elfPTInterp {
			return "", fmt.Errorf("%s: %w: build it with CGO_ENABLED=0, as make release does", path, errDynamic)
		}
	}
	switch {
	case machine == elfX86_64 && class == elfClass64:
		return AMD64, nil
	case machine == elfAArch64 && class == elfClass64:
		return ARM64, nil
	case machine == elfARM && class == elfClass32:
		return ARMv7, nil
	}
	return "", fmt.Errorf("%s: built for ELF machine %d (%d-bit), not one of amd64, arm64, armv7", path, machine, 32*int(class))
}

// binaryFor chooses the file to copy to a host of arch; its errors are
// what is wrong with the file or why there is none.
func (o *Options) binaryFor(arch string) (string, error) {
	if o.Binary != "" {
		got, err := elfArch(o.Binary)
		if err != nil {
			return "", err
		}
		if got != arch {
			return "", fmt.Errorf("%s is built for %s, the host is %s", o.Binary, got, arch)
		}
		return o.Binary, nil
	}
	self, mine := o.Self, cmp.Or(o.SelfArch, selfArch())
	if self == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find this program: %w", err)
		}
		self = exe
	}
	if mine == arch {
		_, err := elfArch(self)
		if err == nil {
			return self, nil
		}
		if !errors.Is(err, errDynamic) {
			return "", err
		}
		mine += ", dynamically linked (built without CGO_ENABLED=0)"
	}
	name := "linerate-linux-" + arch
	dir := filepath.Dir(self)
	tried := []string{filepath.Join(dir, name), filepath.Join(dir, "dist", name), filepath.Join(dir, "..", "dist", name)}
	for _, p := range tried {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		got, err := elfArch(p)
		if err != nil {
			return "", err
		}
		if got != arch {
			return "", fmt.Errorf("%s is built for %s, the host is %s", p, got, arch)
		}
		return p, nil
	}
	return "", fmt.Errorf("the host is %s, this linerate is %s, and there is no %s (make release builds it into dist/; or give the binary to copy)",
		arch, cmp.Or(mine, "another"), strings.Join(tried, " or "))
}

// tempDirRE is what mktemp -d may answer: a plain absolute path, safe to
// put in the shell command that runs the copy.
var tempDirRE = regexp.MustCompile(`^/[A-Za-z0-9/._-]+$`)

// uploadScript makes a private temporary directory on the host, writes
// standard input to linerate in it and prints the directory; on any
// failure it removes what it made.
const uploadScript = `sh -c 'd=$(mktemp -d "${TMPDIR:-/tmp}/linerate.XXXXXX") || exit 1; ` +
	`if cat > "$d/linerate" && chmod 700 "$d/linerate"; then echo "$d"; else rm -rf "$d"; exit 1; fi'`

// copyTo asks h its architecture, copies the matching binary to a new
// temporary directory there and returns the directory.
func (o *Options) copyTo(ctx context.Context, h Host) (string, error) {
	out, err := o.run(ctx, h, nil, "uname -m")
	if err != nil {
		return "", err
	}
	arch, err := Arch(out)
	if err != nil {
		return "", &Error{Host: h.String(), Kind: ErrArch, ExitCode: -1, Err: err}
	}
	bin, err := o.binaryFor(arch)
	if err != nil {
		return "", &Error{Host: h.String(), Kind: ErrArch, ExitCode: -1, Err: err}
	}
	f, err := os.Open(bin)
	if err != nil {
		return "", &Error{Host: h.String(), Kind: ErrSSH, ExitCode: -1, Err: err}
	}
	defer f.Close()
	out, err = o.run(ctx, h, f, uploadScript)
	if err != nil {
		return "", err
	}
	dir := strings.TrimSpace(out)
	if !tempDirRE.MatchString(dir) {
		return "", &Error{Host: h.String(), Kind: ErrSSH, ExitCode: -1, Err: fmt.Errorf("copy: mktemp answered %q", dir)}
	}
	return dir, nil
}
