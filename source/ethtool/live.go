package ethtool

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Why the SIOCETHTOOL ioctl and not a library:
//
// github.com/mdlayher/ethtool (v0.7.0) speaks the ethtool netlink family but
// covers only link info and modes, link state, FEC, wake-on-LAN and private
// flags: no rings, channels, coalescing, RSS, flow hashing, statistics or
// features, read or set. github.com/safchain/ethtool (v0.7.0) uses the ioctl
// but fixes the indirection table at 256 entries, has no ETHTOOL_GRSSH (hash
// key and function), no rx-flow-hash, no ring count, returns features and
// statistics as maps (losing the order ethtool prints), and casts Go structs
// for the kernel's layouts. The ioctl is stable and complete for what
// linerate reads and sets, so this file speaks it directly, with every
// layout written down in layout.go.

// Live is the ethtool client of the running kernel, over the SIOCETHTOOL
// ioctl. It implements Client and Setter and is safe for concurrent use.
type Live struct {
	mu sync.RWMutex
	fd int // -1 once closed

	modesMu sync.Mutex
	modes   []string // ETH_SS_LINK_MODES, read once
}

var (
	_ Client = (*Live)(nil)
	_ Setter = (*Live)(nil)
)

var errClosed = errors.New("ethtool client is closed")

// NewLive opens the socket the ioctls go through. A socket stays bound to
// the network namespace it was created in: a caller that runs NewLive on a
// thread switched into a namespace (runtime.LockOSThread, setns) gets a
// client that queries that namespace's interfaces from any goroutine
// afterwards, with no further namespace switching.
func NewLive() (*Live, error) {
	// ethtool itself uses an AF_INET datagram socket and falls back to a
	// generic netlink one on kernels without IPv4.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		var err2 error
		fd, err2 = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
		if err2 != nil {
			return nil, fmt.Errorf("ethtool: open ioctl socket: %w", err)
		}
	}
	return &Live{fd: fd}, nil
}

// Close releases the socket. Calls after Close fail.
func (l *Live) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fd < 0 {
		return nil
	}
	err := unix.Close(l.fd)
	l.fd = -1
	return err
}

// ifreq is struct ifreq with ifr_data set: the name, then a union whose
// largest member is 24 bytes on 64-bit machines (16 on 32-bit). The kernel
// copies sizeof(struct ifreq); the padding makes this at least that big.
type ifreq struct {
	name [ifNameSize]byte
	data unsafe.Pointer
	_    [24]byte
}

func ifName(iface string) ([ifNameSize]byte, error) {
	var n [ifNameSize]byte
	if iface == "" || len(iface) >= ifNameSize || strings.ContainsAny(iface, "\x00/") {
		return n, fmt.Errorf("interface name %q: %w (names are 1-15 bytes, no '/')", iface, ErrNoInterface)
	}
	copy(n[:], iface)
	return n, nil
}

// ioctl runs one ethtool command on buf, whose first four bytes it sets to
// the command number. It returns the ioctl's non-negative result.
func (l *Live) ioctl(iface string, c cmd, buf []byte) (uintptr, error) {
	name, err := ifName(iface)
	if err != nil {
		return 0, err
	}
	ne.PutUint32(buf, c.code)
	ifr := ifreq{name: name, data: unsafe.Pointer(&buf[0])}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.fd < 0 {
		return 0, fmt.Errorf("%s: %s: %w", iface, c.name, errClosed)
	}
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(l.fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&ifr)
	runtime.KeepAlive(buf)
	if errno != 0 {
		return 0, opError(iface, c, errno)
	}
	return r, nil
}

func opError(iface string, c cmd, errno unix.Errno) error {
	switch {
	case errno == unix.EOPNOTSUPP || (errno == unix.EINVAL && c.einvalUnsupported):
		return fmt.Errorf("%s: %s: %w", iface, c.name, ErrNotSupported)
	case errno == unix.ENODEV:
		return fmt.Errorf("%s: %w", iface, ErrNoInterface)
	}
	return fmt.Errorf("%s: %s: %w", iface, c.name, errno)
}

// fixed runs a command on a structure of n __u32 fields.
func (l *Live) fixed(iface string, c cmd, n int) (u32s, error) {
	b := newU32s(n, c)
	_, err := l.ioctl(iface, c, b)
	return b, err
}

// setCount is ETHTOOL_GSSET_INFO for one string set: how many strings it
// holds. A set the driver lacks counts as not supported.
func (l *Live) setCount(iface string, set uint) (int, error) {
	b := make([]byte, 16+4)
	ne.PutUint64(b[8:], 1<<set)
	if _, err := l.ioctl(iface, cmdGSSETINFO, b); err != nil {
		return 0, err
	}
	if ne.Uint64(b[8:])&(1<<set) == 0 {
		return 0, fmt.Errorf("%s: %s %s: %w", iface, cmdGSSETINFO.name, setNames[set], ErrNotSupported)
	}
	return int(ne.Uint32(b[16:])), nil
}

// slack is room left after the entries the kernel announced. The kernel
// writes however many strings or statistics the driver has at the moment
// of the call, whatever size the caller passed, so a count that grows in
// between (channels being added) must not run past the buffer.
func slack(n int) int { return 2*n + 64 }

// strings reads a whole string set with ETHTOOL_GSTRINGS.
func (l *Live) strings(iface string, set uint) ([]string, error) {
	for range 3 {
		n, err := l.setCount(iface, set)
		if err != nil {
			return nil, err
		}
		b := make([]byte, 12+gstringLen*slack(n))
		ne.PutUint32(b[4:], uint32(set))
		ne.PutUint32(b[8:], uint32(n))
		if _, err := l.ioctl(iface, cmdGSTRINGS, b); err != nil {
			return nil, err
		}
		if got := int(ne.Uint32(b[8:])); got == n {
			return splitStrings(b[12:], n), nil
		}
	}
	return nil, fmt.Errorf("%s: %s: string set %d keeps changing size", iface, cmdGSTRINGS.name, set)
}

// DriverInfo is ETHTOOL_GDRVINFO.
func (l *Live) DriverInfo(iface string) (DriverInfo, error) {
	b := make([]byte, drvinfoSize)
	if _, err := l.ioctl(iface, cmdGDRVINFO, b); err != nil {
		return DriverInfo{}, err
	}
	return decodeDriverInfo(b), nil
}

// LinkInfo is ETHTOOL_GLINKSETTINGS (or the older ETHTOOL_GSET) and
// ETHTOOL_GLINK. A driver with neither settings nor link state reports
// ErrNotSupported; one with only the link state reports just Link.
func (l *Live) LinkInfo(iface string) (LinkInfo, error) {
	raw, errSettings := l.linkSettings(iface)
	if errSettings != nil && !errors.Is(errSettings, ErrNotSupported) {
		return LinkInfo{}, errSettings
	}
	link, errLink := l.fixed(iface, cmdGLINK, 2)
	if errLink != nil && !errors.Is(errLink, ErrNotSupported) {
		return LinkInfo{}, errLink
	}
	if errSettings != nil && errLink != nil {
		return LinkInfo{}, errSettings
	}
	var li LinkInfo
	if errSettings == nil {
		li = decodeLink(raw, l.linkModeNames(iface))
	}
	li.Link = errLink == nil && link.get(1) != 0
	return li, nil
}

func (l *Live) linkSettings(iface string) (rawLink, error) {
	// The handshake: ask with nwords 0, the kernel answers with -nwords.
	b := make([]byte, linkSettingsHdr)
	_, err := l.ioctl(iface, cmdGLINKSETTINGS, b)
	if errors.Is(err, ErrNotSupported) {
		g := make([]byte, ethtoolCmdSize)
		if _, err := l.ioctl(iface, cmdGSET, g); err != nil {
			return rawLink{}, err
		}
		return decodeGSet(g), nil
	}
	if err != nil {
		return rawLink{}, err
	}
	nwords := -int(int8(b[15]))
	if nwords <= 0 {
		return rawLink{}, fmt.Errorf("%s: %s: kernel answered the handshake with %d words", iface, cmdGLINKSETTINGS.name, int8(b[15]))
	}
	b = make([]byte, linkSettingsHdr+3*4*nwords)
	b[15] = byte(int8(nwords))
	if _, err := l.ioctl(iface, cmdGLINKSETTINGS, b); err != nil {
		return rawLink{}, err
	}
	if got := int(int8(b[15])); got != nwords {
		return rawLink{}, fmt.Errorf("%s: %s: asked %d mask words, got %d", iface, cmdGLINKSETTINGS.name, nwords, got)
	}
	return decodeLinkSettings(b, nwords), nil
}

// linkModeNames returns the kernel's names of link-mode bits, or nil (the
// legacy table) on kernels without that string set.
func (l *Live) linkModeNames(iface string) []string {
	l.modesMu.Lock()
	defer l.modesMu.Unlock()
	if l.modes == nil {
		if names, err := l.strings(iface, ssLinkModes); err == nil {
			l.modes = names
		}
	}
	return l.modes
}

// Features is ETH_SS_FEATURES with ETHTOOL_GFEATURES, arranged as
// `ethtool -k` prints them.
func (l *Live) Features(iface string) (Features, error) {
	names, states, _, err := l.features(iface)
	if err != nil {
		return nil, err
	}
	return arrangeFeatures(names, states), nil
}

// features returns the kernel's feature names and states by bit, and the
// number of feature words the kernel uses (ETHTOOL_SFEATURES wants exactly
// that many).
func (l *Live) features(iface string) ([]string, []featureState, int, error) {
	names, err := l.strings(iface, ssFeatures)
	if err != nil {
		return nil, nil, 0, err
	}
	b := make([]byte, 8)
	if _, err := l.ioctl(iface, cmdGFEATURES, b); err != nil {
		return nil, nil, 0, err
	}
	words := int(ne.Uint32(b[4:]))
	if words*32 < len(names) {
		return nil, nil, 0, fmt.Errorf("%s: %s: %d feature words for %d features", iface, cmdGFEATURES.name, words, len(names))
	}
	b = make([]byte, 8+16*words)
	ne.PutUint32(b[4:], uint32(words))
	if _, err := l.ioctl(iface, cmdGFEATURES, b); err != nil {
		return nil, nil, 0, err
	}
	return names, decodeFeatureBlocks(b[8:], len(names)), words, nil
}

// Rings is ETHTOOL_GRINGPARAM.
func (l *Live) Rings(iface string) (Rings, error) {
	b, err := l.fixed(iface, cmdGRINGPARAM, ringFields)
	if err != nil {
		return Rings{}, err
	}
	return decodeRings(b), nil
}

// Channels is ETHTOOL_GCHANNELS.
func (l *Live) Channels(iface string) (Channels, error) {
	b, err := l.fixed(iface, cmdGCHANNELS, channelFields)
	if err != nil {
		return Channels{}, err
	}
	return decodeChannels(b), nil
}

// Coalesce is ETHTOOL_GCOALESCE. The ioctl reports every parameter: one the
// driver ignores reads 0, where ethtool's netlink path prints "n/a".
func (l *Live) Coalesce(iface string) (Coalesce, error) {
	b, err := l.fixed(iface, cmdGCOALESCE, coalesceFields)
	if err != nil {
		return Coalesce{}, err
	}
	return decodeCoalesce(b), nil
}

// RSS is ETHTOOL_GRXRINGS plus ETHTOOL_GRSSH (table, key and hash function),
// or ETHTOOL_GRXFHINDIR (table only) for drivers without GRSSH, as
// `ethtool -x` does.
func (l *Live) RSS(iface string) (RSS, error) {
	rings, err := l.rxRings(iface)
	if err != nil {
		return RSS{}, err
	}
	rss := RSS{RXRings: rings}
	hdr := make([]byte, rxfhHeaderSize)
	_, err = l.ioctl(iface, cmdGRSSH, hdr)
	if errors.Is(err, ErrNotSupported) {
		rss.Indirection, err = l.indirOnly(iface)
		return rss, err
	}
	if err != nil {
		return RSS{}, err
	}
	indirSize, keySize := ne.Uint32(hdr[8:]), ne.Uint32(hdr[12:])
	b := make([]byte, rxfhHeaderSize+4*int(indirSize)+int(keySize))
	ne.PutUint32(b[8:], indirSize)
	ne.PutUint32(b[12:], keySize)
	if _, err := l.ioctl(iface, cmdGRSSH, b); err != nil {
		return RSS{}, err
	}
	if indirSize > 0 {
		rss.Indirection = make([]uint32, indirSize)
		for i := range rss.Indirection {
			rss.Indirection[i] = ne.Uint32(b[rxfhHeaderSize+4*i:])
		}
	}
	if keySize > 0 {
		off := rxfhHeaderSize + 4*int(indirSize)
		rss.Key = append([]byte(nil), b[off:off+int(keySize)]...)
	}
	if hfunc := b[16]; hfunc != 0 {
		funcs, err := l.strings(iface, ssRSSHashFuncs)
		if err != nil {
			return RSS{}, err
		}
		rss.HashFuncs = make(map[string]bool, len(funcs))
		for i, f := range funcs {
			rss.HashFuncs[f] = hfunc&(1<<i) != 0
		}
	}
	return rss, nil
}

func (l *Live) rxRings(iface string) (int, error) {
	b := make([]byte, rxnfcSize)
	if _, err := l.ioctl(iface, cmdGRXRINGS, b); err != nil {
		return 0, err
	}
	return int(ne.Uint64(b[8:])), nil
}

func (l *Live) indirOnly(iface string) ([]uint32, error) {
	b := make([]byte, 8)
	if _, err := l.ioctl(iface, cmdGRXFHINDIR, b); err != nil {
		return nil, err
	}
	n := ne.Uint32(b[4:])
	b = make([]byte, 8+4*int(n))
	ne.PutUint32(b[4:], n)
	if _, err := l.ioctl(iface, cmdGRXFHINDIR, b); err != nil {
		return nil, err
	}
	t := make([]uint32, n)
	for i := range t {
		t[i] = ne.Uint32(b[8+4*i:])
	}
	return t, nil
}

// FlowHash is ETHTOOL_GRXFH for one flow type.
func (l *Live) FlowHash(iface string, ft FlowType) (FlowHash, error) {
	code, ok := flowTypeCode[ft]
	if !ok {
		return 0, fmt.Errorf("%s: unknown flow type %q (want tcp4, udp4, tcp6 or udp6)", iface, ft)
	}
	b := make([]byte, rxnfcSize)
	ne.PutUint32(b[4:], code)
	c := cmdGRXFH
	c.name += " " + string(ft)
	if _, err := l.ioctl(iface, c, b); err != nil {
		return 0, err
	}
	return FlowHash(ne.Uint64(b[8:])), nil
}

// Stats is ETH_SS_STATS with ETHTOOL_GSTATS, in the driver's order. A
// driver with no statistics reports ErrNotSupported, as `ethtool -S` says
// "no stats available".
func (l *Live) Stats(iface string) (Stats, error) {
	for range 3 {
		names, err := l.strings(iface, ssStats)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("%s: no stats available: %w", iface, ErrNotSupported)
		}
		b := make([]byte, 8+8*slack(len(names)))
		ne.PutUint32(b[4:], uint32(len(names)))
		if _, err := l.ioctl(iface, cmdGSTATS, b); err != nil {
			return nil, err
		}
		if int(ne.Uint32(b[4:])) != len(names) {
			continue // the driver's list changed in between; read again
		}
		out := make(Stats, len(names))
		for i, n := range names {
			out[i] = Stat{Name: n, Value: ne.Uint64(b[8+8*i:])}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: %s: statistics keep changing count", iface, cmdGSTATS.name)
}

// SetFeatures turns features on or off with ETHTOOL_SFEATURES, then reads
// them back: a feature the driver left in the old state is an error.
func (l *Live) SetFeatures(iface string, want map[string]bool) error {
	names, states, words, err := l.features(iface)
	if err != nil {
		return err
	}
	change, err := resolveFeatures(iface, names, states, want)
	if err != nil || len(change) == 0 {
		return err
	}
	b := make([]byte, 8+8*words)
	ne.PutUint32(b[4:], uint32(words))
	for i, on := range change {
		blk := b[8+8*(i/32):]
		bit := uint32(1) << (i % 32)
		ne.PutUint32(blk[0:], ne.Uint32(blk[0:])|bit) // valid
		if on {
			ne.PutUint32(blk[4:], ne.Uint32(blk[4:])|bit) // requested
		}
	}
	if _, err := l.ioctl(iface, cmdSFEATURES, b); err != nil {
		return err
	}
	_, after, _, err := l.features(iface)
	if err != nil {
		return fmt.Errorf("%s: reading features back: %w", iface, err)
	}
	var refused []string
	for i, on := range change {
		if i < len(after) && after[i].active != on {
			refused = append(refused, fmt.Sprintf("%s still %s", names[i], onOff(after[i].active)))
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("%s: the driver did not apply: %s", iface, strings.Join(sortedCopy(refused), ", "))
	}
	return nil
}

// SetRings sets the RX and TX ring sizes with ETHTOOL_SRINGPARAM; the mini
// and jumbo rings change only when r gives them a non-zero size.
func (l *Live) SetRings(iface string, r Rings) error {
	b, err := l.fixed(iface, cmdGRINGPARAM, ringFields)
	if err != nil {
		return err
	}
	b.set(5, r.RX)
	if r.RXMini != 0 {
		b.set(6, r.RXMini)
	}
	if r.RXJumbo != 0 {
		b.set(7, r.RXJumbo)
	}
	b.set(8, r.TX)
	_, err = l.ioctl(iface, cmdSRINGPARAM, b)
	return err
}

// SetChannels sets all four channel counts of c with ETHTOOL_SCHANNELS:
// start from Channels(iface) and change what is needed.
func (l *Live) SetChannels(iface string, c Channels) error {
	b, err := l.fixed(iface, cmdGCHANNELS, channelFields)
	if err != nil {
		return err
	}
	b.set(5, c.RX)
	b.set(6, c.TX)
	b.set(7, c.Other)
	b.set(8, c.Combined)
	_, err = l.ioctl(iface, cmdSCHANNELS, b)
	return err
}

// SetCoalesce sets the adaptive flags and the parameters in c.Params with
// ETHTOOL_SCOALESCE; other parameters keep their value.
func (l *Live) SetCoalesce(iface string, c Coalesce) error {
	for name := range c.Params {
		if _, ok := coalesceField[name]; !ok {
			return fmt.Errorf("%s: unknown coalesce parameter %q", iface, name)
		}
	}
	b, err := l.fixed(iface, cmdGCOALESCE, coalesceFields)
	if err != nil {
		return err
	}
	b.set(coalesceAdaptiveRX, boolU32(c.AdaptiveRX))
	b.set(coalesceAdaptiveTX, boolU32(c.AdaptiveTX))
	for name, v := range c.Params {
		b.set(coalesceField[name], v)
	}
	_, err = l.ioctl(iface, cmdSCOALESCE, b)
	return err
}

// SetIndirection writes the RSS indirection table with ETHTOOL_SRSSH (or
// ETHTOOL_SRXFHINDIR): the table must be as long as the device's and name
// only existing rx rings.
func (l *Live) SetIndirection(iface string, table []uint32) error {
	rings, err := l.rxRings(iface)
	if err != nil {
		return err
	}
	for i, q := range table {
		if int(q) >= rings {
			return fmt.Errorf("%s: indirection entry %d names ring %d, the device has %d", iface, i, q, rings)
		}
	}
	hdr := make([]byte, rxfhHeaderSize)
	_, err = l.ioctl(iface, cmdGRSSH, hdr)
	if errors.Is(err, ErrNotSupported) {
		return l.setIndirOnly(iface, table)
	}
	if err != nil {
		return err
	}
	if size := ne.Uint32(hdr[8:]); int(size) != len(table) {
		if size == 0 {
			return fmt.Errorf("%s: RSS indirection table: %w", iface, ErrNotSupported)
		}
		return fmt.Errorf("%s: indirection table has %d entries, the device's has %d", iface, len(table), size)
	}
	b := make([]byte, rxfhHeaderSize+4*len(table))
	ne.PutUint32(b[8:], uint32(len(table)))
	// key_size 0 and hfunc 0 leave key and function alone; input_xfrm
	// (kernel 6.8+, reserved and zero before) is written back as read.
	b[17] = hdr[17]
	for i, q := range table {
		ne.PutUint32(b[rxfhHeaderSize+4*i:], q)
	}
	_, err = l.ioctl(iface, cmdSRSSH, b)
	return err
}

func (l *Live) setIndirOnly(iface string, table []uint32) error {
	b := make([]byte, 8+4*len(table))
	ne.PutUint32(b[4:], uint32(len(table)))
	for i, q := range table {
		ne.PutUint32(b[8+4*i:], q)
	}
	_, err := l.ioctl(iface, cmdSRXFHINDIR, b)
	return err
}

// SetFlowHash sets the fields hashed for a flow type with ETHTOOL_SRXFH.
func (l *Live) SetFlowHash(iface string, ft FlowType, h FlowHash) error {
	code, ok := flowTypeCode[ft]
	if !ok {
		return fmt.Errorf("%s: unknown flow type %q (want tcp4, udp4, tcp6 or udp6)", iface, ft)
	}
	b := make([]byte, rxnfcSize)
	ne.PutUint32(b[4:], code)
	ne.PutUint64(b[8:], uint64(h))
	c := cmdSRXFH
	c.name += " " + string(ft)
	_, err := l.ioctl(iface, c, b)
	return err
}

func boolU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
