package failtail

import "testing"

func TestLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, out, want string
		n               int
	}{
		{
			name: "npm ci out of sync",
			n:    5,
			out: `npm warn EBADENGINE Unsupported engine {
npm error code EUSAGE
npm error
npm error ` + "`npm ci`" + ` can only install packages when your package.json and package-lock.json are in sync.
npm error
npm error Missing: left-pad@1.3.0 from lock file
npm error
npm error Clean install a project
npm error
npm error Usage:
npm error npm ci
npm error
npm error Options:
npm error [--no-audit] [--dry-run]
npm error
npm error Run "npm help ci" for more info
npm notice
npm notice New major version of npm available! 10.9.9 -> 12.2.2
npm notice
npm error A complete log of this run can be found in: /root/.npm/_logs/x-debug-0.log
Error: building at STEP "RUN npm ci": while running runtime: exit status 1
`,
			want: "npm error code EUSAGE | npm error `npm ci` can only install packages when your package.json and package-lock.json are in sync. | npm error Missing: left-pad@1.3.0 from lock file | Error: building at STEP \"RUN npm ci\": while running runtime: exit status 1",
		},
		{
			name: "node crash",
			n:    3,
			out: `/app/node_modules/orm/lib/db.js:136
      throw new Error("a dialect is required");
            ^

Error: a dialect is required
    at new Db (/app/node_modules/orm/lib/db.js:136:13)
    at file:///app/src/db.js:2:19
    at ModuleJob.run (node:internal/modules/esm/module_job:343:25)

Node.js v22.23.5
`,
			want: `/app/node_modules/orm/lib/db.js:136 |       throw new Error("a dialect is required"); | Error: a dialect is required`,
		},
		{
			name: "usage cut at the top",
			n:    3,
			out: `npm error [--no-audit] [--dry-run]
npm error
npm error aliases: clean-install, ic
npm error
npm error Run "npm help ci" for more info
npm notice
npm error A complete log of this run can be found in: /root/.npm/_logs/x-debug-0.log
Error: building at STEP "RUN npm ci": while running runtime: exit status 1
`,
			want: `Error: building at STEP "RUN npm ci": while running runtime: exit status 1`,
		},
		{
			name: "buildah's missing build argument warnings",
			n:    5,
			out: `time="2026-12-04T21:42:32Z" level=warning msg="missing \"TAG_SUFFIX\" build argument. Try adding \"--build-arg TAG_SUFFIX=<VALUE>\" to the command line"
time="2026-12-04T21:42:32Z" level=warning msg="missing \"ARCH\" build argument. Try adding \"--build-arg ARCH=<VALUE>\" to the command line"
[1/3] STEP 1/11: FROM node:24-trixie-slim AS base
Error: creating build container: manifest unknown
`,
			want: "[1/3] STEP 1/11: FROM node:24-trixie-slim AS base | Error: creating build container: manifest unknown",
		},
		{
			name: "plain",
			n:    2,
			out:  "one\ntwo\nthree\n",
			want: "two | three",
		},
		{
			name: "only noise",
			n:    2,
			out:  "npm notice\nnpm notice x\n",
			want: "npm notice | npm notice x",
		},
	} {
		if got := Lines(tc.out, tc.n); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
