package ethtool

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// seedFiles adds every file the globs match to f's seed corpus.
func seedFiles(f *testing.F, globs ...string) {
	for _, g := range globs {
		files, _ := filepath.Glob(g)
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
}

// FuzzParsers runs every parser of ethtool's text on each input. None may
// panic; each warning names a line of the input; and what a parser read
// renders to text that reads back the same, without a warning.
func FuzzParsers(f *testing.F) {
	seedFiles(f, "testdata/*/*.txt", "testdata/public/*/*.txt", "../../testdata/captures/*/ethtool/*/*.txt")
	f.Fuzz(func(t *testing.T, text []byte) {
		lines := bytes.Count(text, []byte("\n")) + 1
		for _, file := range append(CaptureFileNames[:8:8], "n-tcp4.txt") {
			p := parseFile(file, text)
			for _, w := range p.ws {
				if w.Line < 0 || w.Line > lines || w.Why == "" || len(w.Why) > 512 {
					t.Errorf("%s: warning %+v for a text of %d lines", file, w, lines)
				}
			}
			if p.err != nil && len(p.err.Error()) > 512 {
				t.Errorf("%s: a message of %d bytes", file, len(p.err.Error()))
			}
			if p.err != nil {
				if p.ws != nil || (p.v != nil && !reflect.ValueOf(p.v).IsZero()) {
					t.Errorf("%s: an error (%v) with a value %+v or warnings %v", file, p.err, p.v, p.ws)
				}
				continue
			}
			var again []byte
			switch v := p.v.(type) {
			case DriverInfo:
				again = []byte(RenderDriverInfo("x", v))
			case Stats:
				if len(v) == 0 {
					continue // renders as "no stats available"
				}
				again = []byte(RenderStats("x", v))
			case Coalesce:
				again = []byte(RenderCoalesce("x", v))
			case RSS:
				again = []byte(RenderRSS("x", v))
			case [2]any:
				again = []byte(RenderFlowHash("x", v[0].(FlowType), v[1].(FlowHash)))
			default:
				continue
			}
			back := parseFile(file, again)
			if back.err != nil || len(back.ws) > 0 || !reflect.DeepEqual(back.v, p.v) {
				t.Errorf("%s: %+v renders as\n%s\nwhich reads back as %+v, %v, %v", file, p.v, again, back.v, back.ws, back.err)
			}
		}
	})
}
