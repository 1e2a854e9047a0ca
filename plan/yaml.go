package plan

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Error is one thing wrong in a plan, at a line of its file. Its message is
// the one line the user sees: file:line: what is wrong.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// parser reads one file's nodes and makes its errors.
type parser struct {
	file string
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) *Error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// yamlLineRE finds the line in go-yaml's syntax errors ("yaml: line 3:
// did not find expected key").
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// document reads the single YAML document in data.
func (p *parser) document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: p.file, Msg: "empty: a plan names hosts and flows (docs/plans.md)"}
		}
		return nil, p.syntax(err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, p.errorf(&next, "a second YAML document: a plan is one")
	} else if !errors.Is(err, io.EOF) {
		return nil, p.syntax(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, p.errorf(&doc, "not a YAML document")
	}
	return doc.Content[0], nil
}

func (p *parser) syntax(err error) *Error {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: p.file, Line: line, Msg: "YAML: " + m[2]}
	}
	return &Error{File: p.file, Msg: "YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// resolve follows an alias (*name) to its anchor.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// field is one key of a mapping and its value.
type field struct {
	key   string
	k, v  *yaml.Node
	taken bool
}

// mapping reads a mapping node whose keys must be among allowed; what
// names the mapping in errors ("a flow", "the plan").
func (p *parser) mapping(n *yaml.Node, what string, allowed []string) ([]*field, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, "%s: want a mapping of keys (key: value), not %s", what, kindOf(n))
	}
	var fs []*field
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, p.errorf(k, "%s: a key must be a plain word, not %s", what, kindOf(k))
		}
		if k.Value == "<<" {
			return nil, p.errorf(k, "%s: merge keys (<<) are not supported: use defaults", what)
		}
		if !slices.Contains(allowed, k.Value) {
			return nil, p.errorf(k, "%s: unknown key %q: want %s", what, k.Value, strings.Join(allowed, ", "))
		}
		if seen[k.Value] {
			return nil, p.errorf(k, "%s: %s given twice", what, k.Value)
		}
		seen[k.Value] = true
		fs = append(fs, &field{key: k.Value, k: k, v: resolve(v)})
	}
	return fs, nil
}

func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "something else"
}

// scalar is the text of a plain value.
func (p *parser) scalar(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errorf(n, "%s: want a value, not %s", what, kindOf(n))
	}
	return n.Value, nil
}

// words is a value that is one word or a list of them.
func (p *parser) words(n *yaml.Node, what string) ([]string, error) {
	if n.Kind == yaml.SequenceNode {
		if len(n.Content) == 0 {
			return nil, p.errorf(n, "%s: an empty list", what)
		}
		var out []string
		for _, c := range n.Content {
			s, err := p.scalar(resolve(c), what)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := p.scalar(n, what)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

func (p *parser) integer(n *yaml.Node, what string) (int, error) {
	s, err := p.scalar(n, what)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, p.errorf(n, "%s %q: want a whole number", what, s)
	}
	return v, nil
}

func (p *parser) boolean(n *yaml.Node, what string) (bool, error) {
	s, err := p.scalar(n, what)
	if err != nil {
		return false, err
	}
	switch s {
	case "true", "yes", "on":
		return true, nil
	case "false", "no", "off":
		return false, nil
	}
	return false, p.errorf(n, "%s %q: want true or false", what, s)
}

func (p *parser) duration(n *yaml.Node, what string) (time.Duration, error) {
	s, err := p.scalar(n, what)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, p.errorf(n, "%s %q: want a duration like 10s or 1m30s", what, s)
	}
	return d, nil
}
