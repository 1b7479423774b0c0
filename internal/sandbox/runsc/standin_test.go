package runsc

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/devimages"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// standinDockerfile builds on each stand-in base image what real
// Dockerfiles do on the real ones: add a system user with Debian's
// groupadd and useradd, run apt-get, the build tools of the full image,
// node and npm; on distroless, node finds no shell, no env, and one dpkg
// status file per package. The final stage gathers each stage's mark, so
// every stage is built.
const standinDockerfile = `FROM node:22 AS full
RUN groupadd -r app && useradd -r -g app app && id app
RUN apt-get --version
RUN gcc --version && make --version && python3 --version && git --version && curl --version && ps --version && node --version && npm --version && echo full-ok > /full-ok

FROM node:22-slim AS slim
RUN groupadd -r app && useradd -r -g app app && apt-get --version && node --version && npm --version && echo slim-ok > /slim-ok
RUN mkdir -p /tmp/p/DEBIAN /tmp/p/usr/share/doc/cgtest /tmp/p/usr/lib/cgtest && printf 'Package: cgtest\nVersion: 1\nArchitecture: all\nMaintainer: t <t@t>\nDescription: t\n' > /tmp/p/DEBIAN/control && echo doc > /tmp/p/usr/share/doc/cgtest/README && echo lib > /tmp/p/usr/lib/cgtest/x && dpkg-deb --build /tmp/p /tmp/cgtest.deb >/dev/null && dpkg -i /tmp/cgtest.deb && test -e /usr/lib/cgtest/x && test ! -e /usr/share/doc/cgtest/README && echo docs-excluded

FROM gcr.io/distroless/nodejs22-debian13 AS distroless
RUN ["/nodejs/bin/node", "-e", "const fs = require('fs'); for (const p of ['/bin/sh', '/usr/bin/sh', '/bin/bash', '/usr/bin/env', '/usr/bin/dpkg']) { if (fs.existsSync(p)) throw new Error(p + ' is there'); } const st = fs.readdirSync('/var/lib/dpkg/status.d'); if (!st.includes('libc6') || !st.includes('libssl3t64')) throw new Error('status.d: ' + st); fs.writeFileSync('/distroless-ok', 'distroless-ok')"]

FROM gcr.io/distroless/nodejs22-debian13:nonroot
COPY --from=full /full-ok /ok/
COPY --from=slim /slim-ok /ok/
COPY --from=distroless /distroless-ok /ok/
CMD ["-e", "console.log('marks', require('fs').readdirSync('/ok').sort().join(','), 'uid', process.getuid())"]
`

// TestStandinImagesBehave builds standinDockerfile under runsc and boots
// the result: the stand-ins are Debian, not busybox.
func TestStandinImagesBehave(t *testing.T) {
	b := newBackend(t, Config{})
	m := mirrors(t)
	ws := workspace(t, map[string]string{"Dockerfile": standinDockerfile})
	req := buildRequest(ws, m, "")
	req.Timeout = 10 * time.Minute
	res, err := b.Spawn(t.Context(), req)
	logResult(t, res)
	if err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	for _, p := range res.Phases {
		if p.Failed {
			t.Errorf("phase %s failed (exit %d):\n%s", p.Name, p.ExitCode, p.OutputTail)
		}
	}
	for step, want := range map[string][]string{
		"build:full:step 2": {"uid=", "(app)"},
		"build:full:step 3": {"apt "},
		"build:full:step 4": {"gcc", "Python 3", "git version", "curl ", "procps", "v22."},
		"build:slim:step 2": {"apt ", "v22."},
		// dpkg leaves docs out of every later install, as on Debian's
		// -slim images: apt-get install works there.
		"build:slim:step 3": {"docs-excluded"},
	} {
		out := phase(res.Phases, step).OutputTail
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s's output lacks %q:\n%s", step, w, out)
			}
		}
	}
	boot := phase(res.Phases, sandbox.PhaseBoot)
	if !strings.Contains(boot.OutputTail, "marks distroless-ok,full-ok,slim-ok uid 65532") {
		t.Errorf("boot: %+v; want node to list the three marks as uid 65532", boot)
	}
}

// TestStandinNode24 runs node on the Node 24 stand-ins, when setup.sh
// fetched that tarball.
func TestStandinNode24(t *testing.T) {
	if _, err := os.Stat(devimages.DefaultInputs().Node24Tarball); err != nil {
		t.Skipf("no Node 24 tarball (%v): scripts/setup.sh fetches it", err)
	}
	b := newBackend(t, Config{})
	m := mirrors(t)
	ws := workspace(t, map[string]string{"Dockerfile": `FROM node:24 AS full
RUN node --version > /full-ok && useradd -r app

FROM node:24-slim AS slim
RUN node --version > /slim-ok && useradd -r app

FROM gcr.io/distroless/nodejs24-debian13
COPY --from=full /full-ok /ok/
COPY --from=slim /slim-ok /ok/
CMD ["-e", "const fs = require('fs'); console.log('versions', process.version, fs.readFileSync('/ok/full-ok', 'utf8').trim(), fs.readFileSync('/ok/slim-ok', 'utf8').trim())"]
`})
	req := buildRequest(ws, m, "")
	req.Timeout = 10 * time.Minute
	res, err := b.Spawn(t.Context(), req)
	logResult(t, res)
	if err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	boot := phase(res.Phases, sandbox.PhaseBoot)
	f := strings.Fields(boot.OutputTail)
	if len(f) < 4 || f[0] != "versions" || !strings.HasPrefix(f[1], "v24.") || f[2] != f[1] || f[3] != f[1] {
		t.Errorf("boot: %+v; want the same v24 from the three images", boot)
	}
}
