package shellcmd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGlobalInstalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		want []PackageInstall
	}{
		{"apk add git && yarn --non-interactive --frozen-lockfile global add thelounge@${THELOUNGE_VERSION} && yarn cache clean",
			[]PackageInstall{{Tool: "yarn global add", Package: "thelounge", VersionVar: "THELOUNGE_VERSION", Line: 1, Global: true}}},
		{"npm install -g --omit=dev n8n@1.2.3 @scope/cli@^2 ./local.tgz user/repo https://x.org/a.tgz",
			[]PackageInstall{{Tool: "npm install -g", Package: "n8n", Version: "1.2.3", Line: 1, Global: true}, {Tool: "npm install -g", Package: "@scope/cli", Version: "^2", Line: 1, Global: true}}},
		{"npm --global i pm2", []PackageInstall{{Tool: "npm install -g", Package: "pm2", Line: 1, Global: true}}},
		{"npm i --location global --registry https://r.example serve", []PackageInstall{{Tool: "npm install -g", Package: "serve", Line: 1, Global: true}}},
		{"set -e\npnpm add -g @org/app@${V}-rc", []PackageInstall{{Tool: "pnpm add -g", Package: "@org/app", Line: 2, Global: true}}},
		{"npm install pm2", nil},                       // not global
		{"npm ci && npm run build -- -g", nil},         // not an install
		{"yarn add left-pad && yarn global list", nil}, // not a global add
		{"npm i -g ${PKG}", nil},                       // name unknown
	} {
		if diff := cmp.Diff(tc.want, GlobalInstalls(tc.line)); diff != "" {
			t.Errorf("GlobalInstalls(%q) (-want +got):\n%s", tc.line, diff)
		}
	}
}

func TestInstalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		want []PackageInstall
	}{
		{"npm install --no-save --omit=dev libsql", []PackageInstall{{Tool: "npm install", Package: "libsql", Line: 1}}},
		{"apk add git && npm i --prefix /opt/x sharp@0.34.1 && npm i -g pm2",
			[]PackageInstall{{Tool: "npm install", Package: "sharp", Version: "0.34.1", Line: 1}, {Tool: "npm install -g", Package: "pm2", Line: 1, Global: true}}},
		{"yarn --silent add @libsql/client@^0.17", []PackageInstall{{Tool: "yarn add", Package: "@libsql/client", Version: "^0.17", Line: 1}}},
		{"pnpm add better-sqlite3", []PackageInstall{{Tool: "pnpm add", Package: "better-sqlite3", Line: 1}}},
		// Options before the command (umami's runner stage).
		{"pnpm --allow-build='@prisma/engines' add npm-run-all prisma@${PRISMA_VERSION}", []PackageInstall{
			{Tool: "pnpm add", Package: "npm-run-all", Line: 1}, {Tool: "pnpm add", Package: "prisma", VersionVar: "PRISMA_VERSION", Line: 1}}},
		{"pnpm --filter web add dayjs", []PackageInstall{{Tool: "pnpm add", Package: "dayjs", Line: 1}}},
		{"pnpm -C apps/api add -g tsx", []PackageInstall{{Tool: "pnpm add -g", Package: "tsx", Line: 1, Global: true}}},
		{"pnpm --filter web run build", nil},
		{"npm ci && npm install", nil},          // the lockfile's packages, none named
		{"yarn install --frozen-lockfile", nil}, // not an add
		{"yarn workspace web add x", nil},       // another workspace's add: not read
	} {
		if diff := cmp.Diff(tc.want, Installs(tc.line)); diff != "" {
			t.Errorf("Installs(%q) (-want +got):\n%s", tc.line, diff)
		}
	}
}
