package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The loader works on yaml.Node trees rather than decoding into structs:
// a node knows its line, so every error can name one, and a tree can be
// merged with the defaults' tree while each value keeps the file it came
// from.

// yamlLine finds the line in a yaml.v3 syntax error ("yaml: line 4: did
// not find expected key").
var yamlLine = regexp.MustCompile(`^yaml: line ([0-9]+): (.*)$`)

// readDocument parses data as a single YAML document and returns its root
// node, or nil after adding the syntax errors to errs. An empty document
// (nothing, or only comments) is an error unless allowEmpty.
func readDocument(file string, data []byte, errs *errorList, allowEmpty bool) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	switch {
	case errors.Is(err, io.EOF) || (err == nil && len(doc.Content) == 0):
		if !allowEmpty {
			errs.add(Error{File: file, Line: 1, Msg: "empty file: expected a scenario, a mapping with name, description, duration, ..."})
		}
		return nil
	case err != nil:
		errs.add(syntaxError(file, err))
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		errs.add(syntaxError(file, err))
		return nil
	default:
		errs.add(Error{File: file, Line: next.Line, Msg: "a second YAML document: a file holds one scenario"})
		return nil
	}
	return doc.Content[0]
}

// parserProblems are the messages of yaml.v3's parser, as opposed to its
// scanner. yaml.v3 numbers the line of a parser error from 0 (it adds 1
// only for scanner errors), so these need 1 added to name the right line:
// the line where the unfinished mapping or list starts, or where the
// problem is when that is the first line.
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// syntaxError turns a yaml.v3 error into an *Error on its line.
func syntaxError(file string, err error) Error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if slices.Contains(parserProblems, m[2]) {
			line++
		}
		return Error{File: file, Line: line, Msg: "bad YAML syntax: " + m[2]}
	}
	return Error{File: file, Line: 1, Msg: "bad YAML syntax: " + strings.TrimPrefix(msg, "yaml: ")}
}

// resolve follows an alias to the node it names. Aliases are allowed (a
// phase written once and reused), and an error inside one names the
// anchor's line.
func resolve(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// isNull tells whether n is YAML's null (`~`, `null` or nothing): a key
// set to null is treated as absent, which lets a scenario clear a value
// its defaults set.
func isNull(n *yaml.Node) bool {
	r := resolve(n)
	return r == nil || (r.Kind == yaml.ScalarNode && r.ShortTag() == "!!null")
}

// describe names what n is, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch r := resolve(n); r.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if v := []rune(r.Value); len(v) > 40 {
			return strconv.Quote(string(v[:40])) + "..."
		}
		return strconv.Quote(r.Value)
	default:
		return "nothing"
	}
}

// merge returns over with under merged beneath it: mappings merge key by
// key (over's value wins, recursively), anything else in over replaces
// under's whole value, lists included, so a scenario that lists its own
// expectations does not inherit the defaults' ones. The result shares
// nodes with both trees and changes neither; merged mappings are new nodes
// that keep over's position.
func merge(over, under *yaml.Node) *yaml.Node {
	return (&merger{done: map[[2]*yaml.Node]*yaml.Node{}}).merge(over, under)
}

// merger remembers the pairs it merged. Aliases make a tree a graph: one
// mapping can be reached many times over (a billion laughs), or from inside
// itself. Merging each pair once keeps the work to the size of the files,
// and a pair met again while being merged (a cycle) is left as it is.
type merger struct {
	done map[[2]*yaml.Node]*yaml.Node
}

func (m *merger) merge(over, under *yaml.Node) *yaml.Node {
	if over == nil {
		return under
	}
	o, u := resolve(over), resolve(under)
	if u == nil || o.Kind != yaml.MappingNode || u.Kind != yaml.MappingNode {
		return over
	}
	pair := [2]*yaml.Node{o, u}
	if out, ok := m.done[pair]; ok {
		if out == nil { // being merged: a cycle
			return over
		}
		return out
	}
	m.done[pair] = nil
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: o.Tag, Style: o.Style, Line: o.Line, Column: o.Column}
	seen := map[string]bool{}
	for i := 0; i+1 < len(o.Content); i += 2 {
		k, v := o.Content[i], o.Content[i+1]
		if name, ok := keyName(k); ok && !seen[name] {
			seen[name] = true
			v = m.merge(v, lookup(u, name))
		}
		out.Content = append(out.Content, k, v)
	}
	for i := 0; i+1 < len(u.Content); i += 2 {
		if name, ok := keyName(u.Content[i]); !ok || !seen[name] {
			out.Content = append(out.Content, u.Content[i], u.Content[i+1])
		}
	}
	m.done[pair] = out
	return out
}

// keyName is a mapping key's text, if it is a scalar.
func keyName(k *yaml.Node) (string, bool) {
	r := resolve(k)
	if r == nil || r.Kind != yaml.ScalarNode {
		return "", false
	}
	return r.Value, true
}

// lookup returns the value of the first key name in mapping m.
func lookup(m *yaml.Node, name string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k, ok := keyName(m.Content[i]); ok && k == name {
			return m.Content[i+1]
		}
	}
	return nil
}

// nodesOf returns every node of a tree, to remember which file they came
// from. Aliases are not followed: the nodes they name are in the tree
// already.
func nodesOf(root *yaml.Node) map[*yaml.Node]bool {
	set := map[*yaml.Node]bool{}
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil || set[n] {
			return
		}
		set[n] = true
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
	return set
}

// fpath is a field's place twice over: canonical, as Validate names the
// Scenario's fields ("network.up[0].loss"), and as written in the file
// ("network.both.loss" for a single phase given for both directions).
type fpath struct{ canon, written string }

func (p fpath) key(k string) fpath {
	if p.canon == "" {
		return fpath{k, k}
	}
	return fpath{p.canon + "." + k, p.written + "." + k}
}

func (p fpath) index(i int) fpath {
	s := "[" + strconv.Itoa(i) + "]"
	return fpath{p.canon + s, p.written + s}
}

// parent returns the canonical path of the field holding field.
func parent(field string) string {
	i := strings.LastIndexAny(field, ".[")
	if i < 0 {
		return ""
	}
	return field[:i]
}

// within tells whether field is inner or inside it.
func within(field, outer string) bool {
	if outer == "" || field == outer {
		return true
	}
	return strings.HasPrefix(field, outer) && (field[len(outer)] == '.' || field[len(outer)] == '[')
}

// fmtf is fmt.Sprintf, shortened for the many messages.
func fmtf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
