// Package jsonbudget decodes JSON that someone else may have written (a
// result file given to report or diagnose, findings and plans given to
// tune) within a budget of memory.
//
// encoding/json allocates what the text asks for: "[{},{},...]" decoded
// into a slice of a large struct takes hundreds of times its text, and
// neither json.Unmarshal nor json.Decoder has a limit on it. A cap on the
// text's size does not help: the cost is in what the text expands to.
// So before decoding, one pass over the text walks it alongside the Go
// type it will fill and adds up what the decode would allocate: each
// element of a slice (with the arrays its growth makes and drops) and
// what it holds, each pointer that a value fills, each map entry, each string, and
// what an interface would hold. Text that would cost more than its budget,
// or that nests deeper than MaxDepth, is refused before anything is
// allocated, naming where the budget ran out. No library does this: the
// streaming JSON decoders bound tokens, not what a type makes of them.
//
// The walk follows encoding/json's rules where they decide what is
// allocated (field names matched exactly, then folded; unknown fields
// skipped; null leaves a value alone; a value of the wrong kind is
// skipped), and counts high where it cannot tell (a key given twice is
// counted twice, an ambiguous field name as any of its fields).
package jsonbudget

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The budget of a text of n bytes: Factor times n, plus Base. What
// linerate writes spells the fields it fills, so its decoded form is a
// small multiple of its text, written with indentation or without
// (TestBudgetOfWhatLinerateWrites measures it); text that needs more than
// Factor times itself is made of empty or near-empty values.
const (
	Factor = 8
	Base   = 1 << 20
)

// MaxDepth is how deep objects and arrays may nest: deeper than anything
// linerate writes, far below what would strain a recursive decoder.
const MaxDepth = 64

// Limit is the budget of a text of n bytes.
func Limit(n int) int64 { return Factor*int64(n) + Base }

// Error is text refused before it was decoded: at Path (e.g.
// "intervals[349525].cpu"), its decode would have allocated more than
// Limit, or nested deeper than MaxDepth.
type Error struct {
	Path  string
	Limit int64
	Text  int // bytes of text
	Deep  bool
}

func (e *Error) Error() string {
	at := ""
	if e.Path != "" {
		at = " at " + e.Path
	}
	if e.Deep {
		return fmt.Sprintf("nested more than %d deep%s", MaxDepth, at)
	}
	return fmt.Sprintf("decoding would take more than %s (%d times its %s of text, and %s)%s: its values are emptier than anything linerate writes",
		mib(e.Limit), Factor, mib(int64(e.Text)), mib(Base), at)
}

func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", (n+1023)>>10)
	}
	return fmt.Sprintf("%d MiB", (n+1<<20-1)>>20)
}

// Unmarshal decodes data into v (a pointer) as json.Unmarshal does, once
// Check has found its cost within Limit(len(data)).
func Unmarshal(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return json.Unmarshal(data, v) // json's own InvalidUnmarshalError
	}
	if err := Check(data, t.Elem(), Limit(len(data))); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// Check walks data as decoded into a value of type t and returns an
// *Error when the decode would allocate more than limit bytes or nest
// deeper than MaxDepth. Text that is not JSON is left to json.Unmarshal
// to report: Check returns nil for it.
func Check(data []byte, t reflect.Type, limit int64) error {
	if !json.Valid(data) {
		return nil
	}
	w := &walker{data: data, limit: limit}
	if err := w.value(t); err != nil {
		return &Error{Path: w.where(), Limit: limit, Text: len(data), Deep: err == errDeep}
	}
	return nil
}

// growth is what an element of a slice costs, in times its size: a slice
// decoded grows by appending, so besides its final array it has made and
// dropped the smaller ones it outgrew (a garbage collector takes them back,
// but not before the heap has held them).
const growth = 4

// Costs of what an interface holds (encoding/json's map[string]any,
// []any, float64 and string): a map's header, an entry of a map (its key
// and value, with the table's slack and growth), an element of []any (an
// interface, with growth), a string's or a number's box.
const (
	mapCost      = 64
	mapEntryCost = 128
	anyElemCost  = growth * 16
	boxCost      = 16
)

type walker struct {
	data  []byte
	pos   int
	cost  int64
	limit int64
	path  []frame
}

// frame is one level of the path: an object's key (as a span of data) or
// an array's index.
type frame struct {
	key   [2]int
	index int
	array bool
}

type walkError string

func (e walkError) Error() string { return string(e) }

const (
	errDeep   = walkError("too deep")
	errBudget = walkError("over budget")
)

func (w *walker) add(n int64) error {
	if w.cost += n; w.cost > w.limit {
		return errBudget
	}
	return nil
}

// where is the path of the frames open when the walk stopped.
func (w *walker) where() string {
	var b strings.Builder
	for _, f := range w.path {
		switch {
		case f.array:
			fmt.Fprintf(&b, "[%d]", f.index)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			key := strings.ToValidUTF8(string(w.data[f.key[0]:f.key[1]]), "?")
			if len(key) > 40 {
				key = key[:40] + "..."
			}
			b.WriteString(key)
		}
	}
	return b.String()
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// value walks the value at w.pos as decoded into t; t nil skips it.
func (w *walker) value(t reflect.Type) error {
	w.space()
	if t == nil {
		return w.skip()
	}
	c := w.data[w.pos]
	if c == 'n' {
		w.pos += 4 // null: nothing is allocated
		return nil
	}
	for t.Kind() == reflect.Pointer {
		// A nil pointer is filled with a new value.
		t = t.Elem()
		if err := w.add(int64(t.Size())); err != nil {
			return err
		}
	}
	if decodesItself(t, c) {
		// Count its text, and a struct's fields as a decoder into an
		// alias of it would fill them.
		start := w.pos
		if t.Kind() == reflect.Struct && c == '{' {
			if err := w.object(t); err != nil {
				return err
			}
		} else if err := w.skip(); err != nil {
			return err
		}
		return w.add(int64(w.pos - start))
	}
	switch c {
	case '{':
		return w.object(t)
	case '[':
		return w.array(t)
	case '"':
		start := w.pos
		if err := w.skip(); err != nil {
			return err
		}
		n := int64(w.pos - start)
		switch t.Kind() {
		case reflect.String:
			return w.add(n)
		case reflect.Slice: // []byte from base64
			return w.add(n)
		case reflect.Interface:
			if t.NumMethod() == 0 {
				return w.add(boxCost + n)
			}
		}
		return nil
	case 't', 'f':
		return w.skip()
	default: // a number
		start := w.pos
		if err := w.skip(); err != nil {
			return err
		}
		switch t.Kind() {
		case reflect.String: // json.Number
			return w.add(int64(w.pos - start))
		case reflect.Interface:
			if t.NumMethod() == 0 {
				return w.add(boxCost)
			}
		}
		return nil
	}
}

// decodesItself says whether encoding/json hands a value starting with c
// to t's own UnmarshalJSON (or UnmarshalText, for a string).
func decodesItself(t reflect.Type, c byte) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(unmarshalerType) || c == '"' && pt.Implements(textUnmarshalerType)
}

// object walks an object as decoded into t: a struct's fields, a map's
// entries, or a map[string]any in an empty interface.
func (w *walker) object(t reflect.Type) error {
	var fields *structFields
	var elem reflect.Type
	entry := int64(0)
	switch {
	case t.Kind() == reflect.Struct:
		fields = fieldsOf(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
		entry = 2 * int64(t.Key().Size()+t.Elem().Size()+8)
		if err := w.add(mapCost); err != nil {
			return err
		}
	case t.Kind() == reflect.Interface && t.NumMethod() == 0:
		elem, entry = t, mapEntryCost
		if err := w.add(mapCost); err != nil {
			return err
		}
	default:
		return w.skip() // the wrong kind: json skips it
	}
	return w.members(false, func(_ int, key []byte) error {
		ft := elem
		if fields != nil {
			f := fields.lookup(key)
			ft = nil
			if f != nil {
				ft = f.typ
				if err := w.add(f.via); err != nil {
					return err
				}
			}
		} else if err := w.add(entry + int64(len(key))); err != nil {
			return err
		}
		return w.value(ft)
	})
}

// array walks an array as decoded into t: a slice (each element growth
// times its size), an array (its own storage), or a []any.
func (w *walker) array(t reflect.Type) error {
	var elem reflect.Type
	var each int64
	limit := -1
	switch {
	case t.Kind() == reflect.Slice:
		elem, each = t.Elem(), growth*int64(t.Elem().Size())
	case t.Kind() == reflect.Array:
		elem, limit = t.Elem(), t.Len()
	case t.Kind() == reflect.Interface && t.NumMethod() == 0:
		elem, each = t, anyElemCost
	default:
		return w.skip()
	}
	return w.members(true, func(i int, _ []byte) error {
		et := elem
		if limit >= 0 && i >= limit {
			et = nil // past a Go array's end: skipped
		}
		if err := w.add(each); err != nil {
			return err
		}
		return w.value(et)
	})
}

// members walks the members of the object or array at w.pos, calling
// member with w.pos at each one's value (past an object member's key,
// which the path holds, as it holds an array member's index).
func (w *walker) members(array bool, member func(i int, key []byte) error) error {
	if err := w.push(array); err != nil {
		return err
	}
	w.pos++ // { or [
	for i := 0; ; i++ {
		w.space()
		if c := w.data[w.pos]; c == '}' || c == ']' {
			w.pos++
			break
		}
		var key []byte
		if f := &w.path[len(w.path)-1]; array {
			f.index = i
		} else {
			ks := w.pos
			w.skipString()
			f.key = [2]int{ks + 1, w.pos - 1}
			key = w.data[ks+1 : w.pos-1]
			w.space()
			w.pos++ // :
		}
		if err := member(i, key); err != nil {
			return err
		}
		w.space()
		if w.data[w.pos] == ',' {
			w.pos++
		}
	}
	w.pop()
	return nil
}

func (w *walker) push(array bool) error {
	if len(w.path) >= MaxDepth {
		return errDeep
	}
	w.path = append(w.path, frame{array: array})
	return nil
}

func (w *walker) pop() { w.path = w.path[:len(w.path)-1] }

func (w *walker) space() {
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// skip passes over one value, costing nothing, however deep it nests
// (within MaxDepth).
func (w *walker) skip() error {
	w.space()
	switch c := w.data[w.pos]; c {
	case '{', '[':
		return w.members(c == '[', func(int, []byte) error { return w.skip() })
	case '"':
		w.skipString()
	default: // a number, true, false or null
		for w.pos < len(w.data) && !strings.ContainsRune(",}] \t\n\r", rune(w.data[w.pos])) {
			w.pos++
		}
	}
	return nil
}

// skipString passes over the string at w.pos, escapes and all.
func (w *walker) skipString() {
	w.pos++
	for w.data[w.pos] != '"' {
		if w.data[w.pos] == '\\' {
			w.pos++
		}
		w.pos++
	}
	w.pos++
}

// field is a field of a struct as encoding/json fills it: its JSON name,
// its type, how deep it is promoted from embedded structs, and what
// filling it allocates on the way (embedded structs through pointers).
type field struct {
	name  string
	typ   reflect.Type
	depth int
	via   int64
}

type structFields struct {
	exact  map[string]*field
	folded map[string]*field
}

// lookup finds the field a key fills: its exact name, else its folded
// one (encoding/json's order).
func (s *structFields) lookup(key []byte) *field {
	if f := s.exact[string(key)]; f != nil {
		return f
	}
	if len(s.folded) == 0 {
		return nil
	}
	return s.folded[fold(unquoted(key))]
}

var fieldCache sync.Map // reflect.Type → *structFields

func fieldsOf(t reflect.Type) *structFields {
	if s, ok := fieldCache.Load(t); ok {
		return s.(*structFields)
	}
	var all []field
	collect(t, 0, 0, map[reflect.Type]bool{}, &all)
	s := &structFields{exact: map[string]*field{}, folded: map[string]*field{}}
	for i := range all {
		f := &all[i]
		// The shallowest field of a name wins; among equals the first
		// (where encoding/json would drop both, costing one is high).
		if g := s.exact[f.name]; g == nil || f.depth < g.depth {
			s.exact[f.name] = f
		}
		if g := s.folded[fold(f.name)]; g == nil || f.depth < g.depth {
			s.folded[fold(f.name)] = f
		}
	}
	fieldCache.Store(t, s)
	return s
}

// collect gathers t's fields as encoding/json sees them: exported ones
// by their tag's name or their own, and those of embedded structs
// promoted (through a pointer, the embedded struct is allocated).
func collect(t reflect.Type, depth int, via int64, seen map[reflect.Type]bool, out *[]field) {
	if seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			ft, v := sf.Type, via
			if ft.Kind() == reflect.Pointer {
				ft, v = ft.Elem(), via+int64(ft.Elem().Size())
			}
			if ft.Kind() == reflect.Struct {
				collect(ft, depth+1, v, seen, out)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		*out = append(*out, field{name: name, typ: sf.Type, depth: depth, via: via})
	}
}

// unquoted is a key as encoding/json compares it: escapes resolved.
func unquoted(key []byte) string {
	var out string
	if bytes.IndexByte(key, '\\') < 0 || json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &out) != nil {
		return string(key)
	}
	return out
}

// fold is encoding/json's folding of a name: ASCII letters to upper case,
// every other rune to the smallest of its case-fold set (the Kelvin sign
// matches k).
func fold(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
		default:
			for {
				r2 := unicode.SimpleFold(r)
				if r2 <= r {
					r = r2
					break
				}
				r = r2
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}
