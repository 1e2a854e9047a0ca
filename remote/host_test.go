package remote

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"linerate/wire"
)

func TestDefaultPortIsWires(t *testing.T) {
	if DefaultPort != wire.DefaultPort {
		t.Errorf("remote.DefaultPort %d, wire.DefaultPort %d", DefaultPort, wire.DefaultPort)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want Host
		str  string
	}{
		{"10.0.0.2", Host{Kind: Agent, Name: "10.0.0.2", Port: 7557}, "10.0.0.2:7557"},
		{"10.0.0.2:9000", Host{Kind: Agent, Name: "10.0.0.2", Port: 9000}, "10.0.0.2:9000"},
		{"venus", Host{Kind: Agent, Name: "venus", Port: 7557}, "venus:7557"},
		{"[fd00::2]:9000", Host{Kind: Agent, Name: "fd00::2", Port: 9000}, "[fd00::2]:9000"},
		{"[fd00::2]", Host{Kind: Agent, Name: "fd00::2", Port: 7557}, "[fd00::2]:7557"},
		{"fd00::2", Host{Kind: Agent, Name: "fd00::2", Port: 7557}, "[fd00::2]:7557"},
		{"ssh://cm4.local", Host{Kind: SSH, Name: "cm4.local"}, "ssh://cm4.local"},
		{"ssh://pi@cm4.local", Host{Kind: SSH, Name: "cm4.local", User: "pi"}, "ssh://pi@cm4.local"},
		{"ssh://pi@192.168.1.40:2222", Host{Kind: SSH, Name: "192.168.1.40", Port: 2222, User: "pi"}, "ssh://pi@192.168.1.40:2222"},
		{"ssh://root@[fd00::1]:22", Host{Kind: SSH, Name: "fd00::1", Port: 22, User: "root"}, "ssh://root@[fd00::1]:22"},
		{"ssh://mars/", Host{Kind: SSH, Name: "mars"}, "ssh://mars"},
		{"[fe80::1%eth0.10]:9000", Host{Kind: Agent, Name: "fe80::1%eth0.10", Port: 9000}, "[fe80::1%eth0.10]:9000"},
		{"ssh://the_admin-2@[fe80::1%25br-lan]", Host{Kind: SSH, Name: "fe80::1%br-lan", User: "the_admin-2"}, "ssh://the_admin-2@[fe80::1%25br-lan]"},
		{"dns://agents.lab", Host{Kind: DNS, Name: "agents.lab", Port: 7557}, "dns://agents.lab:7557"},
		{"dns://agents.linerate.svc.cluster.local.:9000", Host{Kind: DNS, Name: "agents.linerate.svc.cluster.local", Port: 9000}, "dns://agents.linerate.svc.cluster.local:9000"},
		{"dns+srv://_linerate._tcp.lab", Host{Kind: SRV, Name: "_linerate._tcp.lab"}, "dns+srv://_linerate._tcp.lab"},
		{"dns+srv://_linerate._tcp.agents.linerate.svc.cluster.local.", Host{Kind: SRV, Name: "_linerate._tcp.agents.linerate.svc.cluster.local"}, "dns+srv://_linerate._tcp.agents.linerate.svc.cluster.local"},
	} {
		h, err := Parse(tc.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.spec, err)
			continue
		}
		if h != tc.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.spec, h, tc.want)
		}
		if h.String() != tc.str {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.spec, h.String(), tc.str)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "bad host spec: empty"},
		{"http://cm4", `bad host spec "http://cm4": scheme "http": want ssh://[user@]host[:port], HOST[:PORT] of a running agent, dns://NAME[:PORT] or dns+srv://_SERVICE._tcp.DOMAIN`},
		{"dns://", `bad host spec "dns://": no name`},
		{"dns://10.0.0.2:9000", `bad host spec "dns://10.0.0.2:9000": 10.0.0.2 is an address: give it as 10.0.0.2:9000 (an agent), dns:// takes a name to look up`},
		{"dns://agents.lab:0", `bad host spec "dns://agents.lab:0": port "0": want 1-65535`},
		{"dns://agents.lab/x", `bad host spec "dns://agents.lab/x": a dns:// spec is a name only: dns://NAME[:PORT]`},
		{"dns://user@agents.lab", `bad host spec "dns://user@agents.lab": a dns:// spec is a name only: dns://NAME[:PORT]`},
		{"dns://agents..lab", `bad host spec "dns://agents..lab": name "agents..lab": label "": want 1 to 63 letters, digits, '-' or '_', not starting or ending with '-'`},
		{"dns://-x.lab", `bad host spec "dns://-x.lab": name "-x.lab": label "-x": want 1 to 63 letters, digits, '-' or '_', not starting or ending with '-'`},
		{"dns://a$b.lab", `bad host spec "dns://a$b.lab": name "a$b": '$' is not allowed (only A-Z a-z 0-9 . _ -)`},
		{"dns+srv://agents.lab", `bad host spec "dns+srv://agents.lab": want dns+srv://_SERVICE._tcp.DOMAIN (_linerate._tcp.example.org), the name of SRV records`},
		{"dns+srv://_linerate._udp.lab", `bad host spec "dns+srv://_linerate._udp.lab": want dns+srv://_SERVICE._tcp.DOMAIN (_linerate._tcp.example.org), the name of SRV records`},
		{"dns+srv://_linerate._tcp.lab:7557", `bad host spec "dns+srv://_linerate._tcp.lab:7557": dns+srv:// takes no port: the SRV records give each target's`},
		{"10.0.0.2:0", `bad host spec "10.0.0.2:0": port "0": want 1-65535`},
		{"10.0.0.2:70000", `bad host spec "10.0.0.2:70000": port "70000": want 1-65535`},
		{"ssh://pi@cm4:x", `bad host spec "ssh://pi@cm4:x": invalid port ":x" after host`},
		{"ssh://pi@cm4:", `bad host spec "ssh://pi@cm4:": empty port`},
		{"ssh://pi:secret@cm4", `bad host spec "ssh://pi:secret@cm4": no password in the URL: ssh logs in with keys (BatchMode)`},
		{"ssh://cm4/tmp", `bad host spec "ssh://cm4/tmp": an ssh URL has no path: ssh://[user@]host[:port]`},
		{"ssh://cm4?x=1", `bad host spec "ssh://cm4?x=1": an ssh URL has no query or fragment`},
		{"ssh://-oProxyCommand=x", `bad host spec "ssh://-oProxyCommand=x": host "-oProxyCommand=x" starts with '-'`},
		{"ssh://-l@cm4", `bad host spec "ssh://-l@cm4": user "-l" starts with '-'`},
		// Nothing a shell or ssh would read more into.
		{"ssh://pi;reboot@cm4", `bad host spec "ssh://pi;reboot@cm4": user "pi;reboot": ';' is not allowed (only A-Z a-z 0-9 . _ -)`},
		{"ssh://$(reboot)@cm4", `bad host spec "ssh://$(reboot)@cm4": user "$(reboot)": '$' is not allowed (only A-Z a-z 0-9 . _ -)`},
		{"ssh://pi%0Areboot@cm4", `bad host spec "ssh://pi%0Areboot@cm4": user "pi\nreboot": '\n' is not allowed (only A-Z a-z 0-9 . _ -)`},
		{"ssh://pi%20x@cm4", `bad host spec "ssh://pi%20x@cm4": user "pi x": ' ' is not allowed (only A-Z a-z 0-9 . _ -)`},
		{"ssh://[fe80::1%25eth0;reboot]", `bad host spec "ssh://[fe80::1%25eth0;reboot]": zone "eth0;reboot": ';' is not allowed (only A-Z a-z 0-9 . _ -)`},
		{"[fe80::1%$(reboot)]:7557", `bad host spec "[fe80::1%$(reboot)]:7557": zone "$(reboot)": '$' is not allowed (only A-Z a-z 0-9 . _ -)`},
		{"ssh://", `bad host spec "ssh://": no host`},
		{"cm4 pi", `bad host spec "cm4 pi": host "cm4 pi": ' ' is not allowed (only A-Z a-z 0-9 . _ -)`},
	} {
		_, err := Parse(tc.spec)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q): %v, want %s", tc.spec, err, tc.want)
			continue
		}
		if !errors.Is(err, ErrSpec) {
			t.Errorf("Parse(%q): %v is not ErrSpec", tc.spec, err)
		}
	}
}

// The stderr lines are OpenSSH 9.2's (Debian 12), as the ssh tests see
// them, and bash's for a missing command.
func TestSSHError(t *testing.T) {
	for _, tc := range []struct {
		code  int
		line  string
		agent bool
		kind  error
		msg   string
	}{
		{255, "root@10.77.0.2: Permission denied (publickey).", true, ErrAuth,
			"ssh://root@h: authentication failed (ssh exit 255: root@10.77.0.2: Permission denied (publickey).)"},
		{255, "ssh: connect to host 10.77.0.2 port 2222: Connection refused", true, ErrUnreachable,
			"ssh://root@h: unreachable (ssh exit 255: ssh: connect to host 10.77.0.2 port 2222: Connection refused)"},
		{255, "ssh: Could not resolve hostname cm5: Name or service not known", true, ErrUnreachable,
			"ssh://root@h: unreachable (ssh exit 255: ssh: Could not resolve hostname cm5: Name or service not known)"},
		{255, "ssh: connect to host 192.168.1.40 port 22: Connection timed out", true, ErrUnreachable,
			"ssh://root@h: unreachable (ssh exit 255: ssh: connect to host 192.168.1.40 port 22: Connection timed out)"},
		{255, "Host key verification failed.", true, ErrSSH,
			"ssh://root@h: ssh failed (ssh exit 255: Host key verification failed.)"},
		{127, "bash: line 1: linerate: command not found", true, ErrNotInstalled,
			"ssh://root@h: linerate is not installed (ssh exit 127: bash: line 1: linerate: command not found): " + installHint},
		{2, "linerate: unknown flag: --stdio", true, ErrAgent,
			"ssh://root@h: the agent failed (ssh exit 2: linerate: unknown flag: --stdio)"},
		{1, "mktemp: failed to create directory via template", false, ErrSSH,
			"ssh://root@h: ssh failed (ssh exit 1: mktemp: failed to create directory via template)"},
	} {
		err := sshError("ssh://root@h", tc.code, tc.line, tc.agent)
		if !errors.Is(err, tc.kind) {
			t.Errorf("%d %q: kind %v, want %v", tc.code, tc.line, err.Kind, tc.kind)
		}
		if err.Error() != tc.msg {
			t.Errorf("%d %q:\n got %s\nwant %s", tc.code, tc.line, err, tc.msg)
		}
	}
}

func TestTailWriter(t *testing.T) {
	w := &tailWriter{}
	w.Write([]byte("first\nsecond line\n\n  \n"))
	if got := w.last(); got != "second line" {
		t.Errorf("last %q", got)
	}
	w.Write([]byte(strings.Repeat("x", 2*tailMax) + "\nend"))
	if got := w.last(); got != "end" {
		t.Errorf("last %q", got)
	}
	if len(w.buf) > tailMax {
		t.Errorf("kept %d bytes", len(w.buf))
	}
}

func TestArch(t *testing.T) {
	for in, want := range map[string]string{"x86_64\n": AMD64, "aarch64": ARM64, "armv7l": ARMv7, "armv8l": ARMv7} {
		if got, err := Arch(in); err != nil || got != want {
			t.Errorf("Arch(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := Arch("armv6l")
	if want := `"armv6l" (uname -m): linerate is released for amd64 (x86_64), arm64 (aarch64) and armv7 (armv7l)`; err == nil || err.Error() != want {
		t.Errorf("Arch(armv6l): %v", err)
	}
}

// writeELF writes the header of a static executable (no program headers,
// so no PT_INTERP) for machine in class, enough for debug/elf.
func writeELF(t *testing.T, path string, class byte, machine uint16) {
	t.Helper()
	var b []byte
	if class == 2 {
		b = make([]byte, 64)
		binary.LittleEndian.PutUint16(b[52:], 64) // e_ehsize
	} else {
		b = make([]byte, 52)
		binary.LittleEndian.PutUint16(b[40:], 52)
	}
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = class, 1, 1                 // class, little endian, version
	binary.LittleEndian.PutUint16(b[16:], 2)       // ET_EXEC
	binary.LittleEndian.PutUint16(b[18:], machine) // e_machine
	binary.LittleEndian.PutUint32(b[20:], 1)       // e_version
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestBinaryFor(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "bin", "linerate")
	writeELF(t, self, 2, 62)                                                // EM_X86_64
	writeELF(t, filepath.Join(dir, "dist", "linerate-linux-arm64"), 2, 183) // EM_AARCH64
	writeELF(t, filepath.Join(dir, "dist", "linerate-linux-armv7"), 2, 62)  // mislabelled
	writeELF(t, filepath.Join(dir, "other", "linerate-arm"), 1, 40)         // EM_ARM
	o := &Options{Self: self, SelfArch: AMD64}
	for _, tc := range []struct {
		o    *Options
		arch string
		want string
		err  string
	}{
		{o, AMD64, self, ""},
		{o, ARM64, filepath.Join(dir, "bin", "..", "dist", "linerate-linux-arm64"), ""},
		{o, ARMv7, "", filepath.Join(dir, "bin", "..", "dist", "linerate-linux-armv7") + " is built for amd64, the host is armv7"},
		{&Options{Self: filepath.Join(dir, "other", "bin", "x"), SelfArch: AMD64}, ARM64, "",
			"the host is arm64, this linerate is amd64, and there is no " + filepath.Join(dir, "other", "bin", "linerate-linux-arm64") + " or " +
				filepath.Join(dir, "other", "bin", "dist", "linerate-linux-arm64") + " or " + filepath.Join(dir, "other", "dist", "linerate-linux-arm64") +
				" (make release builds it into dist/; or give the binary to copy)"},
		{&Options{Binary: filepath.Join(dir, "other", "linerate-arm")}, ARMv7, filepath.Join(dir, "other", "linerate-arm"), ""},
		{&Options{Binary: filepath.Join(dir, "other", "linerate-arm")}, ARM64, "", filepath.Join(dir, "other", "linerate-arm") + " is built for armv7, the host is arm64"},
		{&Options{Binary: "/bin/sh"}, AMD64, "", "/bin/sh: not a static binary (it has a dynamic loader): build it with CGO_ENABLED=0, as make release does"},
		// This program built with cgo: not copied; a release binary beside it would be.
		{&Options{Self: "/bin/sh", SelfArch: AMD64}, AMD64, "", "the host is amd64, this linerate is amd64, dynamically linked (built without CGO_ENABLED=0), and there is no " +
			"/bin/linerate-linux-amd64 or /bin/dist/linerate-linux-amd64 or /dist/linerate-linux-amd64 (make release builds it into dist/; or give the binary to copy)"},
	} {
		got, err := tc.o.binaryFor(tc.arch)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("binaryFor(%s): %q, %v; want error %s", tc.arch, got, err, tc.err)
		case tc.err == "" && (err != nil || filepath.Clean(got) != filepath.Clean(tc.want)):
			t.Errorf("binaryFor(%s): %q, %v; want %s", tc.arch, got, err, tc.want)
		}
	}
}

func TestSSHConnection(t *testing.T) {
	c, s, ok := sshConnection("10.77.0.1 41670 10.77.0.2 22")
	if !ok || c.String() != "10.77.0.1:41670" || s.String() != "10.77.0.2:22" {
		t.Errorf("sshConnection: %v %v %v", c, s, ok)
	}
	if _, _, ok := sshConnection("garbage"); ok {
		t.Error("sshConnection(garbage) ok")
	}
}

func TestSSHArgs(t *testing.T) {
	o := &Options{SSHArgs: []string{"-F", "cfg"}}
	got := strings.Join(o.sshArgs(Host{Kind: SSH, Name: "cm4", User: "pi", Port: 2222}, "linerate serve --stdio"), " ")
	want := "-T -o BatchMode=yes -o ConnectTimeout=10 -o ServerAliveInterval=5 -o ServerAliveCountMax=3 -p 2222 -F cfg -- pi@cm4 linerate serve --stdio"
	if got != want {
		t.Errorf("ssh args\n got %s\nwant %s", got, want)
	}
}
