package ethtool

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"linerate/source/tree"
)

// The Parse functions read the text the ethtool command prints, as a person
// would paste it: tabs or spaces, the ioctl layouts of ethtool 3.x-5.x and
// the netlink layouts of 5.6 and later (layouts.md in this directory says
// what changed when, from ethtool's history). A text that is one of
// ethtool's error lines ("Operation not supported", "netlink error:
// Operation not supported", "Cannot get ...: Operation not supported", "no
// stats available") is reported as ErrNotSupported; any other error line as
// a failure carrying its text.
//
// They degrade rather than fail. A line a parser does not understand makes
// the one value it held unknown and is reported as a Warning naming the
// line; the rest of the output is read. Only text that holds nothing a
// parser can use (no title, no section, not one value) is a *SyntaxError,
// which makes the whole item unknown.

// Warning is a line of ethtool's output that a parser did not understand.
// The value the line held is unknown: left out of a list or a map, or left
// zero in a field of a struct; Field names it as ethtool labels it.
type Warning struct {
	// Line is 1-based; 0 when the warning is about the text as a whole
	// (a section that is missing).
	Line int `json:"line,omitempty"`
	// Field is the value left unknown ("RX", "Current hardware settings
	// RX", "rx-usecs", "indirection table"), "" when the line named
	// nothing linerate reads.
	Field string `json:"field,omitempty"`
	Why   string `json:"why"`
}

func (w Warning) String() string {
	s := w.Why
	if w.Field != "" {
		s = w.Field + ": " + s
	}
	if w.Line > 0 {
		return fmt.Sprintf("line %d: %s", w.Line, s)
	}
	return s
}

// warnings collects the Warnings of one parse.
type warnings []Warning

func (ws *warnings) add(line int, field, format string, args ...any) {
	*ws = append(*ws, Warning{Line: line, Field: field, Why: fmt.Sprintf(format, args...)})
}

// unknownLine records a line in none of the forms a parser knows.
func (ws *warnings) unknownLine(l line) {
	ws.add(l.n, "", "not a line ethtool prints here: %q", tree.Clip(l.text))
}

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
	const maxLine = 4 << 20
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	var out []line
	for sc.Scan() {
		raw := strings.TrimRight(sc.Text(), "\r")
		out = append(out, line{n: len(out) + 1, raw: raw, text: strings.TrimSpace(raw)})
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, syntaxf(len(out)+1, "a line longer than %d bytes", maxLine)
	} else if err != nil {
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
// into the first. Only that: an indented ": off" is a value (an RSS hash
// function with no name), not a continuation.
func joinContinuations(ls []line) []line {
	out := ls[:0:0]
	for _, l := range ls {
		if strings.HasPrefix(l.raw, ": ") && len(out) > 0 && strings.HasPrefix(out[len(out)-1].text, "Cannot ") {
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
	msg = tree.ClipTo(msg, 200)
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
func skipTitle(ls []line, prefixes ...string) []line {
	for _, p := range prefixes {
		if len(ls) > 0 && strings.HasPrefix(ls[0].text, p) {
			return ls[1:]
		}
	}
	return ls
}

func parseYesNo(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "yes":
		return true, true
	case "no":
		return false, true
	}
	return false, false
}

// parseOnOff reads on, off and n/a (netlink ethtool prints n/a for a flag
// the driver does not report, which reads as off).
func parseOnOff(v string) (bool, bool) {
	switch v {
	case "on":
		return true, true
	case "off", "n/a":
		return false, true
	}
	return false, false
}

// ParseDriverInfo reads `ethtool -i IFACE`. Keys it does not know are
// skipped; a line without a colon, or a supports-* line that is neither yes
// nor no, is a warning. Text without a "driver:" line is a *SyntaxError.
func ParseDriverInfo(r io.Reader) (DriverInfo, []Warning, error) {
	ls, err := readLines(r)
	if err != nil {
		return DriverInfo{}, nil, err
	}
	var d DriverInfo
	var ws warnings
	seen := false
	for _, l := range nonBlank(ls) {
		k, v, ok := keyValue(l.raw)
		if !ok {
			ws.unknownLine(l)
			continue
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
			var ok bool
			if *flag, ok = parseYesNo(v); !ok {
				ws.add(l.n, k, "want yes or no, got %q", tree.Clip(v))
			}
		}
	}
	if !seen {
		return DriverInfo{}, nil, syntaxf(1, "no \"driver:\" line")
	}
	return d, ws, nil
}

// linkKeys are the `ethtool IFACE` lines linerate reads; others (wake-on,
// message level, lanes, master-slave, SQI, link down events, PLCA) are
// skipped with their continuation lines.
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

// ParseLinkInfo reads `ethtool IFACE`. Text without the "Settings for
// IFACE:" title is a *SyntaxError; a value it cannot read is a warning and
// stays unknown (SpeedMbps 0, Duplex "", flags false).
func ParseLinkInfo(r io.Reader) (LinkInfo, []Warning, error) {
	ls, err := readLinesFrom(r, "Settings for ")
	if err != nil {
		return LinkInfo{}, nil, err
	}
	ls = nonBlank(ls)
	if !strings.HasPrefix(ls[0].text, "Settings for ") {
		return LinkInfo{}, nil, syntaxf(ls[0].n, "want \"Settings for IFACE:\", got %q", tree.Clip(ls[0].text))
	}
	var ws warnings
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
				return LinkInfo{}, nil, fmt.Errorf("%s: %w", l.text, ErrNotSupported)
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
			ws.unknownLine(l)
			last = nil
			continue
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
	for _, x := range []struct {
		k   string
		dst *bool
	}{
		{"Supports auto-negotiation", &li.SupportsAutoneg},
		{"Advertised auto-negotiation", &li.AdvertisedAutoneg},
		{"Link partner advertised auto-negotiation", &li.PartnerAutoneg},
	} {
		if e := values[x.k]; e != nil {
			var ok bool
			if *x.dst, ok = parseYesNo(e.value); !ok {
				ws.add(e.l.n, x.k, "want Yes or No, got %q", tree.Clip(e.value))
			}
		}
	}
	if e := values["Speed"]; e != nil && !strings.HasPrefix(e.value, "Unknown") {
		n, err := strconv.Atoi(strings.TrimSuffix(e.value, "Mb/s"))
		if err != nil || n < 0 {
			ws.add(e.l.n, "Speed", "want NMb/s or Unknown!, got %q", tree.Clip(e.value))
		} else {
			li.SpeedMbps = n
		}
	}
	if e := values["Duplex"]; e != nil {
		switch {
		case e.value == "Full" || e.value == "Half":
			li.Duplex = e.value
		case strings.HasPrefix(e.value, "Unknown"):
			li.Duplex = "Unknown"
		default:
			ws.add(e.l.n, "Duplex", "want Full, Half or Unknown!, got %q", tree.Clip(e.value))
		}
	}
	if e := values["Auto-negotiation"]; e != nil {
		var ok bool
		if li.Autoneg, ok = parseOnOff(e.value); !ok {
			ws.add(e.l.n, "Auto-negotiation", "want on or off, got %q", tree.Clip(e.value))
		}
	}
	if e := values["PHYAD"]; e != nil {
		if n, err := parsePHYAD(e.value); err != nil {
			ws.add(e.l.n, "PHYAD", "%v", err)
		} else {
			li.PHYAD = n
		}
	}
	if e := values["Link detected"]; e != nil {
		// "yes", "no", or "no (No cable)" with the extended state.
		v, _, _ := strings.Cut(e.value, " ")
		var ok bool
		if li.Link, ok = parseYesNo(v); !ok {
			ws.add(e.l.n, "Link detected", "want yes or no, got %q", tree.Clip(e.value))
		}
	}
	return li, ws, nil
}

// parsePHYAD reads the PHY address. ethtool 6.10 and later print it in
// hexadecimal, older releases in decimal (layouts.md): one digit reads the
// same either way, a digit a-f means hex, and two or more decimal digits
// could be either.
func parsePHYAD(v string) (int, error) {
	h, err := strconv.ParseUint(v, 16, 8)
	if err != nil {
		return 0, fmt.Errorf("want a number, got %q", tree.Clip(v))
	}
	d, err := strconv.ParseUint(v, 10, 8)
	if err != nil || d == h { // hex digits, or one decimal digit ("0", "07")
		return int(h), nil
	}
	return 0, fmt.Errorf("%q is %d in decimal (ethtool up to 6.9) but %d in hexadecimal (6.10 and later); which one printed it is unknown", tree.Clip(v), d, h)
}

// ParseFeatures reads `ethtool -k IFACE` (ethtool before 3.5 titled it
// "Offload parameters for IFACE:"). A line it cannot read is a warning and
// that feature is left out; text without one feature is a *SyntaxError.
func ParseFeatures(r io.Reader) (Features, []Warning, error) {
	ls, err := readLines(r)
	if err != nil {
		return nil, nil, err
	}
	ls = skipTitle(nonBlank(ls), "Features for ", "Offload parameters for ")
	var out Features
	var ws warnings
	parent := ""
	for _, l := range ls {
		name, rest, ok := keyValue(l.text)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			ws.unknownLine(l)
			continue
		}
		state, suffix, _ := strings.Cut(rest, " ")
		f := Feature{Name: name}
		switch state {
		case "on":
			f.On = true
		case "off":
		default:
			ws.add(l.n, name, "want on or off, got %q", tree.Clip(rest))
			continue
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
			// The state is known; what the marker says is not.
			ws.add(l.n, name, "unknown marker %q (read as changeable)", tree.Clip(suffix))
		}
		if l.indented() && parent != "" {
			f.Parent = parent
		} else {
			if l.indented() {
				ws.add(l.n, name, "indented under no group (read as a top-level feature)")
			}
			parent = name
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		n := 1
		if len(ls) > 0 {
			n = ls[0].n
		}
		return nil, nil, syntaxf(n, "no \"feature: on|off\" line")
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
	return out, ws, nil
}

// maxCur reads the two sections of `ethtool -g` and `ethtool -l`. keys maps
// a label to its place in the result; labels it does not model (RX Buf
// Len, CQE Size, TX Push, RX Push, TX push buff len, TCP data split) are
// skipped. "n/a" reads as 0, as does a value it cannot read (a warning).
// Text with neither section is a *SyntaxError.
func maxCur(r io.Reader, title string, keys map[string]int) (max, cur []uint32, _ []Warning, err error) {
	ls, err := readLines(r)
	if err != nil {
		return nil, nil, nil, err
	}
	ls = skipTitle(nonBlank(ls), title)
	max, cur = make([]uint32, len(keys)), make([]uint32, len(keys))
	var ws warnings
	var dst []uint32
	section := ""
	seenMax, seenCur := false, false
	for _, l := range ls {
		switch l.text {
		case "Pre-set maximums:":
			dst, seenMax, section = max, true, "Pre-set maximums"
			continue
		case "Current hardware settings:":
			dst, seenCur, section = cur, true, "Current hardware settings"
			continue
		}
		k, v, ok := keyValue(l.text)
		if !ok || dst == nil {
			ws.unknownLine(l)
			continue
		}
		i, known := keys[k]
		if !known || v == "n/a" {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			ws.add(l.n, section+" "+k, "want a number or n/a, got %q", tree.Clip(v))
			continue
		}
		dst[i] = uint32(n)
	}
	switch {
	case !seenMax && !seenCur:
		return nil, nil, nil, syntaxf(1, "want \"Pre-set maximums:\" and \"Current hardware settings:\" sections")
	case !seenMax:
		ws.add(0, "Pre-set maximums", "no \"Pre-set maximums:\" section (the maximums are unknown)")
	case !seenCur:
		ws.add(0, "Current hardware settings", "no \"Current hardware settings:\" section (the settings are unknown)")
	}
	return max, cur, ws, nil
}

// ParseRings reads `ethtool -g IFACE`.
func ParseRings(r io.Reader) (Rings, []Warning, error) {
	max, cur, ws, err := maxCur(r, "Ring parameters for ", map[string]int{"RX": 0, "RX Mini": 1, "RX Jumbo": 2, "TX": 3})
	if err != nil {
		return Rings{}, nil, err
	}
	return Rings{
		RXMax: max[0], RXMiniMax: max[1], RXJumboMax: max[2], TXMax: max[3],
		RX: cur[0], RXMini: cur[1], RXJumbo: cur[2], TX: cur[3],
	}, ws, nil
}

// ParseChannels reads `ethtool -l IFACE`.
func ParseChannels(r io.Reader) (Channels, []Warning, error) {
	max, cur, ws, err := maxCur(r, "Channel parameters for ", map[string]int{"RX": 0, "TX": 1, "Other": 2, "Combined": 3})
	if err != nil {
		return Channels{}, nil, err
	}
	return Channels{
		MaxRX: max[0], MaxTX: max[1], MaxOther: max[2], MaxCombined: max[3],
		RX: cur[0], TX: cur[1], Other: cur[2], Combined: cur[3],
	}, ws, nil
}

// coalesceByLabel maps every label ethtool prints to a CoalesceParams name:
// ethtool up to 4.19 and the netlink code from 5.8 print "rx-frame-low"
// where 5.0 to 5.7 print "rx-frames-low" (ethtool commit 66501a7).
var coalesceByLabel = func() map[string]string {
	m := make(map[string]string, 2*len(CoalesceParams))
	for _, p := range CoalesceParams {
		m[p] = p
		m[coalesceLabel(p)] = p
	}
	return m
}()

// coalesceOther are labels of `ethtool -c` that linerate does not model:
// the tx aggregation parameters (ethtool 6.3+). Up to 6.8 ethtool printed
// "tx-aggr-time-usecs" without its colon (fixed by ethtool commit 97173eb,
// released in 6.9), so these are also recognised as "LABEL<space>VALUE".
var coalesceOther = map[string]bool{
	"tx-aggr-max-bytes": true, "tx-aggr-max-frames": true, "tx-aggr-time-usecs": true,
}

// ParseCoalesce reads `ethtool -c IFACE`. A parameter printed as n/a is
// absent from Params, and so is one it cannot read (a warning).
// Parameters beyond CoalesceParams are skipped. Text with neither the
// "Adaptive RX: ...  TX: ..." line nor one parameter is a *SyntaxError.
func ParseCoalesce(r io.Reader) (Coalesce, []Warning, error) {
	ls, err := readLines(r)
	if err != nil {
		return Coalesce{}, nil, err
	}
	ls = skipTitle(nonBlank(ls), "Coalesce parameters for ")
	c := Coalesce{Params: map[string]uint32{}}
	var ws warnings
	seenAdaptive := false
	for _, l := range ls {
		if strings.HasPrefix(l.text, "Adaptive RX:") || strings.HasPrefix(l.text, "CQE mode RX:") {
			// "Adaptive RX: on  TX: off" (some old releases put one
			// space before TX), "CQE mode RX: n/a  TX: n/a" (5.15+).
			label, _, _ := strings.Cut(l.text, ":")
			if label == "Adaptive RX" {
				seenAdaptive = true // known, or warned about below
			}
			f := strings.Fields(l.text)
			n := len(f)
			if n < 4 || f[n-2] != "TX:" {
				ws.add(l.n, label, "want \"%s: on|off  TX: on|off\", got %q", label, tree.Clip(l.text))
				continue
			}
			rx, ok1 := parseOnOff(f[n-3])
			tx, ok2 := parseOnOff(f[n-1])
			if !ok1 || !ok2 {
				ws.add(l.n, label, "want on, off or n/a, got %q", tree.Clip(l.text))
				continue
			}
			if label == "Adaptive RX" {
				c.AdaptiveRX, c.AdaptiveTX = rx, tx
			}
			continue
		}
		k, v, ok := keyValue(l.text)
		if !ok {
			if f := strings.Fields(l.text); len(f) == 2 && coalesceOther[f[0]] {
				continue
			}
			ws.unknownLine(l)
			continue
		}
		name, known := coalesceByLabel[k]
		if v == "n/a" || !known {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			ws.add(l.n, k, "want a number or n/a, got %q", tree.Clip(v))
			continue
		}
		c.Params[name] = uint32(n)
	}
	if !seenAdaptive {
		if len(c.Params) == 0 {
			return Coalesce{}, nil, syntaxf(1, "no \"Adaptive RX: ...  TX: ...\" line and no parameter")
		}
		ws.add(0, "Adaptive RX", "no \"Adaptive RX: ...  TX: ...\" line (adaptive moderation is unknown)")
	}
	return c, ws, nil
}

// rssHeader is the first line of `ethtool -x`.
const rssPre, rssPost = "RX flow hash indirection table for ", " RX ring(s):"

// ParseRSS reads `ethtool -x IFACE`. A table row it cannot read makes the
// whole table unknown (nil Indirection, a warning): a table with a hole
// would send buckets to the wrong queues. A bad key leaves Key nil; a hash
// function line it cannot read is left out. Sections newer ethtool prints
// ("RSS input transformation:", 6.9) and unknown ones are skipped. Text
// without the "RX flow hash indirection table" title is a *SyntaxError.
func ParseRSS(r io.Reader) (RSS, []Warning, error) {
	ls, err := readLines(r)
	if err != nil {
		return RSS{}, nil, err
	}
	ls = nonBlank(ls)
	var rss RSS
	var ws warnings
	head := ls[0].text
	_, rings, ok := strings.Cut(head, " with ")
	if !strings.HasPrefix(head, rssPre) || !ok || !strings.HasSuffix(rings, rssPost) {
		return RSS{}, nil, syntaxf(ls[0].n, "want %q, got %q", rssPre+"IFACE with N"+rssPost, tree.Clip(head))
	}
	if rss.RXRings, err = strconv.Atoi(strings.TrimSuffix(rings, rssPost)); err != nil {
		ws.add(ls[0].n, "RX ring(s)", "bad ring count in %q", tree.Clip(head))
	}
	section := "table"
	badTable := false
	for _, l := range ls[1:] {
		switch l.text {
		case "RSS hash key:":
			section = "key"
			continue
		case "RSS hash function:":
			section = "hfunc"
			continue
		case "RSS input transformation:":
			section = "other" // ethtool 6.9+; linerate does not model it
			continue
		case "Operation not supported":
			continue // the driver has no such part
		}
		if !l.indented() && strings.HasSuffix(l.text, ":") && !strings.Contains(strings.TrimSuffix(l.text, ":"), ":") {
			ws.add(l.n, "", "unknown section %q skipped", tree.Clip(l.text))
			section = "other"
			continue
		}
		switch section {
		case "table":
			if badTable {
				continue
			}
			idx, vals, ok := strings.Cut(l.text, ":")
			start, err := strconv.Atoi(idx)
			if !ok || err != nil || start != len(rss.Indirection) {
				ws.add(l.n, "indirection table", "want row %d, got %q (the table is unknown)", len(rss.Indirection), tree.Clip(l.text))
				badTable = true
				continue
			}
			for _, f := range strings.Fields(vals) {
				q, err := strconv.ParseUint(f, 10, 32)
				if err != nil {
					ws.add(l.n, "indirection table", "bad queue %q (the table is unknown)", tree.Clip(f))
					badTable = true
					break
				}
				rss.Indirection = append(rss.Indirection, uint32(q))
			}
		case "key":
			k, err := hex.DecodeString(strings.ReplaceAll(l.text, ":", ""))
			if err != nil || len(rss.Key) > 0 || len(k) == 0 {
				ws.add(l.n, "RSS hash key", "want one line like 6d:5a:..., got %q (the key is unknown)", tree.Clip(l.text))
				rss.Key = nil
				section = "other"
				continue
			}
			rss.Key = k
		case "hfunc":
			name, v, ok := keyValue(l.text)
			on, okv := parseOnOff(v)
			if !ok || !okv {
				ws.add(l.n, "RSS hash function", "want \"name: on|off\", got %q", tree.Clip(l.text))
				continue
			}
			if rss.HashFuncs == nil {
				rss.HashFuncs = map[string]bool{}
			}
			rss.HashFuncs[name] = on
		}
	}
	if badTable {
		rss.Indirection = nil
	}
	return rss, ws, nil
}

// ParseFlowHash reads `ethtool -n IFACE rx-flow-hash FT`: the flow type it
// names and the fields hashed. The set of fields is one value: a field line
// it does not know makes it unknown, a *SyntaxError.
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
		return "", 0, syntaxf(ls[0].n, "want \"TCP|UDP over IPV4|IPV6 flows ...\", got %q", tree.Clip(ls[0].text))
	}
	switch head {
	case "- All matching flows discarded on RX":
		if len(ls) > 1 {
			return "", 0, syntaxf(ls[1].n, "unexpected %q after discard", tree.Clip(ls[1].text))
		}
		return ft, HashDiscard, nil
	case "use these fields for computing Hash flow key:":
	default:
		return "", 0, syntaxf(ls[0].n, "unexpected %q", tree.Clip(ls[0].text))
	}
	var h FlowHash
	for i, l := range ls[1:] {
		if l.text == "None" && i == 0 && len(ls) == 2 {
			break
		}
		bit, ok := ParseFlowHashLine(l.text)
		if !ok {
			return "", 0, syntaxf(l.n, "unknown hash field %q (the hashed fields are unknown)", tree.Clip(l.text))
		}
		h |= bit
	}
	return ft, h, nil
}

// ParseStats reads `ethtool -S IFACE`. A line it cannot read is a warning
// and that statistic is left out; text without the "NIC statistics:" title
// is a *SyntaxError.
func ParseStats(r io.Reader) (Stats, []Warning, error) {
	ls, err := readLines(r)
	if err != nil {
		return nil, nil, err
	}
	ls = nonBlank(ls)
	if ls[0].text != "NIC statistics:" {
		return nil, nil, syntaxf(ls[0].n, "want \"NIC statistics:\", got %q", tree.Clip(ls[0].text))
	}
	var out Stats
	var ws warnings
	for _, l := range ls[1:] {
		// Names may hold colons ("[0]: rx_bytes"): the value follows the
		// last ": ".
		i := strings.LastIndex(l.text, ": ")
		if i < 0 {
			if strings.HasSuffix(l.text, ":") && !l.indented() {
				continue // another section's title ("Standard stats for eth0:")
			}
			ws.unknownLine(l)
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(l.text[i+2:]), 10, 64)
		if err != nil {
			ws.add(l.n, l.text[:i], "want a count, got %q", tree.Clip(l.text[i+2:]))
			continue
		}
		out = append(out, Stat{Name: l.text[:i], Value: v})
	}
	return out, ws, nil
}
