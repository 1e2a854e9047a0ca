package vm

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"linerate/internal/usage"
)

// Places on the host this package reads the guest's kernel from, as
// Debian's linux-image packages install it.
const (
	bootDir    = "/boot"
	modulesDir = "/lib/modules"
)

// Kernel is a kernel on the host that a guest boots: its image and the
// tree of its modules.
type Kernel struct {
	Version string `json:"version"` // "6.1.0-56-amd64"
	Image   string `json:"image"`   // /boot/vmlinuz-VERSION
	Modules string `json:"modules"` // /lib/modules/VERSION
}

// kernelPackage is the Debian package that installs a kernel for this
// architecture.
func kernelPackage() string { return "linux-image-" + debArch() }

// debArch is Debian's name of this machine's architecture.
func debArch() string {
	switch runtime.GOARCH {
	case "arm":
		return "armmp"
	}
	return runtime.GOARCH
}

// FindKernel picks the newest kernel under /boot whose modules are
// installed. Without one, the error names the Debian package to install.
func FindKernel() (Kernel, error) { return findKernel(bootDir, modulesDir) }

func findKernel(boot, mods string) (Kernel, error) {
	ents, err := os.ReadDir(boot)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Kernel{}, fmt.Errorf("list %s: %w", boot, err)
	}
	var found []Kernel
	for _, e := range ents {
		v, ok := strings.CutPrefix(e.Name(), "vmlinuz-")
		if !ok {
			continue
		}
		k := Kernel{Version: v, Image: filepath.Join(boot, e.Name()), Modules: filepath.Join(mods, v)}
		if _, err := os.Stat(filepath.Join(k.Modules, "modules.dep")); err == nil {
			found = append(found, k)
		}
	}
	if len(found) == 0 {
		return Kernel{}, usage.Errorf("no kernel with its modules in %s and %s for a guest: install Debian's %s (make deps does)", boot, mods, kernelPackage())
	}
	slices.SortFunc(found, func(a, b Kernel) int { return compareVersions(a.Version, b.Version) })
	return found[len(found)-1], nil
}

// compareVersions orders kernel versions by their numbers, field by field
// ("6.1.0-56" after "6.1.0-9").
func compareVersions(a, b string) int {
	fa, fb := versionFields(a), versionFields(b)
	for i := 0; i < len(fa) && i < len(fb); i++ {
		if fa[i] != fb[i] {
			if fa[i] < fb[i] {
				return -1
			}
			return 1
		}
	}
	return len(fa) - len(fb)
}

func versionFields(v string) []int {
	var out []int
	n, in := 0, false
	for _, r := range v {
		if r >= '0' && r <= '9' {
			n, in = n*10+int(r-'0'), true
			continue
		}
		if in {
			out = append(out, n)
		}
		n, in = 0, false
	}
	if in {
		out = append(out, n)
	}
	return out
}

// moduleSet is what a kernel's modules.dep says: each module's file
// (relative to the modules' tree) and the files it needs first.
type moduleSet struct {
	file    map[string]string   // name → kernel/…/name.ko
	deps    map[string][]string // file → files it depends on
	builtin map[string]bool     // names built into the kernel
}

// modName is a module's name as modprobe takes it: its file's base name
// without .ko, with '-' read as '_'.
func modName(file string) string {
	b := path.Base(file)
	for _, ext := range []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"} {
		if s, ok := strings.CutSuffix(b, ext); ok {
			b = s
			break
		}
	}
	return strings.ReplaceAll(b, "-", "_")
}

// readModules reads modules.dep and modules.builtin of a kernel's tree.
func readModules(dir string) (*moduleSet, error) {
	m := &moduleSet{file: map[string]string{}, deps: map[string][]string{}, builtin: map[string]bool{}}
	f, err := os.Open(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		file, deps, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		m.file[modName(file)] = file
		m.deps[file] = strings.Fields(deps)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		for _, l := range strings.Fields(string(b)) {
			m.builtin[modName(l)] = true
		}
	}
	return m, nil
}

// loadOrder lists the files of the named modules and of everything they
// need, each after what it needs (modprobe inserts a module's
// dependencies from the end of its modules.dep line). Built-in modules
// are skipped; a module the kernel has neither way is an error.
func (m *moduleSet) loadOrder(names []string) ([]string, error) {
	var order []string
	seen := map[string]bool{}
	var visit func(file string)
	visit = func(file string) {
		if seen[file] {
			return
		}
		seen[file] = true
		deps := m.deps[file]
		for i := len(deps) - 1; i >= 0; i-- {
			visit(deps[i])
		}
		order = append(order, file)
	}
	for _, n := range names {
		n = strings.ReplaceAll(n, "-", "_")
		if file, ok := m.file[n]; ok {
			visit(file)
			continue
		}
		if !m.builtin[n] {
			return nil, fmt.Errorf("the kernel has no module %s (neither in modules.dep nor built in)", n)
		}
	}
	return order, nil
}
