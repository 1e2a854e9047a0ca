// Package packaging holds the tests of what packaging/*.sh build: the
// OpenWrt packages (ipk.sh) here.
package packaging

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ipkArches are the OpenWrt architectures make release packages, and the
// binary each gets.
var ipkArches = map[string]string{
	"aarch64_cortex-a53":       "linerate-linux-arm64",
	"aarch64_cortex-a72":       "linerate-linux-arm64",
	"aarch64_cortex-a76":       "linerate-linux-arm64",
	"aarch64_generic":          "linerate-linux-arm64",
	"x86_64":                   "linerate-linux-amd64",
	"arm_cortex-a7_neon-vfpv4": "linerate-small-linux-armv7",
	"mipsel_24kc":              "linerate-small-linux-mipsle",
	"mips_24kc":                "linerate-small-linux-mips",
}

// entry is one file of a tar archive.
type entry struct {
	hdr  *tar.Header
	body []byte
}

// readTarGz reads a gzipped tar whole, in order.
func readTarGz(t *testing.T, what string, b []byte) []entry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: not gzip: %v", what, err)
	}
	var out []entry
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", what, h.Name, err)
		}
		out = append(out, entry{h, body})
	}
	return out
}

// ipk is what checkIPK read from one package.
type ipk struct {
	control map[string]string
	ctl     map[string]entry // control.tar.gz, by name
	data    map[string]entry // data.tar.gz, by name
	dataTar []byte           // data.tar.gz, uncompressed
}

// checkIPK reads path as opkg does (OpenWrt's ipkg-build layout) and
// checks what every linerate package must be: the outer gzipped tar holds
// ./debian-binary "2.0", ./data.tar.gz and ./control.tar.gz in that order;
// every entry is root's, GNU or ustar format, "./"-relative without "..";
// control names linerate, the version and arch, Installed-Size the data
// tar's bytes; conffiles lists /etc/config/linerate, mode 600 in the data
// with the binary and the init script executable and no /etc/rc.d link
// (not enabled); postinst and prerm are executable.
func checkIPK(t *testing.T, path, arch, version string) ipk {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	outer := readTarGz(t, path, raw)
	var names []string
	for _, e := range outer {
		names = append(names, e.hdr.Name)
	}
	if want := []string{"./debian-binary", "./data.tar.gz", "./control.tar.gz"}; !slices.Equal(names, want) {
		t.Fatalf("%s: members %q, want %q", path, names, want)
	}
	if string(outer[0].body) != "2.0\n" {
		t.Errorf("%s: debian-binary %q", path, outer[0].body)
	}
	var p ipk
	byName := func(what string, es []entry) map[string]entry {
		m := map[string]entry{}
		for _, e := range es {
			h := e.hdr
			if !strings.HasPrefix(h.Name, "./") || slices.Contains(strings.Split(h.Name, "/"), "..") {
				t.Errorf("%s %s: entry %q is not ./-relative", path, what, h.Name)
			}
			if h.Uid != 0 || h.Gid != 0 || (h.Format != tar.FormatGNU && h.Format != tar.FormatUSTAR) {
				t.Errorf("%s %s: %s: uid %d gid %d format %v", path, what, h.Name, h.Uid, h.Gid, h.Format)
			}
			m[strings.TrimSuffix(h.Name, "/")] = e
		}
		return m
	}
	for _, e := range outer {
		h := e.hdr
		if h.Uid != 0 || h.Gid != 0 || h.Typeflag != tar.TypeReg {
			t.Errorf("%s: outer %s: uid %d gid %d type %c", path, h.Name, h.Uid, h.Gid, h.Typeflag)
		}
	}
	p.ctl = byName("control.tar.gz", readTarGz(t, path+" control.tar.gz", outer[2].body))
	dataEntries := readTarGz(t, path+" data.tar.gz", outer[1].body)
	p.data = byName("data.tar.gz", dataEntries)
	zr, _ := gzip.NewReader(bytes.NewReader(outer[1].body))
	p.dataTar, _ = io.ReadAll(zr)

	p.control = map[string]string{}
	for _, line := range strings.Split(string(p.ctl["./control"].body), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, " ") {
			p.control[k] = v
		}
	}
	for k, want := range map[string]string{"Package": "linerate", "Version": version, "Architecture": arch,
		"Installed-Size": strconv.Itoa(len(p.dataTar)), "Section": "net"} {
		if p.control[k] != want {
			t.Errorf("%s: control %s: %q, want %q", path, k, p.control[k], want)
		}
	}
	for _, k := range []string{"Maintainer", "Description", "SourceDateEpoch"} {
		if p.control[k] == "" {
			t.Errorf("%s: control has no %s", path, k)
		}
	}
	if c := string(p.ctl["./conffiles"].body); c != "/etc/config/linerate\n" {
		t.Errorf("%s: conffiles %q", path, c)
	}
	for name, mode := range map[string]int64{"./postinst": 0o755, "./prerm": 0o755, "./control": 0o644, "./conffiles": 0o644} {
		if e, ok := p.ctl[name]; !ok || e.hdr.Mode&0o7777 != mode {
			t.Errorf("%s: control.tar.gz %s: present %v, want mode %o", path, name, ok, mode)
		}
	}
	for name, mode := range map[string]int64{"./usr/bin/linerate": 0o755, "./etc/init.d/linerate-serve": 0o755, "./etc/config/linerate": 0o600} {
		if e, ok := p.data[name]; !ok || e.hdr.Mode&0o7777 != mode || e.hdr.Typeflag != tar.TypeReg {
			t.Errorf("%s: data.tar.gz %s: present %v, want a file of mode %o", path, name, ok, mode)
		}
	}
	for name := range p.data {
		if strings.HasPrefix(name, "./etc/rc.d") {
			t.Errorf("%s: %s: the agent would start at boot before anyone set its secret", path, name)
		}
	}
	return p
}

// buildFake runs ipk.sh over stand-in binaries (shell scripts that record
// how they were called) and returns DIST.
func buildFake(t *testing.T) string {
	dist := t.TempDir()
	for _, b := range ipkArches {
		stub := fmt.Sprintf("#!/bin/sh\n# %s\n{ echo \"token=$LINERATE_TOKEN\"; for a in \"$@\"; do echo \"arg=$a\"; done; } >> /tmp/linerate.calls\n", b)
		if err := os.WriteFile(filepath.Join(dist, b), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("sh", "ipk.sh", "v1.2.3-4-gabcdef0", dist)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ipk.sh: %v\n%s", err, out)
	}
	return dist
}

// Every package ipk.sh writes has the layout opkg reads, its own
// architecture, the binary meant for it and the same scripts and config.
func TestIPKLayout(t *testing.T) {
	dist := buildFake(t)
	const version = "1.2.3+4+gabcdef0"
	got, _ := filepath.Glob(filepath.Join(dist, "*.ipk"))
	if len(got) != len(ipkArches) {
		t.Errorf("%d packages, want %d: %q", len(got), len(ipkArches), got)
	}
	for arch, bin := range ipkArches {
		p := checkIPK(t, filepath.Join(dist, "linerate_"+version+"_"+arch+".ipk"), arch, version)
		want, _ := os.ReadFile(filepath.Join(dist, bin))
		if !bytes.Equal(p.data["./usr/bin/linerate"].body, want) {
			t.Errorf("%s: /usr/bin/linerate is not %s", arch, bin)
		}
		if p.control["SourceDateEpoch"] != "1700000000" {
			t.Errorf("%s: SourceDateEpoch %q", arch, p.control["SourceDateEpoch"])
		}
	}
}

// The stand-ins for what OpenWrt's scripts call, written for the chroot
// below: /etc/rc.common (rc.common's procd path: sources the script, runs
// start_service and service_triggers for start, links /etc/rc.d for
// enable), /lib/functions.sh (config_load through uci export, config_get,
// config_list_foreach with rc's semantics), /lib/functions/procd.sh (each
// instance is logged and its command run, as procd would, with its env)
// and /sbin/uci (export prints the config file). They log to /tmp.
var standIns = map[string]string{
	"etc/rc.common": `initscript=$1
action=$2
shift 2
. /lib/functions.sh
. /lib/functions/procd.sh
name=$(basename "$initscript")
. "$initscript"
[ "$USE_PROCD" = 1 ] || { echo "not a procd script" >&2; exit 3; }
link() { echo "/etc/rc.d/$1$2$name"; }
case $action in
start) echo "start $name" >> /tmp/rc.log; start_service "$@"; service_triggers ;;
stop) echo "stop $name" >> /tmp/rc.log ;;
restart) echo "stop $name" >> /tmp/rc.log; echo "start $name" >> /tmp/rc.log; start_service; service_triggers ;;
enable) mkdir -p /etc/rc.d; ln -sf "../init.d/$name" "$(link S "$START")"; ln -sf "../init.d/$name" "$(link K "$STOP")" ;;
disable) rm -f "$(link S "$START")" "$(link K "$STOP")" ;;
enabled) [ -x "$(link S "$START")" ] ;;
*) echo "action $action" >&2; exit 3 ;;
esac
`,
	"lib/functions.sh": `config() { CONFIG_SECTION=$2; }
option() { local o=$1; shift; eval "CONFIG_${CONFIG_SECTION}_$o=\$*"; }
list() {
	local o=$1 n; shift
	eval "n=\$((\${CONFIG_${CONFIG_SECTION}_${o}_LENGTH:-0} + 1))"
	eval "CONFIG_${CONFIG_SECTION}_${o}_ITEM$n=\$*; CONFIG_${CONFIG_SECTION}_${o}_LENGTH=$n"
}
package() { :; }
config_load() { eval "$(/sbin/uci -S -n export "$1")"; }
config_get() { eval "$1=\${CONFIG_$2_$3:-\$4}"; }
config_list_foreach() {
	local s=$1 o=$2 f=$3 len c=1 val; shift 3
	config_get len "$s" "${o}_LENGTH"
	[ -n "$len" ] || return 0
	while [ $c -le "$len" ]; do config_get val "$s" "${o}_ITEM$c"; "$f" "$val" "$@"; c=$((c + 1)); done
}
`,
	"lib/functions/procd.sh": `procd_open_instance() { _cmd=; _env=; }
procd_set_param() {
	local p=$1; shift
	case $p in
	command) _cmd=; procd_append_param command "$@" ;;
	env) _env="$*" ;;
	*) echo "param $p $*" >> /tmp/procd.log ;;
	esac
}
procd_append_param() {
	local p=$1 a; shift
	[ "$p" = command ] || { echo "param $p $*" >> /tmp/procd.log; return; }
	for a in "$@"; do _cmd="$_cmd$a
"; done
}
procd_close_instance() {
	local IFS='
'
	set -f
	echo "instance $_cmd" >> /tmp/procd.log
	env $_env $_cmd
}
procd_add_reload_trigger() { echo "reload trigger $*" >> /tmp/procd.log; }
`,
	"sbin/uci": `#!/bin/sh
while [ $# -gt 0 ]; do case $1 in -S|-n|-q) shift ;; export) echo "package $2"; cat "/etc/config/$2"; exit ;; *) exit 1 ;; esac; done
`,
}

// The init script, postinst and prerm of a package, parsed by busybox
// ash and run by it in a chroot of the package's files (busybox as every
// command, OpenWrt's shell) with stand-ins for rc.common, procd and uci:
// start reads /etc/config/linerate and runs linerate serve with its
// options, the secret in the environment only; the shipped config starts
// a bare serve; a reload trigger on the linerate config; postinst leaves
// the agent alone until it is enabled and restarts it once it is; prerm
// stops it and removes its boot links.
func TestIPKScripts(t *testing.T) {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal("busybox is not installed (make deps): the scripts run under its ash")
	}
	if f, err := elf.Open(busybox); err != nil || slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
		t.Fatalf("%s is not a static busybox (busybox-static, make deps): it runs alone in a chroot", busybox)
	}
	if os.Geteuid() != 0 {
		t.Fatal("TestIPKScripts runs the scripts in a chroot: run it as root")
	}
	dist := buildFake(t)
	p := checkIPK(t, filepath.Join(dist, "linerate_1.2.3+4+gabcdef0_mipsel_24kc.ipk"), "mipsel_24kc", "1.2.3+4+gabcdef0")

	for _, name := range []string{"./etc/init.d/linerate-serve"} {
		checkAsh(t, busybox, name, p.data[name].body)
	}
	for _, name := range []string{"./postinst", "./prerm"} {
		checkAsh(t, busybox, name, p.ctl[name].body)
	}

	root := t.TempDir()
	untar := exec.Command("tar", "-xf", "-", "-C", root)
	untar.Stdin = bytes.NewReader(p.dataTar)
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("untar data: %v\n%s", err, out)
	}
	for rel, e := range p.ctl {
		if e.hdr.Typeflag == tar.TypeReg {
			write(t, filepath.Join(root, "CONTROL", rel), string(e.body), 0o755)
		}
	}
	for rel, body := range standIns {
		write(t, filepath.Join(root, rel), body, 0o755)
	}
	write(t, filepath.Join(root, "bin/busybox"), string(must(os.ReadFile(busybox))), 0o755)
	os.MkdirAll(filepath.Join(root, "tmp"), 0o1777)
	sh := func(script string) string {
		t.Helper()
		cmd := exec.Command("chroot", root, "/bin/busybox", "ash", "-c", script)
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		return string(out)
	}
	sh("/bin/busybox --install -s")
	logs := func() (calls, rc, procd string) {
		read := func(f string) string {
			b, _ := os.ReadFile(filepath.Join(root, "tmp", f))
			os.Remove(filepath.Join(root, "tmp", f))
			return string(b)
		}
		return read("linerate.calls"), read("rc.log"), read("procd.log")
	}

	// The config as shipped: a bare serve, no secret in its environment.
	sh("/etc/init.d/linerate-serve start")
	calls, _, procd := logs()
	if calls != "token=\narg=serve\n" {
		t.Errorf("shipped config: linerate ran as\n%s", calls)
	}
	if !strings.Contains(procd, "reload trigger linerate\n") || !strings.Contains(procd, "param respawn") {
		t.Errorf("shipped config: procd got\n%s", procd)
	}

	write(t, filepath.Join(root, "etc/config/linerate"), `config serve 'serve'
	option token 'two words'
	list allow '10.0.0.0/8'
	list allow '192.168.1.0/24'
	list listen '192.168.1.1'
	option web '192.168.1.1:9464'
	option max_rate '1G'
	option max_duration ''
	option args '--quiet --max-clients 4'
`, 0o600)
	sh("/etc/init.d/linerate-serve start")
	calls, _, _ = logs()
	want := "token=two words\n" + argLines("serve", "--listen", "192.168.1.1", "--allow", "10.0.0.0/8", "--allow", "192.168.1.0/24",
		"--web", "192.168.1.1:9464", "--max-rate", "1G", "--quiet", "--max-clients", "4")
	if calls != want {
		t.Errorf("configured: linerate ran as\n%s\nwant\n%s", calls, want)
	}

	// Installed: not enabled, so postinst starts nothing; enabled, an
	// upgrade's postinst restarts it; prerm stops and disables it.
	sh("/CONTROL/postinst configure")
	if calls, rc, _ := logs(); calls != "" || rc != "" {
		t.Errorf("postinst, not enabled: ran %q %q", calls, rc)
	}
	sh("/etc/init.d/linerate-serve enable")
	if sh("ls /etc/rc.d") != "K10linerate-serve\nS95linerate-serve\n" {
		t.Errorf("enable: /etc/rc.d holds %q", sh("ls /etc/rc.d"))
	}
	sh("/CONTROL/postinst configure")
	if calls, rc, _ := logs(); calls != want || rc != "stop linerate-serve\nstart linerate-serve\n" {
		t.Errorf("postinst, enabled: rc %q, linerate ran as\n%s", rc, calls)
	}
	sh("/CONTROL/prerm remove")
	if _, rc, _ := logs(); rc != "stop linerate-serve\n" || sh("ls /etc/rc.d") != "" {
		t.Errorf("prerm: rc %q, /etc/rc.d holds %q", rc, sh("ls /etc/rc.d"))
	}
}

// checkAsh parses script with busybox ash (-n: read, run nothing).
func checkAsh(t *testing.T, busybox, name string, script []byte) {
	t.Helper()
	cmd := exec.Command(busybox, "ash", "-n")
	cmd.Stdin = bytes.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("ash -n %s: %v\n%s", name, err, out)
	}
}

func argLines(args ...string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteString("arg=" + a + "\n")
	}
	return b.String()
}

func write(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// smallLimit is the most a small build may weigh (arm and mips routers'
// flash; docs/openwrt.md says what weighs what).
const smallLimit = 8 << 20

// The packages make release wrote (LINERATE_IPK_DIST names its DIST;
// packaging/ipk-check.sh sets it after make release, as make test does):
// every architecture's package is there, laid out as TestIPKLayout
// checks, and holds the binary of DIST meant for it, an ELF for that
// machine; the small builds weigh at most smallLimit.
func TestIPKRelease(t *testing.T) {
	dist := os.Getenv("LINERATE_IPK_DIST")
	if dist == "" {
		t.Skip("LINERATE_IPK_DIST is not set: packaging/ipk-check.sh DIST runs this after make release")
	}
	machine := map[string]struct {
		m     elf.Machine
		class elf.Class
		order string
	}{
		"linerate-linux-arm64":        {elf.EM_AARCH64, elf.ELFCLASS64, "LittleEndian"},
		"linerate-linux-amd64":        {elf.EM_X86_64, elf.ELFCLASS64, "LittleEndian"},
		"linerate-small-linux-armv7":  {elf.EM_ARM, elf.ELFCLASS32, "LittleEndian"},
		"linerate-small-linux-mipsle": {elf.EM_MIPS, elf.ELFCLASS32, "LittleEndian"},
		"linerate-small-linux-mips":   {elf.EM_MIPS, elf.ELFCLASS32, "BigEndian"},
	}
	for arch, bin := range ipkArches {
		ipks, _ := filepath.Glob(filepath.Join(dist, "linerate_*_"+arch+".ipk"))
		if len(ipks) != 1 {
			t.Errorf("%s: %d packages in %s, want 1", arch, len(ipks), dist)
			continue
		}
		version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(ipks[0]), "linerate_"), "_"+arch+".ipk")
		p := checkIPK(t, ipks[0], arch, version)
		b := p.data["./usr/bin/linerate"].body
		if want, err := os.ReadFile(filepath.Join(dist, bin)); err != nil || !bytes.Equal(b, want) {
			t.Errorf("%s: /usr/bin/linerate is not %s (%v)", arch, bin, err)
		}
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Errorf("%s: /usr/bin/linerate: %v", arch, err)
			continue
		}
		w := machine[bin]
		if f.Machine != w.m || f.Class != w.class || f.ByteOrder.String() != w.order {
			t.Errorf("%s: /usr/bin/linerate is %v %v %v, want %v %v %v", arch, f.Machine, f.Class, f.ByteOrder, w.m, w.class, w.order)
		}
		if strings.Contains(bin, "-small-") && len(b) > smallLimit {
			t.Errorf("%s: the small build weighs %d bytes, %d more than %d (docs/openwrt.md says what weighs what)",
				arch, len(b), len(b)-smallLimit, smallLimit)
		} else if strings.Contains(bin, "-small-") {
			t.Logf("%s: the small build weighs %d bytes, %d under %d", arch, len(b), smallLimit-len(b), smallLimit)
		}
	}
}
