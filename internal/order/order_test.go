package order

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

type row struct {
	key, seq int
}

// Sort orders as slices.SortFunc does, and SortStable keeps rows of
// equal keys in the order they came.
func TestSortAgreesWithSlices(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 200 {
		in := make([]row, n)
		for i := range in {
			in[i] = row{key: r.IntN(10), seq: i}
		}
		byKey := func(a, b row) int { return cmp.Compare(a.key, b.key) }
		got, want := slices.Clone(in), slices.Clone(in)
		SortStable(got, byKey)
		slices.SortStableFunc(want, byKey)
		if !slices.Equal(got, want) {
			t.Fatalf("SortStable of %d rows: %v, want %v", n, got, want)
		}
		got = slices.Clone(in)
		Sort(got, byKey)
		if !slices.IsSortedFunc(got, byKey) {
			t.Fatalf("Sort of %d rows: %v is not sorted", n, got)
		}
	}
}
