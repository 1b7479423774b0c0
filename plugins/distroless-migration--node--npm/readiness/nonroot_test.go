package readiness

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
)

// TestNonRoot: the directories the judged stage's chain writes (VOLUME,
// mkdir and install -d of its RUN steps, the app's literal writes) and its
// ports below 1024, resolved against the WORKDIR and the start's folder.
func TestNonRoot(t *testing.T) {
	t.Parallel()
	src := `FROM node:22-slim AS base
WORKDIR /srv
RUN mkdir -p -m 0755 state /var/cache/app /srv/app
FROM node:22 AS build
RUN mkdir /build-only
FROM base
WORKDIR app
RUN install -d -o root -m 755 /var/lib/app uploads && mkdir $DIR
VOLUME ["/data", "logs"]
VOLUME /tmp/x
EXPOSE 80/tcp 8080 443-444
CMD ["node", "server.js"]
`
	d, err := dockerfile.Parse("Dockerfile", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cp := &childprocess.Facts{
		Writes: []childprocess.Write{
			{File: "a.js", Line: 1, Function: "writeFileSync", Arg: "'out/x.json'", Path: "out/x.json", CwdRelative: true},
			{File: "a.js", Line: 2, Function: "mkdirSync", Arg: "'/srv/app/cache'", Path: "/srv/app/cache", MakesDir: true},
			{File: "a.js", Line: 3, Function: "mkdirSync", Arg: "'/opt/db'", Path: "/opt/db", MakesDir: true, Recursive: true},
			{File: "a.js", Line: 4, Function: "writeFileSync", Arg: "'/data/again'", Path: "/data/again"},
		},
		Listens: []childprocess.Listen{{File: "a.js", Line: 5, Port: 80}, {File: "a.js", Line: 6, Port: 25}},
	}
	got := nonRoot(d, cp, &Start{Dir: "pkg"})
	ev := func(f string, l int) probe.Evidence { return probe.Evidence{File: f, Line: l} }
	want := &NonRoot{AsRoot: true,
		Writes: []Write{
			{Dir: "/srv/state", How: "RUN mkdir", Evidence: ev("Dockerfile", 3)},
			{Dir: "/var/cache/app", How: "RUN mkdir", Evidence: ev("Dockerfile", 3)},
			{Dir: "/var/lib/app", How: "RUN install -d", Evidence: ev("Dockerfile", 8)},
			{Dir: "/srv/app/uploads", How: "RUN install -d", Evidence: ev("Dockerfile", 8)},
			{Dir: "/data", How: "VOLUME", Evidence: ev("Dockerfile", 9)},
			{Dir: "/srv/app/logs", How: "VOLUME", Evidence: ev("Dockerfile", 9)},
			{Dir: "/srv/app/pkg/out", How: "writeFileSync('out/x.json')", Evidence: ev("a.js", 1)},
			// A new directory goes into its parent; a recursive mkdir's may
			// exist already.
			{Dir: "/srv/app", How: "mkdirSync('/srv/app/cache')", Evidence: ev("a.js", 2)},
			{Dir: "/opt/db", How: "mkdirSync('/opt/db')", Evidence: ev("a.js", 3)},
		},
		// buildkit sorts EXPOSE's ports as text.
		LowPorts: []Port{
			{Port: 443, How: "EXPOSE", Evidence: ev("Dockerfile", 11)},
			{Port: 80, How: "EXPOSE", Evidence: ev("Dockerfile", 11)},
			{Port: 25, How: "listen(25)", Evidence: ev("a.js", 6)},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nonRoot (-want +got):\n%s", diff)
	}
}

// TestNonRootUser: a USER in the chain is kept; USER root still runs as
// root.
func TestNonRootUser(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		user   string
		asRoot bool
	}{{"", true}, {"USER node\n", false}, {"USER root\n", true}, {"USER 0:0\n", true}, {"USER 1000\n", false}} {
		d, err := dockerfile.Parse("Dockerfile", []byte("FROM node:22\n"+tc.user+"CMD [\"node\", \"s.js\"]\n"))
		if err != nil {
			t.Fatal(err)
		}
		nr := nonRoot(d, nil, nil)
		if nr.AsRoot != tc.asRoot {
			t.Errorf("%q: as root %v, want %v", tc.user, nr.AsRoot, tc.asRoot)
		}
	}
}
