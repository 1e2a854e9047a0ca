package procfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"linerate/source/tree"
)

// maxLine bounds one line of a /proc file. The "intr" line of /proc/stat
// holds one number per IRQ and can run past bufio's default 64 KiB on big
// machines.
const maxLine = 16 << 20

// lines calls fn for each line of r with its 1-based number. An error from
// fn is returned as a *tree.ParseError holding the line number, and ends the
// reading; an error that fn marks with skip leaves that one line out and the
// reading goes on: those lines come back together as a *tree.SkippedError
// once the file is read.
func lines(r io.Reader, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	n := 0
	var skipped []*tree.ParseError
	for sc.Scan() {
		n++
		err := fn(n, sc.Text())
		var sl skipLine
		switch {
		case err == nil:
		case errors.As(err, &sl):
			skipped = append(skipped, &tree.ParseError{Line: n, Err: sl.err})
		default:
			return &tree.ParseError{Line: n, Err: err}
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return &tree.ParseError{Line: n + 1, Err: fmt.Errorf("a line longer than %d bytes", maxLine)}
	} else if err != nil {
		return err
	}
	if len(skipped) > 0 {
		return &tree.SkippedError{Lines: skipped}
	}
	return nil
}

// skipLine marks an error about one row of a file that the rest of the file
// does not depend on (an IRQ, a CPU, an interface): the row is left out.
type skipLine struct{ err error }

func (s skipLine) Error() string { return s.err.Error() }

// skip marks err as one row's: see skipLine.
func skip(err error) error { return skipLine{err} }

// skipf is skip(fmt.Errorf(...)).
func skipf(format string, a ...any) error { return skip(fmt.Errorf(format, a...)) }

// ParseStat parses /proc/stat and returns its per-CPU lines ("cpu0 ...",
// "cpu1 ..."), dropping the aggregate "cpu" line and everything else.
// Columns a kernel does not print (old kernels stop before steal) are zero;
// guest time is already part of user time and is not kept.
func ParseStat(r io.Reader) ([]CPUTimes, error) {
	var out []CPUTimes
	err := lines(r, func(_ int, line string) error {
		f := strings.Fields(line)
		if len(f) == 0 || len(f[0]) <= 3 || !strings.HasPrefix(f[0], "cpu") {
			return nil
		}
		id, err := strconv.Atoi(f[0][3:])
		if err != nil || id < 0 {
			return nil // some other line that starts with "cpu"
		}
		if len(f) < 5 {
			return skipf("%s has %d columns, want at least 4", tree.Clip(f[0]), len(f)-1)
		}
		c := CPUTimes{ID: id}
		dst := []*uint64{&c.User, &c.Nice, &c.System, &c.Idle, &c.IOWait, &c.IRQ, &c.SoftIRQ, &c.Steal}
		for i, s := range f[1:] {
			if i >= len(dst) {
				break
			}
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return skipf("%s column %d: %q is not a number", tree.Clip(f[0]), i+1, tree.Clip(s))
			}
			*dst[i] = v
		}
		out = append(out, c)
		return nil
	})
	if len(out) == 0 && (err == nil || errors.As(err, new(*tree.SkippedError))) {
		err = errors.New("no usable cpuN lines")
	}
	return out, err
}

// field is one white-space separated word of a line and where it sits.
type field struct {
	s          string
	start, end int
}

func fieldsAt(s string) []field {
	var out []field
	i := 0
	for i < len(s) {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		j := i
		for j < len(s) && !isSpace(s[j]) {
			j++
		}
		if j > i {
			out = append(out, field{s[i:j], i, j})
		}
		i = j
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// parseCPUHeader reads a "CPU0 CPU1 ..." header.
func parseCPUHeader(line string) ([]int, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return nil, errors.New("empty CPU header")
	}
	cpus := make([]int, 0, len(f))
	for _, s := range f {
		id, err := strconv.Atoi(strings.TrimPrefix(s, "CPU"))
		if !strings.HasPrefix(s, "CPU") || err != nil || id < 0 {
			return nil, fmt.Errorf("header word %q is not CPUn", tree.Clip(s))
		}
		cpus = append(cpus, id)
	}
	return cpus, nil
}

// x86HWIRQ matches the hwirq column of x86 kernels, which glue the flow
// handler's name to the number ("2097153-edge", "9-fasteoi"), or print only
// "-edge" when the chip has no IRQ domain (kernel/irq/proc.c show_interrupts).
var x86HWIRQ = regexp.MustCompile(`^[0-9]*-\S+$`)

// armTrigger matches the "Level"/"Edge" column that kernels built with
// CONFIG_GENERIC_IRQ_SHOW_LEVEL (ARM, RISC-V) print after the hwirq.
var armTrigger = regexp.MustCompile(`^(Level|Edge)(-\S+)?$`)

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// splitIRQTail splits what follows the counts of a numbered row into chip,
// hwirq, trigger and actions. The chip name may contain spaces ("BRCM STB
// PCIe MSI" on a Raspberry Pi 4), so the hwirq column is found first:
//
//	x86:  "PCI-MSI 2097153-edge      enp4s0-rx-0"
//	ARM:  "GICv2 189 Level     eth0"
//	ARM:  "BRCM STB PCIe MSI 524288 Edge      eth1"
//	MSI-X per device: "PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0"
func splitIRQTail(tail string) (chip, hwirq, trigger, actions string) {
	f := fieldsAt(tail)
	if len(f) == 0 {
		return "", "", "", ""
	}
	rest := func(i int) string {
		if i >= len(f) {
			return ""
		}
		return strings.TrimSpace(tail[f[i].start:])
	}
	chipTo := func(h int) string { return tail[f[0].start:f[h-1].end] }
	for h := 1; h < len(f); h++ {
		if x86HWIRQ.MatchString(f[h].s) {
			return chipTo(h), f[h].s, "", rest(h + 1)
		}
		if isDigits(f[h].s) && h+1 < len(f) && armTrigger.MatchString(f[h+1].s) {
			return chipTo(h), f[h].s, f[h+1].s, rest(h + 2)
		}
	}
	// No trigger column: take the first number after the chip as the hwirq.
	for h := 1; h < len(f); h++ {
		if isDigits(f[h].s) {
			return chipTo(h), f[h].s, "", rest(h + 1)
		}
	}
	return f[0].s, "", "", rest(1)
}

// ParseInterrupts parses /proc/interrupts: a header naming the CPU columns,
// then numbered rows (chip, hwirq and action names after the counts) and
// named rows such as NMI, LOC, ERR and MIS. ERR and MIS are system-wide and
// have a single count; other named rows have one per CPU.
func ParseInterrupts(r io.Reader) (Interrupts, error) {
	var out Interrupts
	err := lines(r, func(n int, line string) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		if out.CPUs == nil {
			cpus, err := parseCPUHeader(line)
			if err != nil {
				return err
			}
			out.CPUs = cpus
			return nil
		}
		label, after, ok := strings.Cut(line, ":")
		label = strings.TrimSpace(label)
		if !ok || label == "" {
			return skipf("no \"N:\" label in %q", tree.Clip(line))
		}
		row := InterruptRow{Label: label, Number: -1}
		if v, err := strconv.Atoi(label); err == nil && v >= 0 {
			row.Number = v
		}
		f := fieldsAt(after)
		tail := 0 // where the text after the counts starts
		for _, w := range f {
			if len(row.Counts) == len(out.CPUs) {
				break
			}
			v, err := strconv.ParseUint(w.s, 10, 64)
			if err != nil {
				break
			}
			row.Counts = append(row.Counts, v)
			tail = w.end
		}
		rest := after[tail:]
		if row.Number >= 0 {
			if len(row.Counts) != len(out.CPUs) {
				return skipf("irq %d has %d counts for %d CPUs", row.Number, len(row.Counts), len(out.CPUs))
			}
			row.Chip, row.HWIRQ, row.Trigger, row.Actions = splitIRQTail(rest)
		} else {
			row.Actions = strings.TrimSpace(rest)
		}
		out.Rows = append(out.Rows, row)
		return nil
	})
	if err == nil && out.CPUs == nil {
		err = errors.New("no CPU header")
	}
	return out, err
}

// ParseSoftIRQs parses /proc/softirqs: row name ("NET_RX") → count per CPU
// column of the header.
func ParseSoftIRQs(r io.Reader) (map[string][]uint64, error) {
	var cpus []int
	out := map[string][]uint64{}
	err := lines(r, func(_ int, line string) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		if cpus == nil {
			var err error
			cpus, err = parseCPUHeader(line)
			return err
		}
		name, after, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return skipf("no \"NAME:\" label in %q", tree.Clip(line))
		}
		f := strings.Fields(after)
		if len(f) != len(cpus) {
			return skipf("%s has %d counts for %d CPUs", tree.Clip(name), len(f), len(cpus))
		}
		counts := make([]uint64, len(f))
		for i, s := range f {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return skipf("%s: %q is not a number", tree.Clip(name), tree.Clip(s))
			}
			counts[i] = v
		}
		out[name] = counts
		return nil
	})
	if err == nil && cpus == nil {
		err = errors.New("no CPU header")
	}
	return out, err
}

// ParseSoftnet parses /proc/net/softnet_stat: one row of hex columns per
// online CPU (net/core/net-procfs.c softnet_seq_show). Kernels print 9 to 11
// columns up to 5.9, 13 from 5.10 (backlog length, then the CPU id) and 15
// from 6.5 (the backlog split into input and process queues). Without the CPU
// id column the row index stands for it, which is wrong only when CPUs are
// offline.
func ParseSoftnet(r io.Reader) ([]Softnet, error) {
	var out []Softnet
	row := 0 // rows seen, those left out included: the CPU of old kernels' rows
	err := lines(r, func(_ int, line string) error {
		f := strings.Fields(line)
		if len(f) == 0 {
			return nil
		}
		row++
		if len(f) < 9 {
			return skipf("%d columns, want at least 9", len(f))
		}
		col := make([]uint64, len(f))
		for i, s := range f {
			v, err := strconv.ParseUint(s, 16, 64)
			if err != nil {
				return skipf("column %d: %q is not hex", i+1, tree.Clip(s))
			}
			col[i] = v
		}
		at := func(i int) uint64 {
			if i < len(col) {
				return col[i]
			}
			return 0
		}
		s := Softnet{
			CPU:         row - 1,
			Processed:   col[0],
			Dropped:     col[1],
			TimeSqueeze: col[2],
			ReceivedRPS: at(9),
			FlowLimit:   at(10),
			BacklogLen:  at(11),
			InputQLen:   at(13),
			ProcessQLen: at(14),
		}
		if len(col) >= 13 {
			s.CPU = int(col[12])
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// netDevColumns is how many numbers follow "IFACE:" in /proc/net/dev.
const netDevColumns = 16

// ParseNetDev parses /proc/net/dev: interface → its 16 counters. The two
// header lines (they hold '|') are skipped. Interface names cannot contain
// ':' (net/core/dev.c dev_valid_name), and a long counter can touch the
// colon ("eth0:123456789"), so the line is cut at its first colon.
func ParseNetDev(r io.Reader) (map[string]NetDev, error) {
	out := map[string]NetDev{}
	err := lines(r, func(_ int, line string) error {
		if strings.Contains(line, "|") || strings.TrimSpace(line) == "" {
			return nil
		}
		name, after, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return skipf("no \"IFACE:\" in %q", tree.Clip(line))
		}
		f := strings.Fields(after)
		if len(f) != netDevColumns {
			return skipf("%s has %d columns, want %d", tree.Clip(name), len(f), netDevColumns)
		}
		var d NetDev
		dst := []*uint64{
			&d.RxBytes, &d.RxPackets, &d.RxErrs, &d.RxDrop, &d.RxFifo, &d.RxFrame, &d.RxCompressed, &d.RxMulticast,
			&d.TxBytes, &d.TxPackets, &d.TxErrs, &d.TxDrop, &d.TxFifo, &d.TxColls, &d.TxCarrier, &d.TxCompressed,
		}
		for i, s := range f {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return skipf("%s column %d: %q is not a number", tree.Clip(name), i+1, tree.Clip(s))
			}
			*dst[i] = v
		}
		out[name] = d
		return nil
	})
	return out, err
}

// ParseSNMP parses /proc/net/snmp (and /proc/net/netstat, which has the same
// shape): pairs of lines, the first naming the fields of a section, the
// second holding their values ("Udp: InDatagrams NoPorts ..." then
// "Udp: 51 0 ..."). Negative values are left out: only Tcp MaxConn has one
// (-1, no limit), and it is a setting, not a counter.
func ParseSNMP(r io.Reader) (map[string]map[string]uint64, error) {
	out := map[string]map[string]uint64{}
	var names []string
	var section string
	header := 0 // the line of names
	err := lines(r, func(n int, line string) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		sec, after, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(sec) == "" {
			return skipf("no \"Section:\" in %q", tree.Clip(line))
		}
		f := strings.Fields(after)
		if names == nil {
			names, section, header = f, sec, n
			if names == nil {
				names = []string{}
			}
			return nil
		}
		if sec != section {
			// The header before had no values: this line starts anew.
			prev := section
			names, section, header = f, sec, n
			return skipf("%s: header line is followed by %s", tree.Clip(prev), tree.Clip(sec))
		}
		defer func() { names = nil }()
		if len(f) != len(names) {
			return skipf("%s: %d values for %d names", tree.Clip(sec), len(f), len(names))
		}
		m := out[sec]
		if m == nil {
			m = map[string]uint64{}
			out[sec] = m
		}
		var bad error // the first value that is not a number; the others are kept
		for i, s := range f {
			if strings.HasPrefix(s, "-") {
				if _, err := strconv.ParseInt(s, 10, 64); err != nil && bad == nil {
					bad = skipf("%s %s: %q is not a number", tree.Clip(sec), tree.Clip(names[i]), tree.Clip(s))
				}
				continue
			}
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				if bad == nil {
					bad = skipf("%s %s: %q is not a number", tree.Clip(sec), tree.Clip(names[i]), tree.Clip(s))
				}
				continue
			}
			m[names[i]] = v
		}
		return bad
	})
	if names != nil {
		last := &tree.ParseError{Line: header, Err: fmt.Errorf("%s: header line without values", tree.Clip(section))}
		var sk *tree.SkippedError
		switch {
		case err == nil:
			err = &tree.SkippedError{Lines: []*tree.ParseError{last}}
		case errors.As(err, &sk):
			sk.Lines = append(sk.Lines, last)
		}
	}
	return out, err
}

// ParsePeakRSS reads VmHWM, the peak resident memory, from a process's
// status file (/proc/PID/status), in bytes. It is the peak of the
// process's own memory since it last called exec, where getrusage's
// ru_maxrss also keeps the peak of the process it was forked from (the
// kernel carries it across exec): a program started by a large one would
// report the larger's memory as its own.
func ParsePeakRSS(r io.Reader) (int64, error) {
	var kib int64 = -1
	err := lines(r, func(_ int, line string) error {
		v, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			return nil
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return fmt.Errorf("VmHWM: %q: want a number of kB", tree.Clip(strings.TrimSpace(v)))
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 || n > 1<<40 {
			return fmt.Errorf("VmHWM: %q: want a number of kB", tree.Clip(f[0]))
		}
		kib = n
		return nil
	})
	switch {
	case err != nil:
		return 0, err
	case kib < 0:
		return 0, errors.New("no VmHWM (a kernel thread, or not a status file)")
	}
	return kib * 1024, nil
}

// ParseProcessStat parses a process's stat file (/proc/PID/stat, one
// line) and returns the CPU time its threads have used, in USER_HZ ticks:
// utime and stime, fields 14 and 15 of proc(5). The command name (field
// 2) is in parentheses and may hold spaces and parentheses itself, so the
// fields are counted from the last ')'.
func ParseProcessStat(r io.Reader) (ProcessTimes, error) {
	var pt ProcessTimes
	seen := false
	err := lines(r, func(n int, line string) error {
		if n > 1 {
			return errors.New("more than one line: not a process's stat file")
		}
		i := strings.LastIndexByte(line, ')')
		if i < 0 {
			return fmt.Errorf("no ')' closing the command name in %q", tree.Clip(line))
		}
		f := strings.Fields(line[i+1:])
		// f[0] is field 3 (state): utime is field 14, stime 15.
		if len(f) < 13 {
			return fmt.Errorf("%d fields after the command name, want at least 13 (utime and stime are fields 14 and 15)", len(f))
		}
		u, uerr := strconv.ParseUint(f[11], 10, 64)
		s, serr := strconv.ParseUint(f[12], 10, 64)
		if uerr != nil || serr != nil {
			return fmt.Errorf("utime %q, stime %q: want counts of ticks", tree.Clip(f[11]), tree.Clip(f[12]))
		}
		pt, seen = ProcessTimes{User: u, System: s}, true
		return nil
	})
	switch {
	case err != nil:
		return ProcessTimes{}, err
	case !seen:
		return ProcessTimes{}, errors.New("empty: not a process's stat file")
	}
	return pt, nil
}
