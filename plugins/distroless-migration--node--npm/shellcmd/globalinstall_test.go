package shellcmd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGlobalInstalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		want []GlobalInstall
	}{
		{"apk add git && yarn --non-interactive --frozen-lockfile global add thelounge@${THELOUNGE_VERSION} && yarn cache clean",
			[]GlobalInstall{{Tool: "yarn global add", Package: "thelounge", VersionVar: "THELOUNGE_VERSION", Line: 1}}},
		{"npm install -g --omit=dev n8n@1.2.3 @scope/cli@^2 ./local.tgz user/repo https://x.org/a.tgz",
			[]GlobalInstall{{Tool: "npm install -g", Package: "n8n", Version: "1.2.3", Line: 1}, {Tool: "npm install -g", Package: "@scope/cli", Version: "^2", Line: 1}}},
		{"npm --global i pm2", []GlobalInstall{{Tool: "npm install -g", Package: "pm2", Line: 1}}},
		{"npm i --location global --registry https://r.example serve", []GlobalInstall{{Tool: "npm install -g", Package: "serve", Line: 1}}},
		{"set -e\npnpm add -g @org/app@${V}-rc", []GlobalInstall{{Tool: "pnpm add -g", Package: "@org/app", Line: 2}}},
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
