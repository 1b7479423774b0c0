// Package strictjson decodes JSON the way every codegenie schema wants it:
// unknown fields are an error (the ADRs' extra="forbid"), and so is anything
// after the first value. It does no encoding.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// ErrTrailingData reports bytes after the single JSON value.
var ErrTrailingData = errors.New("unexpected data after the JSON value")

// Unmarshal decodes exactly one JSON value from b into v, rejecting unknown
// object fields at any depth that v's types declare.
func Unmarshal(b []byte, v any) error {
	return Decode(bytes.NewReader(b), v)
}

// Decode is Unmarshal for a reader. It reads r to its end.
func Decode(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ErrTrailingData
	}
	return nil
}
