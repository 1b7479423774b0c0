package nodenpm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// TestNothingUnreadEndsInReady: a server.js over the 2 MiB parse limit is
// scanned, not skipped: its execSync blocks, and a call only a parse
// classifies leaves the verdict unknown, naming the file (issue 22, item 4).
// The files are written by the test: megabytes are not committed.
func TestNothingUnreadEndsInReady(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("// "+strings.Repeat("x", 100)+"\n", 32000) // 3.3 MB
	tests := []struct {
		name    string
		server  string
		verdict probe.Verdict
		reason  string
	}{
		{"execSync first", "const cp = require('child_process');\ncp.execSync('ls');\n" + pad, probe.Blocked, ""},
		{"spawn of a computed command", "const cp = require('child_process');\ncp.spawn(process.argv[2]);\n" + pad, probe.Unknown, readiness.ReasonUnread + ": server.js"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, body := range map[string]string{
				"Dockerfile":   "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"server.js\"]\n",
				"package.json": `{"name": "svc"}`,
				"server.js":    tt.server,
			} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			a := gatherStatic(t, dir).Assessments[readiness.Name]
			if a.Verdict != tt.verdict || !strings.HasPrefix(a.Reason, tt.reason) {
				t.Errorf("verdict %s (%q), want %s (%q…)", a.Verdict, a.Reason, tt.verdict, tt.reason)
			}
		})
	}
}
