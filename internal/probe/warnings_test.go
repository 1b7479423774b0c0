package probe

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWarningsRegisterValidatesIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id      string
		wantErr bool
	}{
		{"node_project.invalid_package_json", false},
		{"a.b", false},
		{"a1_.b2_", false},
		{"", true},
		{"nodot", true},
		{"Upper.case", true},
		{"a.B", true},
		{"1a.b", true},
		{"a.1b", true},
		{"a.b.c", true},
		{"a-b.c", true},
		{".b", true},
		{"a.", true},
		{"a.b ", true},
		{"_a.b", true},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			var r Warnings
			err := r.Register(WarningDesc{ID: tt.id, Summary: "something"})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Register(%q) error = %v, wantErr %v", tt.id, err, tt.wantErr)
			}
			if _, ok := r.Lookup(tt.id); ok == tt.wantErr {
				t.Errorf("Lookup(%q) found = %v after Register error %v", tt.id, ok, err)
			}
		})
	}
}

func TestWarningsRegisterRejectsDuplicateAndBadSummary(t *testing.T) {
	t.Parallel()
	var r Warnings
	if err := r.Register(WarningDesc{ID: "p.w", Summary: "first"}); err != nil {
		t.Fatal(err)
	}
	err := r.Register(WarningDesc{ID: "p.w", Summary: "second"})
	if err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("duplicate Register error = %v, want a 'registered twice' error", err)
	}
	if w, _ := r.Lookup("p.w"); w.Summary != "first" {
		t.Errorf("duplicate replaced the first registration: %+v", w)
	}
	for _, s := range []string{"", "  ", "two\nlines"} {
		if err := r.Register(WarningDesc{ID: "p.x", Summary: s}); err == nil {
			t.Errorf("Register with summary %q succeeded", s)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("MustRegister of a duplicate did not panic")
			}
		}()
		r.MustRegister(WarningDesc{ID: "p.w", Summary: "again"})
	}()
}

func TestWarningsAllSorted(t *testing.T) {
	t.Parallel()
	var r Warnings
	r.MustRegister(WarningDesc{ID: "b.x", Summary: "b"}, WarningDesc{ID: "a.y", Summary: "a"})
	var got []string
	for _, w := range r.All() {
		got = append(got, w.ID)
	}
	if diff := cmp.Diff([]string{"a.y", "b.x"}, got); diff != "" {
		t.Errorf("All() (-want +got):\n%s", diff)
	}
}
