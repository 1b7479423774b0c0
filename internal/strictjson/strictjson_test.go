package strictjson_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/strictjson"
)

type workspace struct {
	Dir   string `json:"dir"`
	Mount string `json:"mount,omitempty"`
}

type Base struct {
	ID string `json:"id"`
}

type request struct {
	Base
	Role      string            `json:"role"`
	Command   []string          `json:"command"`
	Workspace workspace         `json:"workspace"`
	Nested    []workspace       `json:"nested,omitempty"`
	Ptr       *workspace        `json:"ptr,omitempty"`
	Mirrors   map[string]string `json:"mirrors,omitempty"`
	Raw       json.RawMessage   `json:"raw,omitempty"`
	Any       any               `json:"any,omitempty"`
	Untagged  int
	Skipped   int `json:"-"`
	hidden    int //nolint:unused // an unexported field, never decoded
}

func TestUnmarshal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want error // nil: decodes
	}{
		{"valid", `{"id":"1","role":"gate","command":["a"],"workspace":{"dir":"/w"},"Untagged":1}`, nil},
		{"map keys differing in case", `{"mirrors":{"docker.io":"a","Docker.io":"b"}}`, nil},
		{"raw object with case variants", `{"raw":{"x":1,"X":2}}`, nil},
		{"duplicate key", `{"role":"probe","role":"gate"}`, strictjson.ErrDuplicateKey},
		{"duplicate through an escape", `{"role":"probe","r\u006fle":"gate"}`, strictjson.ErrDuplicateKey},
		{"case variant after the field", `{"command":["a"],"Command":["b"]}`, strictjson.ErrKeyCase},
		{"case variant alone", `{"workspace":{"DIR":"/etc"}}`, strictjson.ErrKeyCase},
		{"kelvin sign folds to k", "{\"wor\u212aspace\":{\"dir\":\"/etc\"}}", strictjson.ErrKeyCase},
		{"long s folds to s", "{\"mirror\u017f\":{}}", strictjson.ErrKeyCase},
		{"case variant of a promoted field", `{"ID":"1"}`, strictjson.ErrKeyCase},
		{"case variant of an untagged field", `{"untagged":1}`, strictjson.ErrKeyCase},
		{"duplicate deep in an array", `{"nested":[{"dir":"a"},{"dir":"a","dir":"b"}]}`, strictjson.ErrDuplicateKey},
		{"case variant behind a pointer", `{"ptr":{"Dir":"a"}}`, strictjson.ErrKeyCase},
		{"duplicate in a map", `{"mirrors":{"a":"1","a":"2"}}`, strictjson.ErrDuplicateKey},
		{"invalid UTF-8 keys read alike", "{\"mirrors\":{\"\xff\":\"1\",\"\xfe\":\"2\"}}", strictjson.ErrDuplicateKey},
		{"many keys, one twice", `{"mirrors":{"a":"","b":"","c":"","d":"","e":"","f":"","g":"","h":"","i":"","j":"","k":"","l":"","m":"","n":"","o":"","p":"","q":"","r":"","a":""}}`, strictjson.ErrDuplicateKey},
		{"many keys", ` { "mirrors" : {"a":"","b":"","c":"","d":"","e":"","f":"","g":"","h":"","i":"","j":"","k":"","l":"","m":"","n":"","o":"","p":"","q":"","r":""} , "nested" : [ {"dir":"x"} , { } ] } `, nil},
		{"duplicate in raw", `{"raw":{"x":1,"x":2}}`, strictjson.ErrDuplicateKey},
		{"duplicate in any", `{"any":[{"x":{"y":1,"y":2}}]}`, strictjson.ErrDuplicateKey},
		{"skipped field", `{"Skipped":1}`, strictjson.ErrUnknownField},
		{"unexported field", `{"hidden":1}`, strictjson.ErrUnknownField},
		{"unknown field", `{"x":1}`, strictjson.ErrUnknownField},
		{"trailing data", `{} {}`, strictjson.ErrTrailingData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got request
			err := strictjson.Unmarshal([]byte(tt.in), &got)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Unmarshal(%s) = %v, want nil", tt.in, err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Unmarshal(%s) = %v, want %v", tt.in, err, tt.want)
			}
			if diff := cmp.Diff(request{}, got, cmp.AllowUnexported(request{})); diff != "" && !errors.Is(tt.want, strictjson.ErrTrailingData) {
				t.Errorf("a refused document changed the target (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeyErrorNamesThePath(t *testing.T) {
	t.Parallel()
	var v request
	err := strictjson.Unmarshal([]byte(`{"nested":[{"dir":"a"},{"DIR":"b"}]}`), &v)
	var kerr *strictjson.KeyError
	if !errors.As(err, &kerr) {
		t.Fatalf("Unmarshal = %v, want a *KeyError", err)
	}
	want := strictjson.KeyError{Path: "$.nested[1]", Key: "DIR", Err: strictjson.ErrKeyCase}
	if diff := cmp.Diff(want, *kerr, cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) })); diff != "" {
		t.Errorf("KeyError (-want +got):\n%s", diff)
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	var v request
	if err := strictjson.Decode(strings.NewReader(`{"role":"a","role":"b"}`), &v); !errors.Is(err, strictjson.ErrDuplicateKey) {
		t.Errorf("Decode = %v, want ErrDuplicateKey", err)
	}
	if err := strictjson.Decode(strings.NewReader(`{"role":"a"}`), &v); err != nil || v.Role != "a" {
		t.Errorf("Decode = %v, %q; want nil, a", err, v.Role)
	}
}

// selfDecoding decodes itself through strictjson, as trace.Event does.
type selfDecoding struct {
	Name string `json:"name"`
}

func (s *selfDecoding) UnmarshalJSON(b []byte) error {
	type plain selfDecoding
	return strictjson.Unmarshal(b, (*plain)(s))
}

func TestSelfDecodingValues(t *testing.T) {
	t.Parallel()
	var v []selfDecoding
	if err := strictjson.Unmarshal([]byte(`[{"name":"a"},{"Name":"b"}]`), &v); !errors.Is(err, strictjson.ErrKeyCase) {
		t.Errorf("Unmarshal = %v, want ErrKeyCase from the element's own decoding", err)
	}
}
