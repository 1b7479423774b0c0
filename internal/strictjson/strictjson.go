// Package strictjson decodes JSON the way every codegenie schema wants it,
// so that no two parsers can read one document differently:
//
//   - unknown fields are an error (the ADRs' extra="forbid");
//   - an object key that appears twice is an error, at any depth, after
//     unescaping (so "role" and "r\u006fle" are the same key);
//   - where the target is a struct, a key must spell a field's JSON name
//     exactly: encoding/json would match "DIR" or "Command" to "dir" or
//     "command", case-insensitively, and strictjson refuses them;
//   - anything after the first value is an error.
//
// Values whose type decodes itself (json.Unmarshaler, such as
// json.RawMessage, and interface types) are checked for duplicate keys only;
// their own decoding applies the rest, and every codegenie type that
// decodes itself does so with this package. Map keys are compared exactly,
// as encoding/json compares them.
//
// It does no encoding.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrTrailingData reports bytes after the single JSON value.
var ErrTrailingData = errors.New("unexpected data after the JSON value")

// Errors of KeyError, matched with errors.Is.
var (
	// ErrDuplicateKey: an object holds the same key twice.
	ErrDuplicateKey = errors.New("duplicate object key")
	// ErrKeyCase: a key differs only in case from a field of the schema.
	ErrKeyCase = errors.New("object key differs from a field name only in case")
	// ErrUnknownField: a key names no field of the schema.
	ErrUnknownField = errors.New("unknown field")
)

// KeyError reports an object key that strictjson refuses. It matches
// ErrDuplicateKey, ErrKeyCase or ErrUnknownField.
type KeyError struct {
	// Path locates the object, such as "$.workspace" or "$.trace[3]".
	Path string
	// Key is the refused key, unescaped.
	Key string
	// Err is the sentinel that says what is wrong.
	Err error
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("json: %v %q in %s", e.Err, e.Key, e.Path)
}

func (e *KeyError) Unwrap() error { return e.Err }

// Unmarshal decodes exactly one JSON value from b into v, with the rules of
// the package documentation. v is left unchanged when a key is refused.
func Unmarshal(b []byte, v any) error {
	if err := checkKeys(b, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ErrTrailingData
	}
	return nil
}

// Decode is Unmarshal for a reader. It reads r to its end.
func Decode(r io.Reader, v any) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return Unmarshal(b, v)
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checker walks one JSON value beside the Go type it decodes into. A nil
// type means "no schema here": duplicate keys only. It reads bytes that
// json.Valid accepted, so it need not check the syntax.
type checker struct {
	b      []byte
	i      int
	fields map[reflect.Type]map[string]reflect.Type
	path   []segment // where the walk is, spelled out only for an error
}

// segment is one step of a path: an object key, or an array index when
// index is not negative.
type segment struct {
	key   string
	index int
}

func (c *checker) pathString() string {
	var b strings.Builder
	b.WriteString("$")
	for _, s := range c.path {
		if s.index >= 0 {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		} else {
			b.WriteString("." + s.key)
		}
	}
	return b.String()
}

// checkKeys checks the keys of the first JSON value in b against t. A
// document that is not valid JSON is left to the decoder, which reports
// its syntax error with an offset.
func checkKeys(b []byte, t reflect.Type) error {
	if !json.Valid(b) {
		return nil
	}
	c := checker{b: b, fields: map[reflect.Type]map[string]reflect.Type{}}
	return c.value(t)
}

func (c *checker) ws() {
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

func (c *checker) value(t reflect.Type) error {
	c.ws()
	switch c.b[c.i] {
	case '{':
		return c.object(schema(t))
	case '[':
		return c.array(schema(t))
	case '"':
		c.str()
	default: // a number, true, false or null
		for c.i < len(c.b) && !strings.ContainsRune(",]} \t\n\r", rune(c.b[c.i])) {
			c.i++
		}
	}
	return nil
}

// str skips a string and returns what is between its quotes, and whether
// it needs unquoting to be read as encoding/json reads it.
func (c *checker) str() (raw []byte, unquote bool) {
	start := c.i + 1
	i := start
	for c.b[i] != '"' {
		if c.b[i] == '\\' {
			unquote = true
			i++
		}
		i++
	}
	c.i = i + 1
	raw = c.b[start:i]
	return raw, unquote || !utf8.Valid(raw)
}

// key reads an object key as encoding/json reads it: unescaped, and with
// invalid UTF-8 replaced.
func (c *checker) key() string {
	start := c.i
	raw, unquote := c.str()
	if !unquote {
		return string(raw)
	}
	var k string
	_ = json.Unmarshal(c.b[start:c.i], &k) // valid JSON: it is a string
	return k
}

func (c *checker) array(t reflect.Type) error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	c.i++ // [
	c.ws()
	if c.b[c.i] == ']' {
		c.i++
		return nil
	}
	for n := 0; ; n++ {
		c.path = append(c.path, segment{index: n})
		if err := c.value(elem); err != nil {
			return err
		}
		c.path = c.path[:len(c.path)-1]
		c.ws()
		sep := c.b[c.i]
		c.i++
		if sep == ']' {
			return nil
		}
	}
}

// smallObject is how many keys an object may have before the duplicate
// check uses a map rather than a scan of the keys so far.
const smallObject = 16

func (c *checker) object(t reflect.Type) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = c.fieldsOf(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	c.i++ // {
	c.ws()
	if c.b[c.i] == '}' {
		c.i++
		return nil
	}
	var keys []string
	var seen map[string]struct{}
	for {
		c.ws()
		key := c.key()
		dup := false
		if seen != nil {
			_, dup = seen[key]
			seen[key] = struct{}{}
		} else {
			dup = slices.Contains(keys, key)
			keys = append(keys, key)
			if len(keys) > smallObject {
				seen = make(map[string]struct{}, 2*len(keys))
				for _, k := range keys {
					seen[k] = struct{}{}
				}
			}
		}
		if dup {
			return &KeyError{Path: c.pathString(), Key: key, Err: ErrDuplicateKey}
		}
		vt := elem
		if fields != nil {
			ft, ok := fields[key]
			if !ok {
				return &KeyError{Path: c.pathString(), Key: key, Err: unknownKind(fields, key)}
			}
			vt = ft
		}
		c.ws()
		c.i++ // :
		c.path = append(c.path, segment{key: key, index: -1})
		if err := c.value(vt); err != nil {
			return err
		}
		c.path = c.path[:len(c.path)-1]
		c.ws()
		sep := c.b[c.i]
		c.i++
		if sep == '}' {
			return nil
		}
	}
}

func unknownKind(fields map[string]reflect.Type, key string) error {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return ErrKeyCase
		}
	}
	return ErrUnknownField
}

// schema returns the type whose keys the checker can hold a JSON value to:
// t without pointers, or nil when the value decodes itself or has no fixed
// shape.
func schema(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface {
		return nil
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(unmarshalerType) || pt.Implements(textUnmarshalerType) {
		return nil
	}
	return t
}

// fieldsOf returns the JSON names of a struct's fields and their types, as
// encoding/json sees them: exported fields, named by their tag, with the
// fields of untagged embedded structs promoted, and "-" left out. Of two
// fields with one name, the shallower one wins, as in encoding/json; a tie
// keeps the name (encoding/json drops it, and then rejects the key as
// unknown itself).
func (c *checker) fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := c.fields[t]; ok {
		return f
	}
	out := map[string]reflect.Type{}
	depth := map[string]int{}
	var walk func(t reflect.Type, d int, visited map[reflect.Type]bool)
	walk = func(t reflect.Type, d int, visited map[reflect.Type]bool) {
		if visited[t] {
			return
		}
		visited[t] = true
		defer delete(visited, t)
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if sf.Anonymous && name == "" {
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, d+1, visited)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if old, ok := depth[name]; ok && old <= d {
				continue
			}
			depth[name] = d
			out[name] = sf.Type
		}
	}
	walk(t, 0, map[reflect.Type]bool{})
	c.fields[t] = out
	return out
}
