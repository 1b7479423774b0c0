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
	"strconv"
	"strings"
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

// checker walks one JSON value token by token beside the Go type it
// decodes into. A nil type means "no schema here": duplicate keys only.
type checker struct {
	dec    *json.Decoder
	fields map[reflect.Type]map[string]reflect.Type
}

// checkKeys checks the keys of the first JSON value in b against t. Syntax
// errors are left to the decoder, which reports them with an offset.
func checkKeys(b []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	c := checker{dec: dec, fields: map[reflect.Type]map[string]reflect.Type{}}
	var kerr *KeyError
	if err := c.value(t, "$"); errors.As(err, &kerr) {
		return err
	}
	return nil
}

func (c *checker) value(t reflect.Type, path string) error {
	tok, err := c.dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	t = schema(t)
	switch d {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; c.dec.More(); i++ {
			if err := c.value(elem, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case '{':
		if err := c.object(t, path); err != nil {
			return err
		}
	}
	_, err = c.dec.Token() // the closing delimiter
	return err
}

func (c *checker) object(t reflect.Type, path string) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = c.fieldsOf(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	seen := map[string]struct{}{}
	for c.dec.More() {
		tok, err := c.dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("json: object key is %T, not a string", tok)
		}
		if _, dup := seen[key]; dup {
			return &KeyError{Path: path, Key: key, Err: ErrDuplicateKey}
		}
		seen[key] = struct{}{}
		vt := elem
		if fields != nil {
			ft, ok := fields[key]
			if !ok {
				return &KeyError{Path: path, Key: key, Err: unknownKind(fields, key)}
			}
			vt = ft
		}
		if err := c.value(vt, path+"."+key); err != nil {
			return err
		}
	}
	return nil
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
