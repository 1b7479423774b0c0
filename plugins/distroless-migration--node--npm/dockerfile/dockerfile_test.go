package dockerfile

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustParse(t *testing.T, src string) *File {
	t.Helper()
	f, err := Parse("Dockerfile", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

func TestStagesBuilderAndArgs(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `ARG NODE_MAJOR=22
ARG VARIANT
FROM --platform=linux/amd64 node:${NODE_MAJOR}-alpine AS deps
RUN npm ci

FROM deps AS build
RUN npm run build

FROM gcr.io/distroless/nodejs${NODE_MAJOR}-debian13
COPY --from=build /app/dist /app
COPY --from=deps /app/node_modules /app/node_modules
CMD ["dist/index.js"]
`)
	if diff := cmp.Diff([]Arg{{Name: "NODE_MAJOR", Default: "22", HasDflt: true}, {Name: "VARIANT"}}, f.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	type stage struct {
		Name, Base, Resolved, Platform string
		BaseStage, Line                int
	}
	var got []stage
	for _, s := range f.Stages {
		got = append(got, stage{s.Name, s.Base, s.ResolvedBase, s.Platform, s.BaseStage, s.Line})
	}
	want := []stage{
		{"deps", "node:${NODE_MAJOR}-alpine", "node:22-alpine", "linux/amd64", -1, 3},
		{"build", "deps", "deps", "", 0, 6},
		{"", "gcr.io/distroless/nodejs${NODE_MAJOR}-debian13", "gcr.io/distroless/nodejs22-debian13", "", -1, 9},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
	if f.Final != 2 || f.Builder != 0 {
		t.Errorf("final %d, builder %d; want 2 and 0 (the last stage copied from)", f.Final, f.Builder)
	}
	if diff := cmp.Diff([]string{"gcr.io/distroless/nodejs22-debian13", "node:22-alpine"}, f.ImageBases()); diff != "" {
		t.Errorf("ImageBases (-want +got):\n%s", diff)
	}
	if f.RootBase(1) != "node:22-alpine" {
		t.Errorf("RootBase(1) = %q", f.RootBase(1))
	}
}

func TestBuilderByName(t *testing.T) {
	t.Parallel()
	f := mustParse(t, "FROM node:22 AS builder\nRUN true\nFROM node:22 AS other\nFROM node:22-slim\nCOPY --from=other /a /a\n")
	if f.Builder != 0 {
		t.Errorf("builder %d, want the stage named builder (0)", f.Builder)
	}
	single := mustParse(t, "FROM node:22\nCMD node server.js\n")
	if single.Builder != -1 || single.Final != 0 {
		t.Errorf("single stage: builder %d final %d", single.Builder, single.Final)
	}
	numeric := mustParse(t, "FROM node:22\nRUN true\nFROM node:22-slim\nCOPY --from=0 /a /a\n")
	if numeric.Builder != 0 {
		t.Errorf("COPY --from=0: builder %d", numeric.Builder)
	}
}

func TestInstructionForms(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `FROM node:22
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN npm ci && npm run build
RUN ["npm", "ci"]
USER node
WORKDIR /app
ENV NODE_ENV=production PORT=8080
EXPOSE 8080/tcp 9090
HEALTHCHECK --interval=5s CMD curl -f http://localhost:8080/ || exit 1
ENTRYPOINT ["docker-entrypoint.sh"]
CMD node \
  server.js
`)
	type in struct {
		Command string
		Line    int
		Form    Form
		Args    []string
	}
	var got []in
	for _, i := range f.Stages[0].Instructions {
		got = append(got, in{i.Command, i.Line, i.Form, i.Args})
	}
	want := []in{
		{"shell", 2, "", []string{"/bin/bash", "-o", "pipefail", "-c"}},
		{"run", 3, FormShell, []string{"npm ci && npm run build"}},
		{"run", 4, FormExec, []string{"npm", "ci"}},
		{"user", 5, "", []string{"node"}},
		{"workdir", 6, "", []string{"/app"}},
		{"env", 7, "", []string{"NODE_ENV=production", "PORT=8080"}},
		{"expose", 8, "", []string{"8080/tcp", "9090"}},
		{"healthcheck", 9, FormShell, []string{"curl -f http://localhost:8080/ || exit 1"}},
		{"entrypoint", 10, FormExec, []string{"docker-entrypoint.sh"}},
		{"cmd", 11, FormShell, []string{"node   server.js"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("instructions (-want +got):\n%s", diff)
	}
	hc := mustParse(t, "FROM x\nHEALTHCHECK CMD [\"node\", \"hc.js\"]\nFROM x\nHEALTHCHECK NONE\n")
	if i := hc.Stages[0].Instructions[0]; i.Form != FormExec || !cmp.Equal(i.Args, []string{"node", "hc.js"}) {
		t.Errorf("exec HEALTHCHECK = %+v", i)
	}
	if i := hc.Stages[1].Instructions[0]; !i.HealthcheckNone {
		t.Errorf("HEALTHCHECK NONE = %+v", i)
	}
}

func TestEffectiveFollowsStageChain(t *testing.T) {
	t.Parallel()
	f := mustParse(t, "FROM node:22 AS base\nCMD [\"node\", \"a.js\"]\nUSER node\nFROM base\nRUN true\n")
	cmd, ok := f.Effective(1, "cmd")
	if !ok || cmd.Line != 2 {
		t.Errorf("Effective(1, cmd) = %+v, %v; want the inherited CMD at line 2", cmd, ok)
	}
	if _, ok := f.Effective(1, "entrypoint"); ok {
		t.Error("Effective found an ENTRYPOINT nobody set")
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		line      int
	}{
		{"no from", "RUN echo hi\n", 1},
		{"empty", "", 0},
		{"unknown instruction", "FROM x\nFROBNICATE y\n", 2},
		{"bad healthcheck flag", "FROM x\nHEALTHCHECK --bogus=1 CMD true\n", 2},
		{"copy without dest", "FROM x\nCOPY onlyone\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("Dockerfile", []byte(tt.src))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error = %v, want *ParseError", err)
			}
			if pe.Line != tt.line {
				t.Errorf("error line %d, want %d (%v)", pe.Line, tt.line, pe)
			}
		})
	}
}

// TestParseBounds: a Dockerfile past one of Parse's bounds is a parse
// error that says which, and nothing of it is parsed.
func TestParseBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		line int
		want string
	}{
		{"bytes", "FROM node:22\n" + strings.Repeat("RUN echo "+strings.Repeat("x", 250)+"\n", MaxBytes/250), 0, "larger than 1048576 bytes"},
		{"instructions", "FROM node:22\n" + strings.Repeat("RUN true\n", MaxInstructions), 0, "more than 10000 instructions (10001)"},
		{"workdir", "FROM node:22 AS base\nWORKDIR /app\n" + strings.Repeat("WORKDIR "+strings.Repeat("d", 200)+"\n", 11) +
			"FROM base\n" + strings.Repeat("WORKDIR "+strings.Repeat("d", 200)+"\n", 11), 24, "WORKDIR makes a path longer than 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("Dockerfile", []byte(tt.src))
			var pe *ParseError
			if !errors.As(err, &pe) || f != nil {
				t.Fatalf("Parse = %v, %v; want a *ParseError", f != nil, err)
			}
			if pe.Line != tt.line || !strings.Contains(pe.Msg, tt.want) {
				t.Errorf("parse error %q at line %d, want %q at line %d", pe.Msg, pe.Line, tt.want, tt.line)
			}
		})
	}
	// Just inside the bounds parses.
	if _, err := Parse("Dockerfile", []byte("FROM node:22\n"+strings.Repeat("RUN true\n", MaxInstructions-1))); err != nil {
		t.Errorf("Parse(%d instructions): %v", MaxInstructions, err)
	}
}

func TestIsDockerfile(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"Dockerfile": true, "docker/Dockerfile.prod": true, "api.Dockerfile": true, "x/web.dockerfile": true,
		"Dockerfile.dockerignore": false, "Dockerfile.d/README": false, "README.md": false, "Dockerfiles": false,
	} {
		if got := IsDockerfile(p); got != want {
			t.Errorf("IsDockerfile(%q) = %v, want %v", p, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "..", "..", "examples", "*", "Dockerfile"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("FROM a AS b\nRUN x\nFROM b\nCOPY --from=b / /\nCMD [\"x\"]\n"))
	f.Add([]byte("ARG A=${B:-c}\nFROM $A\nHEALTHCHECK CMD-SHELL x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("Dockerfile", data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if pe.Line < 0 || pe.Line > strings.Count(string(data), "\n")+2 {
				t.Fatalf("error line %d out of range", pe.Line)
			}
			return
		}
		if file.Final != len(file.Stages)-1 || file.Builder >= len(file.Stages) || file.Builder == file.Final && file.Final != -1 && file.Builder != -1 {
			t.Fatalf("final %d builder %d of %d stages", file.Final, file.Builder, len(file.Stages))
		}
		for _, s := range file.Stages {
			if s.BaseStage >= s.Index {
				t.Fatalf("stage %d built on later stage %d", s.Index, s.BaseStage)
			}
			file.Effective(s.Index, "cmd")
			file.RootBase(s.Index)
		}
	})
}

func TestSourceOf(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `FROM node:22 AS builder
WORKDIR /src
COPY package.json ./
COPY . .
RUN npm run build

FROM node:22-slim
WORKDIR /app
COPY --from=builder /src/dist ./dist
COPY --from=builder /src/node_modules ./node_modules
COPY docker/entrypoint.sh /usr/local/bin/
COPY scripts/start.sh /start.sh
ENTRYPOINT ["entrypoint.sh"]
`)
	dirs := map[string]bool{"docker": true, "scripts": true, "node_modules": true, "node_modules/.bin": true}
	isDir := func(p string) bool { return dirs[p] }
	if wd := f.Workdir(1); wd != "/app" {
		t.Errorf("Workdir(1) = %q", wd)
	}
	for p, want := range map[string]string{
		"/usr/local/bin/entrypoint.sh": "docker/entrypoint.sh",
		"/start.sh":                    "scripts/start.sh",
		"/app/node_modules/.bin/next":  "node_modules/.bin/next",
		"/app/dist/index.js":           "dist/index.js",
		"/usr/local/bin/other.sh":      "",
		"/app/package.json":            "",
		"/src/package.json":            "",
	} {
		got, ok := f.SourceOf(1, p, isDir)
		if ok != (want != "") || got != want {
			t.Errorf("SourceOf(1, %q) = %q, %v; want %q", p, got, ok, want)
		}
	}
	if got, ok := f.SourceOf(0, "/src/package.json", isDir); !ok || got != "package.json" {
		t.Errorf("SourceOf(0, /src/package.json) = %q, %v", got, ok)
	}
}

func TestSplitInit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv, init, cmd []string
	}{
		{[]string{"/sbin/tini", "--", "yarn", "start"}, []string{"/sbin/tini", "--"}, []string{"yarn", "start"}},
		{[]string{"tini", "-s", "-g", "--", "node", "a.js"}, []string{"tini", "-s", "-g", "--"}, []string{"node", "a.js"}},
		{[]string{"tini", "-p", "SIGTERM", "node", "a.js"}, []string{"tini", "-p", "SIGTERM"}, []string{"node", "a.js"}},
		{[]string{"/usr/bin/dumb-init", "./entrypoint.sh"}, []string{"/usr/bin/dumb-init"}, []string{"./entrypoint.sh"}},
		{[]string{"dumb-init", "--rewrite", "15:2", "--", "node", "a.js"}, []string{"dumb-init", "--rewrite", "15:2", "--"}, []string{"node", "a.js"}},
		{[]string{"/sbin/docker-init", "--", "node"}, []string{"/sbin/docker-init", "--"}, []string{"node"}},
		{[]string{"gosu", "node", "npm", "start"}, []string{"gosu", "node"}, []string{"npm", "start"}},
		{[]string{"su-exec", "app:app", "node", "s.js"}, []string{"su-exec", "app:app"}, []string{"node", "s.js"}},
		{[]string{"tini", "--"}, []string{"tini", "--"}, []string{}},
		{[]string{"node", "tini.js"}, nil, []string{"node", "tini.js"}},
	}
	for _, tt := range tests {
		init, cmd := SplitInit(tt.argv)
		if !slices.Equal(init, tt.init) || !slices.Equal(cmd, tt.cmd) {
			t.Errorf("SplitInit(%q) = %q, %q; want %q, %q", tt.argv, init, cmd, tt.init, tt.cmd)
		}
	}
}
