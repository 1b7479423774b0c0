package recipe

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

func TestLookupTarget(t *testing.T) {
	for _, tc := range []struct {
		ref                 string
		major               int
		want, node, errPart string
		shell, entryNode    bool
	}{
		{ref: "gcr.io/distroless/nodejs24-debian13", major: 22, want: "gcr.io/distroless/nodejs24-debian13:nonroot", node: "/nodejs/bin/node", entryNode: true},
		{ref: "gcr.io/distroless/nodejs22-debian13:debug", major: 22, want: "gcr.io/distroless/nodejs22-debian13:debug", node: "/nodejs/bin/node", shell: true, entryNode: true},
		{ref: "dhi.io/node", major: 24, want: "dhi.io/node:24-debian13", node: "node"},
		{ref: "dhi.io/node:22-debian13", major: 24, want: "dhi.io/node:22-debian13", node: "node"},
		{ref: "cgr.dev/chainguard/node:latest", major: 22, want: "cgr.dev/chainguard/node:latest", node: "/usr/bin/node", shell: true, entryNode: true},
		{ref: "gcr.io/distroless/nodejs18-debian13", major: 18, errPart: "publishes no Node 18"},
		{ref: "gcr.io/distroless/nodejs22-debian13:weird", major: 22, errPart: "not one codegenie knows"},
		{ref: "busybox", major: 22, errPart: "not a runtime image codegenie knows"},
	} {
		got, err := LookupTarget(tc.ref, tc.major)
		if tc.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errPart) {
				t.Errorf("%s: err %v, want one containing %q", tc.ref, err, tc.errPart)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.ref, err)
			continue
		}
		if got.Ref != tc.want || got.Node != tc.node || got.Shell != tc.shell || got.EntrypointNode != tc.entryNode {
			t.Errorf("%s: got %+v", tc.ref, got)
		}
	}
	if d := DefaultTarget(24); d.Ref != "gcr.io/distroless/nodejs24-debian13:nonroot" || d.Pinned() != d.Ref {
		t.Errorf("default: %+v", d)
	}
	pinned, _ := LookupTarget("gcr.io/distroless/nodejs22-debian13:nonroot@sha256:abc", 22)
	if pinned.Pinned() != "gcr.io/distroless/nodejs22-debian13:nonroot@sha256:abc" {
		t.Errorf("pinned: %s", pinned.Pinned())
	}
}

func TestDebianRun(t *testing.T) {
	for _, tc := range []struct{ in, want, unknown string }{
		{"RUN apk add --no-cache python3 make g++\n", "RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*\n", ""},
		{"RUN apk add --no-cache --virtual .gyp build-base && npm ci && apk del .gyp\n",
			"RUN apt-get update && apt-get install -y --no-install-recommends build-essential && rm -rf /var/lib/apt/lists/* && npm ci && true\n", ""},
		{"RUN apk add libc6-compat\n", "RUN true\n", ""},
		{"RUN addgroup -S -g 1001 app && adduser -S -u 1001 -G app app\n", "RUN addgroup --system --gid 1001 app && adduser --system --uid 1001 --ingroup app app\n", ""},
		{"RUN apk add --no-cache frobnicate\n", "", "frobnicate"},
		// Continued lines stay continued, a comment between them stays, and
		// a package Debian needs no counterpart of goes with its line.
		{"RUN apk add --no-cache \\\n    python3 \\\n    # the compiler\n    g++ \\\n    libc6-compat \\\n && npm ci\n",
			"RUN apt-get update && apt-get install -y --no-install-recommends \\\n    python3 \\\n    # the compiler\n    g++ && rm -rf /var/lib/apt/lists/* \\\n && npm ci\n", ""},
		// apk update then apk add updates once.
		{"RUN apk update && \\\n    apk add tzdata && \\\n    rm -rf /var/cache/apk/*\n",
			"RUN apt-get update && \\\n    apt-get install -y --no-install-recommends tzdata && rm -rf /var/lib/apt/lists/* && \\\n    rm -rf /var/cache/apk/*\n", ""},
		{"RUN addgroup -S app && \\\n    adduser -S -G app \\\n      app\n", "RUN addgroup --system app && \\\n    adduser --system --ingroup app \\\n      app\n", ""},
		// busybox ignores a second name after options (Ackee's adduser -D
		// ackee ackee makes ackee, in a group ackee); Debian would add an
		// existing user to a group, and fail. With no option both add a
		// user to a group.
		{"RUN adduser -D ackee ackee && chown -R ackee:ackee /srv/app\n", "RUN adduser --disabled-password ackee && chown -R ackee:ackee /srv/app\n", ""},
		{"RUN adduser -u 1001 -D app staff\n", "RUN adduser --uid 1001 --disabled-password app\n", ""},
		{"RUN adduser app staff\n", "RUN adduser app staff\n", ""},
	} {
		got, unknown := debianRun(tc.in)
		if tc.unknown != "" {
			if strings.Join(unknown, ",") != tc.unknown {
				t.Errorf("%q: unknown %v, want %s", tc.in, unknown, tc.unknown)
			}
			continue
		}
		if got != tc.want || len(unknown) > 0 {
			t.Errorf("%q:\n got %q (unknown %v)\nwant %q", tc.in, got, unknown, tc.want)
		}
	}
}

func TestApply(t *testing.T) {
	src := []byte("a\nb\nc\n")
	got, err := apply(src, []edit{{from: 2, to: 2, text: "B\n"}, {from: 2, to: 1, text: "x\n"}, {from: 4, to: 3, text: "end\n"}, {from: 1, to: 1, text: ""}})
	if err != nil || string(got) != "x\nB\nc\nend\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := apply(src, []edit{{from: 1, to: 2, text: ""}, {from: 2, to: 2, text: ""}}); err == nil {
		t.Fatal("overlapping edits applied")
	}
}

func TestPruneFor(t *testing.T) {
	for in, want := range map[string]string{
		"npm ci": "npm prune --omit=dev", "npm ci --omit=dev": "", "npm install express": "", "npm install -g pm2": "",
		"pnpm install --frozen-lockfile": "pnpm prune --prod", "yarn install --production": "", "npm run build": "",
	} {
		if got := pruneFor(strings.Fields(in)); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

func TestComposeTestEdit(t *testing.T) {
	argv := []string{"CMD", "/nodejs/bin/node", "hc.js"}
	for _, tc := range []struct {
		name, in string
		line     int
		want     string
	}{
		{"flow", "services:\n  web:\n    healthcheck:\n      test: [\"CMD\", \"node\", \"hc.js\"]\n      interval: 5s\n", 4,
			"services:\n  web:\n    healthcheck:\n      test: [\"CMD\", \"/nodejs/bin/node\", \"hc.js\"]\n      interval: 5s\n"},
		{"string", "x:\n  healthcheck:\n    test: curl -f localhost\n", 3, "x:\n  healthcheck:\n    test: [\"CMD\", \"/nodejs/bin/node\", \"hc.js\"]\n"},
		{"block list, line of the healthcheck key", "h:\n  healthcheck:\n    test:\n      - CMD\n      - node\n    retries: 3\n", 2,
			"h:\n  healthcheck:\n    test: [\"CMD\", \"/nodejs/bin/node\", \"hc.js\"]\n    retries: 3\n"},
	} {
		edits, ok := composeTestEdit([]byte(tc.in), tc.line, argv)
		if !ok {
			t.Errorf("%s: not found", tc.name)
			continue
		}
		got, err := apply([]byte(tc.in), edits)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s:\n got %q (%v)\nwant %q", tc.name, got, err, tc.want)
		}
	}
	if _, ok := composeTestEdit([]byte("a: 1\nb: 2\n"), 1, argv); ok {
		t.Error("found a test key where there is none")
	}
}

// TestEveryRemovableRuleIsCarriedOut: each removable rule of the table
// names the file that carries it out, that file is in this package and
// mentions the rule, and no other rule is listed.
func TestEveryRemovableRuleIsCarriedOut(t *testing.T) {
	// The rule table's constants, by rule name.
	table, err := os.ReadFile(filepath.Join("..", "readiness", "rules.go"))
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(Rule\w+)\s*=\s*"([a-z_]+)"`).FindAllSubmatch(table, -1) {
		consts[string(m[2])] = string(m[1])
	}
	for _, rule := range readiness.Rules {
		file, ok := carriedOut[rule.Name]
		if ok != rule.Removable {
			t.Errorf("rule %s (removable %v) is listed in carriedOut: %v", rule.Name, rule.Removable, ok)
			continue
		}
		if !ok {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("rule %s: %v", rule.Name, err)
			continue
		}
		if c := consts[rule.Name]; c == "" || !strings.Contains(string(src), "readiness."+c) {
			t.Errorf("rule %s: %s does not name readiness.%s", rule.Name, file, c)
		}
	}
	for name := range carriedOut {
		if !slices.ContainsFunc(readiness.Rules, func(r readiness.Rule) bool { return r.Name == name }) {
			t.Errorf("carriedOut lists %s, which the rule table lacks", name)
		}
	}
}

// A glibc builder keeps its variant when it moves to the target major:
// node:18-bookworm has the compilers a native build falls back to, and
// its move to node:22-bookworm-slim dropped them (actual-server).
func TestBuilderRefKeepsTheVariant(t *testing.T) {
	t.Parallel()
	r := &rewriter{target: Target{Major: 22}}
	for base, want := range map[string]string{
		"node:18-bookworm":            "node:22-bookworm",
		"node:18-bookworm-slim":       "node:22-bookworm-slim",
		"node:18":                     "node:22",
		"node:20.11.1-slim":           "node:22-slim",
		"docker.io/library/node:24":   "node:22",
		"node:18-bookworm@sha256:abc": "node:22-bookworm",
		"node:18-alpine":              "node:22-bookworm-slim",
		"node:18-bullseye":            "node:22-bookworm-slim",
		"node:lts":                    "node:22-bookworm-slim",
		"node":                        "node:22-bookworm-slim",
		"ubuntu:24.04":                "node:22-bookworm-slim",
		// A version of the target's major stays, with the repository as
		// written (hedgedoc's docker.io/node:24.14.0-alpine@sha256:…).
		"docker.io/node:22.14.0-alpine@sha256:abc": "docker.io/node:22.14.0-bookworm-slim",
		"node:22.14-alpine3.21":                    "node:22.14-bookworm-slim",
		"node:22-alpine":                           "node:22-bookworm-slim",
		"node:22.11.0-bookworm":                    "node:22.11.0-bookworm",
		"docker.io/library/node:22.11.0-slim":      "docker.io/library/node:22.11.0-slim",
		"node:220.1-alpine":                        "node:22-bookworm-slim",
	} {
		if got := r.builderRefFor(base); got != want {
			t.Errorf("builderRefFor(%q) = %q, want %q", base, got, want)
		}
	}
}
