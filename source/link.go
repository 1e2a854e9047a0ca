package source

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"linerate/source/tree"
)

// Link is what rtnetlink says about an interface that sysfs does not: the
// MTU range the driver accepts.
type Link struct {
	Name  string `json:"name"`
	Index int    `json:"index"`
	MTU   int    `json:"mtu"`
	// MinMTU and MaxMTU are 0 when the kernel does not report them (before
	// Linux 4.10) or the device has no limit (loopback reports 0).
	MinMTU int `json:"min_mtu"`
	MaxMTU int `json:"max_mtu"`
}

// LinkLister is implemented by sources that know the interfaces' MTU
// ranges: live ones through rtnetlink, captures through ip/link.txt (the
// output of `ip -d link show`).
type LinkLister interface {
	Links() (map[string]Link, error)
}

// SysctlReader is implemented by sources whose sysctls must be read in a
// particular way (a network namespace's /proc/sys/net answers only to a
// thread inside it).
type SysctlReader interface {
	Sysctl(name string) (string, error)
}

// SysctlHostWide reports whether a sysctl read from src is the host's
// rather than src's network namespace's own: every sysctl outside net.*,
// and the net.* ones the namespace has no copy of (netdev_budget and the
// other global ones). False for the host itself and for captures.
func SysctlHostWide(src Source, name string) bool {
	if h, ok := src.(interface{ SysctlHostWide(string) bool }); ok {
		return h.SysctlHostWide(name)
	}
	return false
}

// Sysctl reads sysctl name ("net.core.rmem_max") from src: through its
// own reader when it has one (SysctlReader), else from its proc tree.
func Sysctl(src Source, name string) (string, error) {
	if r, ok := src.(SysctlReader); ok {
		return r.Sysctl(name)
	}
	return src.Proc().Sysctl(name)
}

// DumpLinks asks rtnetlink for every interface of the calling thread's
// network namespace (RTM_GETLINK dump), with the standard library alone.
func DumpLinks() (map[string]Link, error) {
	b, err := syscall.NetlinkRIB(unix.RTM_GETLINK, unix.AF_UNSPEC)
	if err != nil {
		return nil, fmt.Errorf("rtnetlink link dump: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return nil, fmt.Errorf("rtnetlink link dump: %w", err)
	}
	links := make(map[string]Link)
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Type != unix.RTM_NEWLINK || len(m.Data) < unix.SizeofIfInfomsg {
			continue
		}
		// struct ifinfomsg: family u8, pad u8, type u16, index s32, ...
		index := int(int32(binary.NativeEndian.Uint32(m.Data[4:8])))
		attrs, err := syscall.ParseNetlinkRouteAttr(m)
		if err != nil {
			return nil, fmt.Errorf("rtnetlink link dump: %w", err)
		}
		l := Link{Index: index}
		for _, a := range attrs {
			switch a.Attr.Type {
			case unix.IFLA_IFNAME:
				l.Name = strings.TrimRight(string(a.Value), "\x00")
			case unix.IFLA_MTU:
				l.MTU = attrU32(a.Value)
			case unix.IFLA_MIN_MTU:
				l.MinMTU = attrU32(a.Value)
			case unix.IFLA_MAX_MTU:
				l.MaxMTU = attrU32(a.Value)
			}
		}
		if l.Name != "" {
			links[l.Name] = l
		}
	}
	return links, nil
}

func attrU32(b []byte) int {
	if len(b) < 4 {
		return 0
	}
	return int(binary.NativeEndian.Uint32(b))
}

// ParseIPLink reads the output of `ip -d link show`: a line
// "N: NAME[@PEER]: <FLAGS> mtu M ..." per interface followed by indented
// lines holding "minmtu A maxmtu B" among other details.
func ParseIPLink(r io.Reader) (map[string]Link, error) {
	links := make(map[string]Link)
	var cur *Link
	flush := func() {
		if cur != nil {
			links[cur.Name] = *cur
		}
	}
	const maxLine = 1 << 20
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	n := 1
	for ; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		if line[0] != ' ' && line[0] != '\t' {
			// "4: eth0: <BROADCAST,...> mtu 1400 ..."
			if len(f) < 2 || !strings.HasSuffix(f[0], ":") || !strings.HasSuffix(f[1], ":") {
				return nil, &tree.ParseError{Line: n, Err: fmt.Errorf("want \"INDEX: NAME: ...\", got %q", tree.Clip(line))}
			}
			idx, err := strconv.Atoi(strings.TrimSuffix(f[0], ":"))
			if err != nil {
				return nil, &tree.ParseError{Line: n, Err: fmt.Errorf("interface index %q: %w", tree.Clip(f[0]), errors.Unwrap(err))}
			}
			flush()
			name := strings.TrimSuffix(f[1], ":")
			if i := strings.IndexByte(name, '@'); i > 0 {
				name = name[:i]
			}
			cur = &Link{Name: name, Index: idx}
		} else if cur == nil {
			return nil, &tree.ParseError{Line: n, Err: errors.New("details before any interface line")}
		}
		for i := 0; i+1 < len(f); i++ {
			var dst *int
			switch f[i] {
			case "mtu":
				dst = &cur.MTU
			case "minmtu":
				dst = &cur.MinMTU
			case "maxmtu":
				dst = &cur.MaxMTU
			default:
				continue
			}
			v, err := strconv.Atoi(f[i+1])
			if err != nil {
				return nil, &tree.ParseError{Line: n, Err: fmt.Errorf("%s %q: %w", f[i], tree.Clip(f[i+1]), errors.Unwrap(err))}
			}
			*dst = v
			i++
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, &tree.ParseError{Line: n, Err: fmt.Errorf("a line longer than %d bytes", maxLine)}
	} else if err != nil {
		return nil, err
	}
	flush()
	return links, nil
}

// RenderIPLink prints links in the shape of `ip -d link show`, reduced to
// what ParseIPLink reads; capture uses it when the ip command is missing.
func RenderIPLink(w io.Writer, links map[string]Link) error {
	ls := make([]Link, 0, len(links))
	for _, l := range links {
		ls = append(ls, l)
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Index < ls[j].Index })
	for _, l := range ls {
		if _, err := fmt.Fprintf(w, "%d: %s: <> mtu %d\n    minmtu %d maxmtu %d\n", l.Index, l.Name, l.MTU, l.MinMTU, l.MaxMTU); err != nil {
			return err
		}
	}
	return nil
}
