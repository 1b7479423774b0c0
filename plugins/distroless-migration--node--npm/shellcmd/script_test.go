package shellcmd

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAnalyzeScript(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		src    string
		want   Script
		reason string // a word of the reason when not DefaultsOnly
	}{
		{"defaults then exec args", "#!/bin/sh\nset -e\n# defaults\nexport PORT=${PORT:-3000}\nNODE_ENV=\"production\"\nexport NODE_ENV\nexec \"$@\"\n",
			Script{DefaultsOnly: true, Env: []string{"PORT=3000", "NODE_ENV=production"}, Exec: []string{`"$@"`}, ExecLine: 7, Lines: []int{2, 4, 5, 6, 7}}, ""},
		{"exec node", "#!/bin/sh\nexport LOG_LEVEL=info\nexec node server.js\n",
			Script{DefaultsOnly: true, Env: []string{"LOG_LEVEL=info"}, Exec: []string{"node", "server.js"}, ExecLine: 3, Lines: []int{2, 3}, Programs: []string{"node"}}, ""},
		{"exec node with the arguments", "#!/bin/sh\nexport PORT=\"${PORT:-3000}\"\nexec node /app/app.js \"$@\"\n",
			Script{DefaultsOnly: true, Env: []string{"PORT=3000"}, Exec: []string{"node", "/app/app.js", `"$@"`}, ExecLine: 3, Lines: []int{2, 3}, Programs: []string{"node"}}, ""},
		{"secret files", "#!/bin/sh\nif [ -f \"$DB_PASSWORD_FILE\" ]; then\n  export DB_PASSWORD=$(cat \"$DB_PASSWORD_FILE\")\nfi\nexec \"$@\"\n", Script{}, "if"},
		{"migration first", "#!/bin/sh\nnpx prisma migrate deploy\nexec node dist/main.js\n", Script{}, "runs npx"},
		{"trap", "#!/bin/bash\ntrap 'kill $PID' TERM\nnode app.js &\nPID=$!\nwait $PID\n", Script{}, "background"},
		{"computed default", "#!/bin/sh\nexport URL=${HOST}:8080\nexec \"$@\"\n", Script{}, "computed"},
		{"no exec", "#!/bin/sh\nexport A=1\n", Script{}, "does not end"},
		{"set -- rewrites the arguments", "#!/bin/sh\nset -- /bin/sh -c \"node m.js && node s.js\"\nexec \"$@\"\n", Script{}, "runs set"},
		{"exec with options", "#!/bin/sh\nexec -a app node s.js\n", Script{}, "runs exec"},
	}
	// The programs a script runs, wherever it runs them.
	if diff := cmp.Diff([]string{"cat", "nc", "sleep", "wget", "node"}, AnalyzeScript("#!/bin/sh\nset -e\nif [ -f \"$F\" ]; then export A=$(cat \"$F\"); fi\nuntil nc -z db 5432; do sleep 1; done\nwget -qO /tmp/c http://config/\nexec node s.js\n").Programs); diff != "" {
		t.Errorf("programs (-want +got):\n%s", diff)
	}
	for _, tt := range tests {
		got := AnalyzeScript(tt.src)
		if tt.reason == "" {
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.name, diff)
			}
			continue
		}
		if got.DefaultsOnly || !strings.Contains(strings.Join(got.Reasons, "; "), tt.reason) {
			t.Errorf("%s: %+v, want not defaults-only with %q", tt.name, got, tt.reason)
		}
	}
}
