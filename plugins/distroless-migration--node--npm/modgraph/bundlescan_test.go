package modgraph

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBundleScans: the byte scans find the candidates the syntax tree then
// confirms, and skip what is no assignment or no key.
func TestBundleScans(t *testing.T) {
	t.Parallel()
	src := []byte("var e={421:e=>{},7 : (e,t,n)=>{const r=n(7);var s;if(a){s = n(421)}else{s=n (9)}x==n(3);y=>n(4);f(5)}};a?1:2;" +
		"const l = {parse},m={};z>={};q=>{}")
	texts := func(ss []span) []string {
		var out []string
		for _, s := range ss {
			out = append(out, string(src[s.lo:s.hi]))
		}
		return out
	}
	if diff := cmp.Diff([]string{"421", "7"}, texts(numberKeys(src))); diff != "" {
		t.Errorf("numberKeys (-want +got):\n%s", diff)
	}
	var names, ids []span
	for _, b := range requireBindings(src) {
		names, ids = append(names, b.name), append(ids, b.id)
	}
	if diff := cmp.Diff([]string{"r", "s", "s"}, texts(names)); diff != "" {
		t.Errorf("requireBindings names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"7", "421", "9"}, texts(ids)); diff != "" {
		t.Errorf("requireBindings ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"e", "l", "m"}, texts(objectAssignments(src))); diff != "" {
		t.Errorf("objectAssignments (-want +got):\n%s", diff)
	}
}
