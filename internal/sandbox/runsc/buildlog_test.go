package runsc

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/sandbox"
)

func mustStages(t *testing.T, dockerfile string) []stage {
	t.Helper()
	st, err := parseStages([]byte(dockerfile))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestParseStages(t *testing.T) {
	t.Parallel()
	st := mustStages(t, `# syntax=docker/dockerfile:1
ARG V=22
FROM node:${V} AS Builder
RUN echo one \
    two   three
RUN ["/bin/echo", "exec form"]
SHELL ["/bin/sh", "-ec"]
run echo lower
RUN <<EOF
echo heredoc
EOF

FROM --platform=linux/amd64 node:22-slim
COPY --from=Builder /out /out
CMD ["npm","start"]
`)
	type got struct {
		Name   string
		Instrs []string
	}
	var g []got
	for _, s := range st {
		var kws []string
		for _, in := range s.instrs {
			kws = append(kws, in.keyword)
		}
		g = append(g, got{s.name, kws})
	}
	want := []got{
		{"Builder", []string{"FROM", "RUN", "RUN", "SHELL", "RUN", "RUN"}},
		{"", []string{"FROM", "COPY", "CMD"}},
	}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
	if st[0].label(0) != "Builder" || st[1].label(1) != "1" {
		t.Errorf("labels %q %q", st[0].label(0), st[1].label(1))
	}
	runs := st[0].instrs
	for _, tc := range []struct {
		in   instr
		argv []string
		ok   bool
	}{
		// buildah's args for the first RUN, as seen in a trace.
		{runs[1], []string{"/bin/sh", "-c", "echo one     two   three"}, true},
		{runs[1], []string{"/bin/sh", "-c", "echo one two three"}, false},
		{runs[2], []string{"/bin/echo", "exec form"}, true},
		{runs[2], []string{"/bin/sh", "-c", "/bin/echo exec form"}, false},
		{runs[4], []string{"/bin/sh", "-ec", "echo lower"}, true},
		{runs[5], []string{"/bin/sh", "-c", "anything"}, true}, // heredoc: not checked
	} {
		if got := tc.in.checkArgv(tc.argv); got != tc.ok {
			t.Errorf("line %d checkArgv(%q) = %v, want %v", tc.in.line, tc.argv, got, tc.ok)
		}
	}
	if _, err := parseStages([]byte("RUN echo no from\n")); err == nil {
		t.Error("a Dockerfile without FROM parsed")
	}
}

// feed runs lines through a buildLog, one millisecond apart.
func feed(l *buildLog, out string) {
	at := time.Unix(0, 0)
	w := &lineWriter{fn: l.line, now: func() time.Time { at = at.Add(time.Millisecond); return at }}
	_, _ = w.Write([]byte(out))
	w.flush()
	l.finish(at)
}

type stepView struct {
	Stage, Num int
	Keyword    string
	Cached     bool
}

func steps(l *buildLog) []stepView {
	var out []stepView
	for _, s := range l.steps {
		out = append(out, stepView{s.stage, s.num, s.keyword, s.cached})
	}
	return out
}

const twoStageFinalLog = `[1/2] STEP 1/3: FROM node:22 AS builder
[1/2] STEP 2/3: RUN echo building && mkdir -p /out && echo x > /out/x
--> Using cache 065408d8d939de088dc7fbd15733be5473782c3c64227890ac0c3289c8659ce9
--> 065408d8d93
[1/2] STEP 3/3: RUN echo second
second
[2/2] STEP 1/5: FROM node:22-slim
Trying to pull docker.io/library/node:22-slim...
[2/2] STEP 2/5: COPY --from=builder /out /out
--> c24e3e18961
[2/2] STEP 3/5: WORKDIR /app
--> 0e53fe3a766
[2/2] STEP 4/5: COPY package.json server.js ./
--> 4d4874c6ecd
[2/2] STEP 5/5: CMD ["npm","start"]
[2/2] COMMIT cg-final
--> d161c74afe2
Successfully tagged localhost/cg-final:latest
d161c74afe25677aedbecbbb6caada7d034114358f397f46292f293c19cfc83f
`

const twoStageDockerfileSecond = `FROM node:22 AS builder
RUN echo building && mkdir -p /out && echo x > /out/x
RUN echo second

FROM node:22-slim
COPY --from=builder /out /out
WORKDIR /app
COPY package.json server.js ./
CMD ["npm","start"]
`

func TestBuildLog(t *testing.T) {
	t.Parallel()
	st := mustStages(t, twoStageDockerfileSecond)
	l := newBuildLog(st, 1)
	feed(l, twoStageFinalLog)
	want := []stepView{
		{0, 1, "FROM", false}, {0, 2, "RUN", true}, {0, 3, "RUN", false},
		{1, 1, "FROM", false}, {1, 2, "COPY", false}, {1, 3, "WORKDIR", false}, {1, 4, "COPY", false}, {1, 5, "CMD", false},
	}
	if diff := cmp.Diff(want, steps(l)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	ran := l.ran()
	if len(ran) != 1 || ran[0].num != 3 || ran[0].out.String() != "second\n" {
		t.Errorf("ran %+v; want step 3 only, with its output", ran)
	}
	if l.image[0] != "065408d8d93" || l.image[1] != "d161c74afe2" {
		t.Errorf("stage images %v", l.image)
	}
	for _, s := range l.steps {
		if s.end.Before(s.start) || s.end.IsZero() {
			t.Errorf("step %d/%d: start %v end %v", s.stage, s.num, s.start, s.end)
		}
	}
	// The single-stage form, for --target builder: no [i/n] prefix.
	l = newBuildLog(st, 0)
	feed(l, "STEP 1/3: FROM node:22 AS builder\nSTEP 2/3: RUN echo building && mkdir -p /out && echo x > /out/x\nbuilding\n--> 065408d8d93\nSTEP 3/3: RUN echo second\nsecond\nCOMMIT x\n--> 80097768216\n")
	if got := len(l.ran()); got != 2 {
		t.Errorf("builder target: %d steps ran, want 2: %+v", got, steps(l))
	}
}

// TestBuildLogForgery: a step prints headers of its own. Only the exact
// next header can be accepted, and then the real one is not: the steps
// stay the same.
func TestBuildLogForgery(t *testing.T) {
	t.Parallel()
	st := mustStages(t, twoStageDockerfileSecond)
	l := newBuildLog(st, 1)
	forged := strings.Replace(twoStageFinalLog, "second\n", strings.Join([]string{
		"second",
		"[2/2] STEP 2/5: RUN echo not in the Dockerfile",   // wrong keyword
		"[1/2] STEP 2/3: RUN echo building",                // backwards
		"[1/3] STEP 3/3: RUN echo second",                  // wrong n
		"STEP 1/5: FROM node:22-slim",                      // no prefix in a 2-stage build
		"[2/2] STEP 1/4: FROM node:22-slim",                // wrong m
		"[2/2] STEP 1/5: FROM node:22-slim",                // the next one: accepted early
		"Error: building at STEP \"RUN x\": while running", // not the end
	}, "\n")+"\n", 1)
	feed(l, forged)
	want := []stepView{
		{0, 1, "FROM", false}, {0, 2, "RUN", true}, {0, 3, "RUN", false},
		{1, 1, "FROM", false}, {1, 2, "COPY", false}, {1, 3, "WORKDIR", false}, {1, 4, "COPY", false}, {1, 5, "CMD", false},
	}
	if diff := cmp.Diff(want, steps(l)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

func TestBuildLogFailure(t *testing.T) {
	t.Parallel()
	st := mustStages(t, "FROM node:22\nRUN echo before\nRUN echo out; echo err >&2; exit 3\nRUN echo never\n")
	l := newBuildLog(st, 0)
	feed(l, `STEP 1/4: FROM node:22
STEP 2/4: RUN echo before
before
--> 0b5e2736ffe
STEP 3/4: RUN echo out; echo err >&2; exit 3
out
err
Error: building at STEP "RUN echo out; echo err >&2; exit 3": while running runtime: exit status 3
`)
	tr := &targetRun{log: l, exit: 3}
	br := &buildRun{}
	got := br.stepPhases(tr)
	for i := range got {
		got[i].Duration = 0
	}
	want := []sandbox.PhaseResult{
		{Name: "build:0:step 2", OutputTail: "before\n--> 0b5e2736ffe\n"},
		{Name: "build:0:step 3", ExitCode: 3, Failed: true,
			OutputTail: "out\nerr\nError: building at STEP \"RUN echo out; echo err >&2; exit 3\": while running runtime: exit status 3\n"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	// A failing COPY is reported as its step too.
	st = mustStages(t, "FROM node:22\nCOPY missing /m\n")
	l = newBuildLog(st, 0)
	feed(l, "STEP 1/2: FROM node:22\nSTEP 2/2: COPY missing /m\nError: building at STEP \"COPY missing /m\": checking on sources: no such file\n")
	got = br.stepPhases(&targetRun{log: l, exit: 125})
	if len(got) != 1 || got[0].Name != "build:0:step 2" || !got[0].Failed || got[0].ExitCode != 125 {
		t.Errorf("failing COPY: %+v", got)
	}
}

func TestLineWriter(t *testing.T) {
	t.Parallel()
	var lines []string
	w := &lineWriter{fn: func(s string, _ time.Time) { lines = append(lines, s) }, now: time.Now}
	for _, chunk := range []string{"a", "b\nc\r\n", strings.Repeat("x", 3000), "\nend"} {
		_, _ = w.Write([]byte(chunk))
	}
	w.flush()
	want := []string{"ab", "c", "", strings.Repeat("x", maxLineBytes) + " [cut]", "end"}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	tl := newTail(3, 1<<10)
	for i := range 10 {
		tl.add(fmt.Sprint(i))
	}
	if tl.String() != "7\n8\n9\n" {
		t.Errorf("tail %q", tl.String())
	}
	tl = newTail(10, 8)
	tl.add("aaaa")
	tl.add("bbbb")
	tl.add("cc")
	if tl.String() != "bbbb\ncc\n" {
		t.Errorf("byte-bounded tail %q", tl.String())
	}
}

// TestParseStagesExpandsFromArgs: a FROM names its base through the global
// ARGs' defaults, expanded as the builder does, so that the base is pulled
// before the build and its package mirrors join the egress allow-list (a
// FROM node:${NODE_VERSION}-slim once left apt's mirror out, and the
// build's apt-get update was refused); one naming an ARG with no default
// stays as written.
func TestParseStagesExpandsFromArgs(t *testing.T) {
	t.Parallel()
	st := mustStages(t, `ARG NODE_VERSION=22
ARG OS="bookworm-slim" REG=docker.io
ARG IMAGE=${REG}/library/node
ARG TAG_SUFFIX
FROM node:${NODE_VERSION}-${OS} AS base
FROM $IMAGE:${NODE_VERSION:-20}
FROM node:${NODE_VERSION}${TAG_SUFFIX}
FROM base
ARG NODE_VERSION=24
FROM node:${LATER}
`)
	var bases []string
	for _, s := range st {
		bases = append(bases, s.base)
	}
	want := []string{"node:22-bookworm-slim", "docker.io/library/node:22", "node:${NODE_VERSION}${TAG_SUFFIX}", "base", "node:${LATER}"}
	if diff := cmp.Diff(want, bases); diff != "" {
		t.Errorf("bases (-want +got):\n%s", diff)
	}
	if bs := imageBases(st); len(bs) != 2 || bs[0].ref != "node:22-bookworm-slim" || bs[1].ref != "docker.io/library/node:22" {
		t.Errorf("image bases %+v, want the two expanded references", bs)
	}
}
