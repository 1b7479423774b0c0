package recipe

import (
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// TestDecideUser: chown what a root service wrote; the root variant when
// a low port, a system directory or a shell-less files stage needs root;
// a target the user chose is kept, with a warning; nothing when the
// service names its user or the target runs as root.
func TestDecideUser(t *testing.T) {
	t.Parallel()
	nonroot := DefaultTarget(22)
	latest, err := LookupTarget("gcr.io/distroless/nodejs22-debian13:latest", 22)
	if err != nil {
		t.Fatal(err)
	}
	w := func(dir, how string) readiness.Write {
		return readiness.Write{Dir: dir, How: how, Evidence: probe.Evidence{File: "Dockerfile", Line: 3}}
	}
	port80 := []readiness.Port{{Port: 80, How: "EXPOSE", Evidence: probe.Evidence{File: "Dockerfile", Line: 5}}}
	writes := []readiness.Write{w("/app/config", "mkdirSync('/app/config')"), w("/app/config/db", "VOLUME"), w("/data", "VOLUME")}
	for _, tc := range []struct {
		name      string
		nr        *readiness.NonRoot
		t         Target
		chosen    bool
		noFiles   string
		chown     []string
		root      string
		why, warn string
	}{
		{name: "no facts", t: nonroot},
		{name: "root writes: chown, the outer directory once", nr: &readiness.NonRoot{AsRoot: true, Writes: writes}, t: nonroot,
			chown: []string{"/app/config", "/data"}},
		{name: "a named user is kept", nr: &readiness.NonRoot{User: "node", Writes: writes}, t: nonroot},
		{name: "USER root stays root", nr: &readiness.NonRoot{AsRoot: true, User: "root", Writes: writes, LowPorts: port80}, t: nonroot},
		{name: "a root target needs nothing", nr: &readiness.NonRoot{AsRoot: true, Writes: writes, LowPorts: port80}, t: latest},
		{name: "port 80: the root variant", nr: &readiness.NonRoot{AsRoot: true, Writes: writes, LowPorts: port80}, t: nonroot,
			root: "gcr.io/distroless/nodejs22-debian13:latest", why: "port 80 (EXPOSE, Dockerfile:5)"},
		{name: "a system directory: the root variant", nr: &readiness.NonRoot{AsRoot: true, Writes: []readiness.Write{w("/etc/app", "VOLUME")}}, t: nonroot,
			root: "gcr.io/distroless/nodejs22-debian13:latest", why: "writes into /etc/app (VOLUME, Dockerfile:3), a system directory"},
		{name: "no shell to chown with: the root variant", nr: &readiness.NonRoot{AsRoot: true, Writes: writes}, t: nonroot, noFiles: "its stages have no shell to chown it with",
			root: "gcr.io/distroless/nodejs22-debian13:latest", why: "no shell to chown it with"},
		{name: "a chosen target is kept, with a warning, and still chowns", nr: &readiness.NonRoot{AsRoot: true, Writes: writes, LowPorts: port80}, t: nonroot, chosen: true,
			chown: []string{"/app/config", "/data"}, warn: "port 80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := DecideUser(tc.nr, tc.t, tc.chosen, tc.noFiles)
			var chown []string
			for _, c := range d.Chown {
				chown = append(chown, c.Dir)
			}
			if strings.Join(chown, " ") != strings.Join(tc.chown, " ") {
				t.Errorf("chown %v, want %v", chown, tc.chown)
			}
			switch {
			case tc.root == "" && d.Root != nil:
				t.Errorf("root variant %s, want none", d.Root.Ref)
			case tc.root != "" && (d.Root == nil || d.Root.Ref != tc.root || d.Root.UID != ""):
				t.Errorf("root variant %+v, want %s", d.Root, tc.root)
			}
			if !strings.Contains(d.Why, tc.why) || (tc.why == "") != (d.Why == "") {
				t.Errorf("why %q, want it to hold %q", d.Why, tc.why)
			}
			if !strings.Contains(d.Warning, tc.warn) || (tc.warn == "") != (d.Warning == "") {
				t.Errorf("warning %q, want it to hold %q", d.Warning, tc.warn)
			}
		})
	}
}

func TestRootVariant(t *testing.T) {
	t.Parallel()
	for ref, want := range map[string]string{
		"gcr.io/distroless/nodejs24-debian13:nonroot":       "gcr.io/distroless/nodejs24-debian13:latest",
		"gcr.io/distroless/nodejs22-debian13:debug-nonroot": "gcr.io/distroless/nodejs22-debian13:debug",
		// The hardened image's root tag is its -dev one, with a shell and
		// apt: not a stand-in for the shell-less runtime.
		"dhi.io/node:22-debian13": "",
	} {
		tg, err := LookupTarget(ref, 22)
		if err != nil {
			t.Fatal(err)
		}
		rv, ok := RootVariant(tg)
		if got := map[bool]string{true: rv.Ref, false: ""}[ok]; got != want {
			t.Errorf("RootVariant(%s) = %q, want %q", ref, got, want)
		}
	}
}

func TestShellWord(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/app/config":  "/app/config",
		"/app/my data": "'/app/my data'",
		"/app/$HOME":   "'/app/$HOME'",
		"/app/it's":    `'/app/it'\''s'`,
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
