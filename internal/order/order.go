// Package order sorts slices with one copy of the sorting code for every
// element type.
//
// slices.SortFunc is compiled once for each element type's shape: every
// struct sorted by value carries its own pdqsort, heap sort and insertion
// sort, about 14 KB of code on mips each, and the small build for routers
// counts its flash (docs/openwrt.md). The sorts here go through
// sort.Slice, whose one body swaps by reflection; what is sorted in
// linerate is short (CPUs, IRQs, queues, rows of a result), so the swap's
// cost is never seen. Hot paths keep slices.Sort on their own types.
package order

import "sort"

// Sort sorts s in place by cmp, as slices.SortFunc does (not stable).
func Sort[S ~[]E, E any](s S, cmp func(a, b E) int) {
	sort.Slice(s, func(i, j int) bool { return cmp(s[i], s[j]) < 0 })
}

// SortStable sorts s in place by cmp, keeping equal elements in their
// order, as slices.SortStableFunc does.
func SortStable[S ~[]E, E any](s S, cmp func(a, b E) int) {
	sort.SliceStable(s, func(i, j int) bool { return cmp(s[i], s[j]) < 0 })
}
