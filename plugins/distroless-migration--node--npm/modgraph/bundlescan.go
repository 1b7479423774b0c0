package modgraph

import (
	"bytes"
	"strings"
)

// Byte scans that find where a bundle binds its modules and where a file
// assigns an object literal, for the syntax tree to confirm: a regular
// expression over every file the liveness search reads cost more than the
// search itself (bundleModules, objectConsts).

// span is a byte range of a file.
type span struct{ lo, hi int }

// boundRequire is NAME = f(ID): the name's and the id's spans.
type boundRequire struct{ name, id span }

func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func spaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func digitByte(c byte) bool { return c >= '0' && c <= '9' }

// identBefore returns the identifier that ends at i, after any spaces
// before i; ok is false when none does.
func identBefore(data []byte, i int) (span, bool) {
	for i > 0 && spaceByte(data[i-1]) {
		i--
	}
	hi := i
	for i > 0 && identByte(data[i-1]) {
		i--
	}
	if i == hi || digitByte(data[i]) {
		return span{}, false
	}
	return span{i, hi}, true
}

// assignedAt returns the name of NAME = at i, where a value starts: the
// identifier before an = that is no part of another operator.
func assignedAt(data []byte, i int) (span, bool) {
	for i > 0 && spaceByte(data[i-1]) {
		i--
	}
	if i == 0 || data[i-1] != '=' {
		return span{}, false
	}
	i--
	if i > 0 && strings.IndexByte("=!<>+-*/%&|^?", data[i-1]) >= 0 {
		return span{}, false
	}
	return identBefore(data, i)
}

// eachByte calls fn with the index of each c in data.
func eachByte(data []byte, c byte, fn func(i int)) {
	for i := 0; ; i++ {
		j := bytes.IndexByte(data[i:], c)
		if j < 0 {
			return
		}
		i += j
		fn(i)
	}
}

// requireBindings finds NAME = f(DIGITS): const n=t(738), s = n(132).
func requireBindings(data []byte) []boundRequire {
	var out []boundRequire
	eachByte(data, '(', func(i int) {
		k := i + 1
		for k < len(data) && digitByte(data[k]) {
			k++
		}
		if k == i+1 || k >= len(data) || data[k] != ')' {
			return
		}
		if callee, ok := identBefore(data, i); ok {
			if name, ok := assignedAt(data, callee.lo); ok {
				out = append(out, boundRequire{name: name, id: span{i + 1, k}})
			}
		}
	})
	return out
}

// numberKeys finds the numbers that may key an object's entry: {421: or
// ,421: (spaces allowed).
func numberKeys(data []byte) []span {
	var out []span
	eachByte(data, ':', func(i int) {
		k := i
		for k > 0 && spaceByte(data[k-1]) {
			k--
		}
		hi := k
		for k > 0 && digitByte(data[k-1]) {
			k--
		}
		lo := k
		for k > 0 && spaceByte(data[k-1]) {
			k--
		}
		if lo < hi && k > 0 && (data[k-1] == '{' || data[k-1] == ',') {
			out = append(out, span{lo, hi})
		}
	})
	return out
}

// objectAssignments finds NAME = { : the name's span.
func objectAssignments(data []byte) []span {
	var out []span
	eachByte(data, '{', func(i int) {
		if name, ok := assignedAt(data, i); ok {
			out = append(out, name)
		}
	})
	return out
}
