// Package cpuset converts between the kernel's two ways of writing a set of
// CPUs: the hex mask of smp_affinity and rps_cpus ("f", "00000000,00000003")
// and the list of smp_affinity_list ("0-3,5").
package cpuset

// ParseMask parses a hex CPU mask as the kernel prints it: comma-separated
// 32-bit words, most significant first. "0" and "" give an empty set.
func ParseMask(s string) ([]int, error) { panic("todo: H1") }

// FormatMask prints the set as a hex mask the kernel accepts ("c", "1,00000000").
func FormatMask(cpus []int) string { panic("todo: H1") }

// ParseList parses "0-3,5,7-8"; "" gives an empty set.
func ParseList(s string) ([]int, error) { panic("todo: H1") }

// FormatList prints "0-3,5"; an empty set is "".
func FormatList(cpus []int) string { panic("todo: H1") }
