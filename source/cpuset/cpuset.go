// Package cpuset converts between the kernel's two ways of writing a set of
// CPUs: the hex mask of smp_affinity and rps_cpus ("f", "00000000,00000003")
// and the list of smp_affinity_list ("0-3,5").
//
// A set is a sorted []int of CPU ids without duplicates. Parsers return a
// non-nil empty slice for an empty set, so callers can tell "read, and empty"
// from "not read" (nil).
package cpuset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"linerate/source/tree"
)

// MaxCPU bounds the CPU ids the parsers accept. The kernel's NR_CPUS tops
// out at 8192 (arch/x86/Kconfig, MAXSMP); the margin keeps a typo such as
// "0-4000000000" from allocating gigabytes.
const MaxCPU = 1 << 16

// wordBits is the width of one comma-separated word of a kernel mask
// (lib/bitmap-str.c prints and parses masks in 32-bit chunks).
const wordBits = 32

// ParseMask parses a hex CPU mask as the kernel prints it: comma-separated
// 32-bit words, most significant first. "0" and "" give an empty set.
// Each word holds at most eight hex digits, as the kernel requires; an
// optional "0x" prefix is accepted.
func ParseMask(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	cpus := []int{}
	if s == "" {
		return cpus, nil
	}
	words := strings.Split(s, ",")
	if len(words)*wordBits > MaxCPU {
		return nil, fmt.Errorf("cpu mask %q: more than %d CPUs", tree.Clip(s), MaxCPU)
	}
	// Walk from the least significant word (the last) up.
	for i := len(words) - 1; i >= 0; i-- {
		w := words[i]
		if w == "" || len(w) > 8 {
			return nil, fmt.Errorf("cpu mask %q: word %q is not 1 to 8 hex digits", tree.Clip(s), tree.Clip(w))
		}
		v, err := strconv.ParseUint(w, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("cpu mask %q: word %q is not hex", tree.Clip(s), w)
		}
		base := (len(words) - 1 - i) * wordBits
		for bit := 0; bit < wordBits; bit++ {
			if v&(1<<bit) != 0 {
				cpus = append(cpus, base+bit)
			}
		}
	}
	slices.Sort(cpus)
	return cpus, nil
}

// FormatMask prints the set as a hex mask the kernel accepts ("c", "1,00000000").
// The most significant word is printed without leading zeros, the others
// padded to eight digits; an empty set is "0". Negative ids are ignored.
func FormatMask(cpus []int) string {
	top := -1
	for _, c := range cpus {
		top = max(top, c)
	}
	if top < 0 {
		return "0"
	}
	words := make([]uint32, top/wordBits+1)
	for _, c := range cpus {
		if c >= 0 {
			words[c/wordBits] |= 1 << (c % wordBits)
		}
	}
	var b strings.Builder
	for i := len(words) - 1; i >= 0; i-- {
		if i == len(words)-1 {
			b.WriteString(strconv.FormatUint(uint64(words[i]), 16))
			continue
		}
		fmt.Fprintf(&b, ",%08x", words[i])
	}
	return b.String()
}

// ParseList parses "0-3,5,7-8"; "" gives an empty set. Ranges may repeat or
// overlap; the result is sorted without duplicates.
func ParseList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	cpus := []int{}
	if s == "" {
		return cpus, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseID(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", tree.Clip(s), err)
		}
		b := a
		if isRange {
			if b, err = parseID(hi); err != nil {
				return nil, fmt.Errorf("cpu list %q: %w", tree.Clip(s), err)
			}
			if b < a {
				return nil, fmt.Errorf("cpu list %q: range %q runs backwards", tree.Clip(s), tree.Clip(part))
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

func parseID(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a CPU number", tree.Clip(s))
	}
	if n >= MaxCPU {
		return 0, fmt.Errorf("CPU %d is beyond %d", n, MaxCPU-1)
	}
	return n, nil
}

// FormatList prints "0-3,5"; an empty set is "". The input need not be
// sorted and may hold duplicates; negative ids are ignored.
func FormatList(cpus []int) string {
	s := slices.Clone(cpus)
	slices.Sort(s)
	s = slices.Compact(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] < 0 {
			i++
			continue
		}
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return b.String()
}
