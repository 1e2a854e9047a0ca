package ethtool

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The Parse functions read the text the ethtool command prints, as a person
// would paste it: ethtool 6.x (netlink) and older (ioctl) outputs alike,
// tabs or spaces. A text that is one of ethtool's error lines ("Operation
// not supported", "netlink error: Operation not supported", "Cannot get
// ...: Operation not supported", "no stats available") is reported as
// ErrNotSupported; any other error line as a failure carrying its text;
// anything else unexpected as a *SyntaxError naming the line.

// SyntaxError is text that is not what ethtool prints.
type SyntaxError struct {
	Line int // 1-based
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

func syntaxf(line int, format string, args ...any) error {
	return &SyntaxError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// ErrFailed is wrapped when the text is an error ethtool printed for a
// reason other than lack of support (no such device, permission, ...).
var ErrFailed = errors.New("ethtool failed")

type line struct {
	n    int    // 1-based line number
	raw  string // without the newline
	text string // trimmed
}

func (l line) indented() bool {
	return strings.HasPrefix(l.raw, "\t") || strings.HasPrefix(l.raw, " ")
}

// readLines reads all lines and checks for an error text. Blank lines are
// kept (some formats use them as separators).
func readLines(r io.Reader) ([]line, error) {
	return readLinesFrom(r, "")
}

// readLinesFrom is readLines for an output that starts with a title line
// (title is its prefix): error lines before the title are dropped, since
// ethtool writes them unbuffered to stderr while its stdout waits in a
// buffer, so a capture of both streams can start with them.
func readLinesFrom(r io.Reader, title string) ([]line, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	var out []line
	for sc.Scan() {
		raw := strings.TrimRight(sc.Text(), "\r")
		out = append(out, line{n: len(out) + 1, raw: raw, text: strings.TrimSpace(raw)})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out = joinContinuations(out)
	if err := onlyError(out); err != nil {
		return nil, err
	}
	first := -1
	for i, l := range out {
		if l.text != "" {
			first = i
			break
		}
	}
	if first < 0 {
		return nil, syntaxf(1, "empty output")
	}
	if title != "" {
		i := first
		for i < len(out) && (out[i].text == "" || errorLine(out[i].text) != nil) {
			i++
		}
		if i > first && i < len(out) && strings.HasPrefix(out[i].text, title) {
			return out[i:], nil
		}
	}
	if err := errorLine(out[first].text); err != nil {
		return nil, err
	}
	return out, nil
}

// joinContinuations folds the second line of ethtool 4.x's perror output
// ("Cannot get device channel parameters" then ": Operation not supported")
// into the first.
func joinContinuations(ls []line) []line {
	out := ls[:0:0]
	for _, l := range ls {
		if strings.HasPrefix(l.text, ": ") && len(out) > 0 && out[len(out)-1].text != "" {
			prev := &out[len(out)-1]
			prev.text += l.text
			prev.raw += l.raw
			continue
		}
		out = append(out, l)
	}
	return out
}

// onlyError returns the error when the output holds nothing but error lines
// and at most a title line ending in ":" — what a terminal shows when stdout
// and stderr are pasted in the order they appeared.
func onlyError(ls []line) error {
	var first error
	others := 0
	for _, l := range ls {
		if l.text == "" {
			continue
		}
		if err := errorLine(l.text); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		if !strings.HasSuffix(l.text, ":") {
			return nil
		}
		others++
	}
	if others > 1 {
		return nil
	}
	return first
}

// errorLine recognises the error lines ethtool prints instead of output.
func errorLine(s string) error {
	switch s {
	case "Operation not supported", "no stats available", "No data available":
		return fmt.Errorf("%s: %w", s, ErrNotSupported)
	}
	msg := ""
	for _, p := range []string{"netlink error: ", "Cannot get ", "ethtool failed: "} {
		if strings.HasPrefix(s, p) {
			msg = s
		}
	}
	if msg == "" {
		return nil
	}
	if strings.HasSuffix(msg, "Operation not supported") {
		return fmt.Errorf("%s: %w", msg, ErrNotSupported)
	}
	return fmt.Errorf("%w: %s", ErrFailed, strings.TrimPrefix(msg, "ethtool failed: "))
}

// nonBlank drops blank lines.
func nonBlank(ls []line) []line {
	out := ls[:0:0]
	for _, l := range ls {
		if l.text != "" {
			out = append(out, l)
		}
	}
	return out
}

// keyValue splits "key: value" (or "key:<tabs>value"); ok is false when
// there is no colon.
func keyValue(s string) (key, value string, ok bool) {
	k, v, ok := strings.Cut(s, ":")
	return strings.TrimSpace(k), strings.TrimSpace(v), ok
}

// fields is strings.Fields, nil when there are none.
func fields(s string) []string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return nil
	}
	return f
}

// skipTitle drops a first line such as "Features for eth0:".
func skipTitle(ls []line, prefix string) []line {
	if len(ls) > 0 && strings.HasPrefix(ls[0].text, prefix) {
		return ls[1:]
	}
	return ls
}

func parseYesNo(l line, key, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return false, syntaxf(l.n, "%s: want yes or no, got %q", key, v)
}

func parseOnOff(l line, key, v string) (bool, error) {
	switch v {
	case "on":
		return true, nil
	case "off", "n/a":
		return false, nil
	}
	return false, syntaxf(l.n, "%s: want on or off, got %q", key, v)
}

// ParseDriverInfo reads `ethtool -i IFACE`.
func ParseDriverInfo(r io.Reader) (DriverInfo, error) {
	ls, err := readLines(r)
	if err != nil {
		return DriverInfo{}, err
	}
	var d DriverInfo
	seen := false
	for _, l := range nonBlank(ls) {
		k, v, ok := keyValue(l.raw)
		if !ok {
			return DriverInfo{}, syntaxf(l.n, "want \"key: value\", got %q", l.text)
		}
		var flag *bool
		switch k {
		case "driver":
			d.Driver, seen = v, true
		case "version":
			d.Version = v
		case "firmware-version":
			d.Firmware = v
		case "expansion-rom-version":
			d.ExpansionROM = v
		case "bus-info":
			d.BusInfo = v
		case "supports-statistics":
			flag = &d.SupportsStatistics
		case "supports-test":
			flag = &d.SupportsTest
		case "supports-eeprom-access":
			flag = &d.SupportsEEPROM
		case "supports-register-dump":
			flag = &d.SupportsRegisterDump
		case "supports-priv-flags":
			flag = &d.SupportsPrivFlags
		}
		if flag != nil {
			if *flag, err = parseYesNo(l, k, v); err != nil {
				return DriverInfo{}, err
			}
		}
	}
	if !seen {
		return DriverInfo{}, syntaxf(1, "no \"driver:\" line")
	}
	return d, nil
}

// linkKeys are the `ethtool IFACE` lines linerate reads; others (wake-on,
// message level, lanes, master-slave, SQI) are skipped with their
// continuation lines.
var linkKeys = map[string]bool{
	"Supported ports": true, "Supported link modes": true,
	"Supported pause frame use": true, "Supports auto-negotiation": true,
	"Supported FEC modes": true, "Advertised link modes": true,
	"Advertised pause frame use": true, "Advertised auto-negotiation": true,
	"Advertised FEC modes": true, "Link partner advertised link modes": true,
	"Link partner advertised pause frame use":  true,
	"Link partner advertised auto-negotiation": true,
	"Link partner advertised FEC modes":        true, "Speed": true, "Duplex": true,
	"Auto-negotiation": true, "Port": true, "PHYAD": true, "Transceiver": true,
	"MDI-X": true, "Link detected": true,
}

// ParseLinkInfo reads `ethtool IFACE`.
func ParseLinkInfo(r io.Reader) (LinkInfo, error) {
	ls, err := readLinesFrom(r, "Settings for ")
	if err != nil {
		return LinkInfo{}, err
	}
	ls = nonBlank(ls)
	if !strings.HasPrefix(ls[0].text, "Settings for ") {
		return LinkInfo{}, syntaxf(ls[0].n, "want \"Settings for IFACE:\", got %q", ls[0].text)
	}
	// Gather key -> value, joining continuation lines (wrapped link modes).
	type entry struct {
		l     line
		value string
	}
	values := map[string]*entry{}
	var last *entry
	for _, l := range ls[1:] {
		if l.text == "No data available" {
			if len(values) == 0 {
				return LinkInfo{}, fmt.Errorf("%s: %w", l.text, ErrNotSupported)
			}
			continue
		}
		if errorLine(l.text) != nil {
			continue // stderr of an item ethtool could not read, e.g. wake-on
		}
		k, v, ok := keyValue(l.text)
		if ok {
			if linkKeys[k] {
				last = &entry{l: l, value: v}
				values[k] = last
			} else {
				last = nil // a line linerate does not read
			}
			continue
		}
		if !l.indented() {
			return LinkInfo{}, syntaxf(l.n, "unexpected %q", l.text)
		}
		if last != nil {
			last.value += " " + l.text
		}
	}
	var li LinkInfo
	words := func(k string) []string {
		e := values[k]
		if e == nil || e.value == "Not reported" {
			return nil
		}
		return fields(e.value)
	}
	li.Supported = words("Supported link modes")
	li.Advertised = words("Advertised link modes")
	li.Partner = words("Link partner advertised link modes")
	li.SupportedFEC = words("Supported FEC modes")
	li.AdvertisedFEC = words("Advertised FEC modes")
	li.PartnerFEC = words("Link partner advertised FEC modes")
	if e := values["Supported ports"]; e != nil {
		v := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(e.value, "["), "]"))
		li.Ports = fields(v)
	}
	str := func(k string) string {
		if e := values[k]; e != nil {
			return e.value
		}
		return ""
	}
	li.SupportedPause = str("Supported pause frame use")
	li.AdvertisedPause = str("Advertised pause frame use")
	li.PartnerPause = str("Link partner advertised pause frame use")
	li.Port = str("Port")
	li.Transceiver = str("Transceiver")
	li.MDIX = str("MDI-X")
	for k, dst := range map[string]*bool{
		"Supports auto-negotiation":                &li.SupportsAutoneg,
		"Advertised auto-negotiation":              &li.AdvertisedAutoneg,
		"Link partner advertised auto-negotiation": &li.PartnerAutoneg,
	} {
		if e := values[k]; e != nil {
			if *dst, err = parseYesNo(e.l, k, e.value); err != nil {
				return LinkInfo{}, err
			}
		}
	}
	if e := values["Speed"]; e != nil && !strings.HasPrefix(e.value, "Unknown") {
		n, err := strconv.Atoi(strings.TrimSuffix(e.value, "Mb/s"))
		if err != nil {
			return LinkInfo{}, syntaxf(e.l.n, "Speed: want NMb/s or Unknown!, got %q", e.value)
		}
		li.SpeedMbps = n
	}
	if e := values["Duplex"]; e != nil {
		switch {
		case e.value == "Full" || e.value == "Half":
			li.Duplex = e.value
		case strings.HasPrefix(e.value, "Unknown"):
			li.Duplex = "Unknown"
		default:
			return LinkInfo{}, syntaxf(e.l.n, "Duplex: want Full, Half or Unknown!, got %q", e.value)
		}
	}
	if e := values["Auto-negotiation"]; e != nil {
		if li.Autoneg, err = parseOnOff(e.l, "Auto-negotiation", e.value); err != nil {
			return LinkInfo{}, err
		}
	}
	if e := values["PHYAD"]; e != nil {
		if li.PHYAD, err = strconv.Atoi(e.value); err != nil {
			return LinkInfo{}, syntaxf(e.l.n, "PHYAD: want a number, got %q", e.value)
		}
	}
	if e := values["Link detected"]; e != nil {
		// "yes", "no", or "no (No cable)" with the extended state.
		v, _, _ := strings.Cut(e.value, " ")
		if li.Link, err = parseYesNo(e.l, "Link detected", v); err != nil {
			return LinkInfo{}, err
		}
	}
	return li, nil
}

// ParseFeatures reads `ethtool -k IFACE`.
func ParseFeatures(r io.Reader) (Features, error) {
	ls, err := readLines(r)
	if err != nil {
		return nil, err
	}
	ls = skipTitle(nonBlank(ls), "Features for ")
	var out Features
	parent := ""
	for _, l := range ls {
		name, rest, ok := keyValue(l.text)
		if !ok || name == "" {
			return nil, syntaxf(l.n, "want \"feature: on|off\", got %q", l.text)
		}
		state, suffix, _ := strings.Cut(rest, " ")
		f := Feature{Name: name}
		if f.On, err = parseOnOff(l, name, state); err != nil || state == "n/a" {
			return nil, syntaxf(l.n, "%s: want on or off, got %q", name, state)
		}
		switch strings.TrimSpace(suffix) {
		case "":
		case "[fixed]":
			f.Fixed = true
		case "[requested on]":
			f.Requested = "on"
		case "[requested off]":
			f.Requested = "off"
		default:
			return nil, syntaxf(l.n, "%s: unknown marker %q", name, suffix)
		}
		if l.indented() {
			if parent == "" {
				return nil, syntaxf(l.n, "indented feature %s under no group", name)
			}
			f.Parent = parent
		} else {
			parent = name
		}
		out = append(out, f)
	}
	// A group line is fixed when none of its features can change.
	for i := range out {
		if out[i].Parent != "" {
			continue
		}
		children, fixed := 0, true
		for j := i + 1; j < len(out) && out[j].Parent == out[i].Name; j++ {
			children++
			fixed = fixed && out[j].Fixed
		}
		if children > 0 {
			out[i].Fixed = fixed
		}
	}
	return out, nil
}

// maxCur reads the two sections of `ethtool -g` and `ethtool -l`. keys maps
// a label to its place in the result; other labels (RX Buf Len, TX Push,
// ...) are skipped. "n/a" reads as 0.
func maxCur(r io.Reader, title string, keys map[string]int) (max, cur []uint32, err error) {
	ls, err := readLines(r)
	if err != nil {
		return nil, nil, err
	}
	ls = skipTitle(nonBlank(ls), title)
	max, cur = make([]uint32, len(keys)), make([]uint32, len(keys))
	var dst []uint32
	seenMax, seenCur := false, false
	for _, l := range ls {
		switch l.text {
		case "Pre-set maximums:":
			dst, seenMax = max, true
			continue
		case "Current hardware settings:":
			dst, seenCur = cur, true
			continue
		}
		k, v, ok := keyValue(l.text)
		if !ok || dst == nil {
			return nil, nil, syntaxf(l.n, "unexpected %q", l.text)
		}
		i, known := keys[k]
		if !known {
			continue
		}
		if v == "n/a" {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return nil, nil, syntaxf(l.n, "%s: want a number or n/a, got %q", k, v)
		}
		dst[i] = uint32(n)
	}
	if !seenMax || !seenCur {
		return nil, nil, syntaxf(1, "want \"Pre-set maximums:\" and \"Current hardware settings:\" sections")
	}
	return max, cur, nil
}

// ParseRings reads `ethtool -g IFACE`.
func ParseRings(r io.Reader) (Rings, error) {
	max, cur, err := maxCur(r, "Ring parameters for ", map[string]int{"RX": 0, "RX Mini": 1, "RX Jumbo": 2, "TX": 3})
	if err != nil {
		return Rings{}, err
	}
	return Rings{
		RXMax: max[0], RXMiniMax: max[1], RXJumboMax: max[2], TXMax: max[3],
		RX: cur[0], RXMini: cur[1], RXJumbo: cur[2], TX: cur[3],
	}, nil
}

// ParseChannels reads `ethtool -l IFACE`.
func ParseChannels(r io.Reader) (Channels, error) {
	max, cur, err := maxCur(r, "Channel parameters for ", map[string]int{"RX": 0, "TX": 1, "Other": 2, "Combined": 3})
	if err != nil {
		return Channels{}, err
	}
	return Channels{
		MaxRX: max[0], MaxTX: max[1], MaxOther: max[2], MaxCombined: max[3],
		RX: cur[0], TX: cur[1], Other: cur[2], Combined: cur[3],
	}, nil
}

// coalesceByLabel maps every label ethtool prints to a CoalesceParams name
// (6.1 prints "rx-frame-low" for rx-frames-low, older versions the latter).
var coalesceByLabel = func() map[string]string {
	m := make(map[string]string, 2*len(CoalesceParams))
	for _, p := range CoalesceParams {
		m[p] = p
		m[coalesceLabel(p)] = p
	}
	return m
}()

// ParseCoalesce reads `ethtool -c IFACE`. A parameter printed as n/a is
// absent from Params. Parameters newer ethtool versions print beyond
// CoalesceParams (tx-aggr-*, ...) are skipped.
func ParseCoalesce(r io.Reader) (Coalesce, error) {
	ls, err := readLines(r)
	if err != nil {
		return Coalesce{}, err
	}
	ls = skipTitle(nonBlank(ls), "Coalesce parameters for ")
	c := Coalesce{Params: map[string]uint32{}}
	seenAdaptive := false
	for _, l := range ls {
		if strings.HasPrefix(l.text, "Adaptive RX:") || strings.HasPrefix(l.text, "CQE mode RX:") {
			f := strings.Fields(l.text)
			if len(f) < 4 || f[len(f)-2] != "TX:" {
				return Coalesce{}, syntaxf(l.n, "want \"... RX: on|off  TX: on|off\", got %q", l.text)
			}
			rx, err1 := parseOnOff(l, "RX", f[len(f)-3])
			tx, err2 := parseOnOff(l, "TX", f[len(f)-1])
			if err := errors.Join(err1, err2); err != nil {
				return Coalesce{}, err
			}
			if f[0] == "Adaptive" {
				c.AdaptiveRX, c.AdaptiveTX, seenAdaptive = rx, tx, true
			}
			continue
		}
		k, v, ok := keyValue(l.text)
		if !ok {
			return Coalesce{}, syntaxf(l.n, "want \"parameter: value\", got %q", l.text)
		}
		name, known := coalesceByLabel[k]
		if v == "n/a" || !known {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return Coalesce{}, syntaxf(l.n, "%s: want a number or n/a, got %q", k, v)
		}
		c.Params[name] = uint32(n)
	}
	if !seenAdaptive {
		return Coalesce{}, syntaxf(1, "no \"Adaptive RX: ...  TX: ...\" line")
	}
	return c, nil
}

// ParseRSS reads `ethtool -x IFACE`.
func ParseRSS(r io.Reader) (RSS, error) {
	ls, err := readLines(r)
	if err != nil {
		return RSS{}, err
	}
	ls = nonBlank(ls)
	var rss RSS
	head := ls[0].text
	const pre, post = "RX flow hash indirection table for ", " RX ring(s):"
	_, rings, ok := strings.Cut(head, " with ")
	if !strings.HasPrefix(head, pre) || !ok || !strings.HasSuffix(rings, post) {
		return RSS{}, syntaxf(ls[0].n, "want %q, got %q", pre+"IFACE with N"+post, head)
	}
	if rss.RXRings, err = strconv.Atoi(strings.TrimSuffix(rings, post)); err != nil {
		return RSS{}, syntaxf(ls[0].n, "bad ring count in %q", head)
	}
	section := "table"
	for _, l := range ls[1:] {
		switch l.text {
		case "RSS hash key:":
			section = "key"
			continue
		case "RSS hash function:":
			section = "hfunc"
			continue
		case "RSS input transformation:":
			section = "xfrm" // ethtool 6.8+; linerate does not model it
			continue
		case "Operation not supported":
			if section == "hfunc" {
				rss.HashFuncs = nil
			}
			continue
		}
		switch section {
		case "table":
			idx, vals, ok := strings.Cut(l.text, ":")
			start, err := strconv.Atoi(idx)
			if !ok || err != nil || start != len(rss.Indirection) {
				return RSS{}, syntaxf(l.n, "want indirection row %d, got %q", len(rss.Indirection), l.text)
			}
			for _, f := range strings.Fields(vals) {
				q, err := strconv.ParseUint(f, 10, 32)
				if err != nil {
					return RSS{}, syntaxf(l.n, "bad queue %q", f)
				}
				rss.Indirection = append(rss.Indirection, uint32(q))
			}
		case "key":
			k, err := hex.DecodeString(strings.ReplaceAll(l.text, ":", ""))
			if err != nil || len(rss.Key) > 0 {
				return RSS{}, syntaxf(l.n, "want a hash key like 6d:5a:..., got %q", l.text)
			}
			rss.Key = k
		case "hfunc", "xfrm":
			name, v, ok := keyValue(l.text)
			if !ok {
				return RSS{}, syntaxf(l.n, "want \"name: on|off\", got %q", l.text)
			}
			on, err := parseOnOff(l, name, v)
			if err != nil {
				return RSS{}, err
			}
			if section == "hfunc" {
				if rss.HashFuncs == nil {
					rss.HashFuncs = map[string]bool{}
				}
				rss.HashFuncs[name] = on
			}
		}
	}
	return rss, nil
}

// ParseFlowHash reads `ethtool -n IFACE rx-flow-hash FT`: the flow type it
// names and the fields hashed.
func ParseFlowHash(r io.Reader) (FlowType, FlowHash, error) {
	ls, err := readLines(r)
	if err != nil {
		return "", 0, err
	}
	ls = nonBlank(ls)
	head := ls[0].text
	var ft FlowType
	for t, title := range flowTitle {
		if strings.HasPrefix(head, title+" ") {
			ft = t
			head = strings.TrimPrefix(head, title+" ")
		}
	}
	if ft == "" {
		return "", 0, syntaxf(ls[0].n, "want \"TCP|UDP over IPV4|IPV6 flows ...\", got %q", ls[0].text)
	}
	switch head {
	case "- All matching flows discarded on RX":
		if len(ls) > 1 {
			return "", 0, syntaxf(ls[1].n, "unexpected %q after discard", ls[1].text)
		}
		return ft, HashDiscard, nil
	case "use these fields for computing Hash flow key:":
	default:
		return "", 0, syntaxf(ls[0].n, "unexpected %q", ls[0].text)
	}
	var h FlowHash
	for i, l := range ls[1:] {
		if l.text == "None" && i == 0 && len(ls) == 2 {
			break
		}
		bit, ok := ParseFlowHashLine(l.text)
		if !ok {
			return "", 0, syntaxf(l.n, "unknown hash field %q", l.text)
		}
		h |= bit
	}
	return ft, h, nil
}

// ParseStats reads `ethtool -S IFACE`.
func ParseStats(r io.Reader) (Stats, error) {
	ls, err := readLines(r)
	if err != nil {
		return nil, err
	}
	ls = nonBlank(ls)
	if ls[0].text != "NIC statistics:" {
		return nil, syntaxf(ls[0].n, "want \"NIC statistics:\", got %q", ls[0].text)
	}
	var out Stats
	for _, l := range ls[1:] {
		// Names may hold colons ("[0]: rx_bytes"): the value follows the
		// last ": ".
		i := strings.LastIndex(l.text, ": ")
		if i < 0 {
			if strings.HasSuffix(l.text, ":") && !l.indented() {
				continue // another section's title
			}
			return nil, syntaxf(l.n, "want \"name: value\", got %q", l.text)
		}
		v, err := strconv.ParseUint(strings.TrimSpace(l.text[i+2:]), 10, 64)
		if err != nil {
			return nil, syntaxf(l.n, "%s: want a count, got %q", l.text[:i], l.text[i+2:])
		}
		out = append(out, Stat{Name: l.text[:i], Value: v})
	}
	return out, nil
}
