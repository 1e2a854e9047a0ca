package jsonbudget

import (
	"encoding/json"
	"reflect"
)

// CostOf is what the walk counts for data decoded into t, with no limit.
func CostOf(data []byte, t reflect.Type) int64 {
	if !json.Valid(data) {
		return -1
	}
	w := &walker{data: data, limit: 1 << 62}
	if err := w.value(t); err != nil {
		return -1
	}
	return w.cost
}
