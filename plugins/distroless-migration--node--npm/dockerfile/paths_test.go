package dockerfile

import "testing"

// TestCopiedTo: a file copied to a path, or into its folder under its
// own name, is there; a folder copied whole, a glob, and another name are
// not known to put it there.
func TestCopiedTo(t *testing.T) {
	t.Parallel()
	f, err := Parse("Dockerfile", []byte("FROM debian AS tools\nRUN make\n"+
		"FROM node:22\nWORKDIR /app\nCOPY --from=tools /out/render /usr/local/bin/\n"+
		"COPY --from=tools /out/pdf bin/pdftool\nCOPY --from=tools /opt/tools /opt/tools\nCOPY scripts/*.sh /usr/bin/\n"))
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]int{
		"/usr/local/bin/render": 5,
		"/app/bin/pdftool":      6,
		"/app/bin/pdf":          0,
		"/opt/tools/x":          0,
		"/usr/bin/run.sh":       0,
	} {
		line, ok := f.CopiedTo(f.Final, p)
		if ok != (want != 0) || line != want {
			t.Errorf("CopiedTo(%s) = %d, %v; want %d", p, line, ok, want)
		}
	}
}
