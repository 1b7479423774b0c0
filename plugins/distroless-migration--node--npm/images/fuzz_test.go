package images

import "testing"

// FuzzParseCompose: any compose file parses or fails without a panic, and
// every build it reports stays inside the repository.
func FuzzParseCompose(f *testing.F) {
	for _, s := range []string{
		"services:\n  web:\n    build: .\n", "services:\n  a:\n    build:\n      context: ../x\n      target: t\n",
		"services: [1, 2]", "x: &a {b: *a}", "services:\n  s:\n    healthcheck:\n      test: curl -f localhost\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		bs, runs, err := parseCompose("sub/compose.yml", []byte(src))
		if err != nil {
			return
		}
		for _, b := range bs {
			if len(b.Context) >= 2 && b.Context[:2] == ".." || len(b.Dockerfile) >= 2 && b.Dockerfile[:2] == ".." {
				t.Errorf("build outside the repository: %+v", b)
			}
		}
		for _, r := range runs {
			if r.Image == "" || r.Context != "" || r.Dockerfile != "" {
				t.Errorf("a run with no image, or with a build: %+v", r)
			}
		}
	})
}

// FuzzIgnore: any .dockerignore parses, and matching never panics.
func FuzzIgnore(f *testing.F) {
	f.Add("node_modules\n!keep\n**/*.md\n# c\n", "a/b.md")
	f.Add("[", "x")
	f.Fuzz(func(t *testing.T, rules, path string) {
		parseIgnore(rules).excludes(path)
	})
}
