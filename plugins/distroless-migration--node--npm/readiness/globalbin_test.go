package readiness

import (
	"testing"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// TestGlobalBin: a start's program is a global package's bin by the
// package's unscoped name, or by a bin name the package is known to give
// (pm2's pm2-runtime); a program under a folder that is not a bin folder,
// or another name, is not.
func TestGlobalBin(t *testing.T) {
	t.Parallel()
	globals := []noderuntime.GlobalPackage{
		{Dockerfile: "Dockerfile", PackageInstall: shellcmd.PackageInstall{Tool: "npm install -g", Package: "pm2", Version: "5.4.2", Line: 3, Global: true}},
		{Dockerfile: "Dockerfile", PackageInstall: shellcmd.PackageInstall{Tool: "yarn global add", Package: "@acme/thelounge", Line: 4, Global: true}},
	}
	b := &builder{}
	for prog, want := range map[string]string{"pm2-runtime": "pm2", "/usr/local/bin/pm2": "pm2", "thelounge": "@acme/thelounge",
		"/app/pm2": "", "pm2-other": "", "node": ""} {
		g, ok := b.globalBin(globals, prog)
		if got := map[bool]string{true: g.Package}[ok]; got != want {
			t.Errorf("globalBin(%q) = %q, want %q", prog, got, want)
		}
	}
}
