package sandbox

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateProbePaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		paths []string
		ok    bool
	}{
		{"none", nil, true},
		{"absolute", []string{"/", "/healthz?full=1"}, true},
		{"relative", []string{"healthz"}, false},
		{"space", []string{"/a b"}, false},
		{"newline", []string{"/a\nHost: x"}, false},
		{"too long", []string{"/" + strings.Repeat("a", 256)}, false},
		{"too many", make([]string, MaxProbePaths+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := SpawnRequest{Role: RoleProbe, Workspace: Workspace{Dir: "/w"},
				Build: &BuildSpec{Dockerfile: "Dockerfile", Targets: []string{""}, ProbePaths: tt.paths}}
			err := req.Validate()
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidRequest)) {
				t.Errorf("Validate = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
