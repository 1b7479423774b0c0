package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/codegenie/codegenie/internal/buildnet"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/shelltrace"
)

// bootFlags say how long traced builds and boots run: a build step at
// most --step-timeout; a boot until the service has answered and settled,
// or has exited, and at most --boot-for.
type bootFlags struct {
	max, settle, step time.Duration
}

// register adds --boot-for and --settle; what names the boot ("the traced
// boot", "each gate boot").
func (f *bootFlags) register(fl *pflag.FlagSet, what string) {
	fl.DurationVar(&f.max, "boot-for", shelltrace.DefaultBootFor, "the longest "+what+" runs the image: it ends sooner once the service has answered every request and its HEALTHCHECK and then settled, or has exited")
	fl.DurationVar(&f.settle, "settle", sandbox.DefaultSettle, "how long "+what+" must go without an exec, after the service answered, before it ends; a shell that starts later than that is not seen")
	fl.DurationVar(&f.step, "step-timeout", sandbox.DefaultStepTimeout, "the longest one build step may run; a step past it is stopped, and the trace reports a timeout with what it saw up to then")
}

// validate checks the flags.
func (f *bootFlags) validate() error {
	if f.max <= 0 || f.settle <= 0 || f.step <= 0 {
		return usageErr("--boot-for, --settle and --step-timeout must be positive")
	}
	if f.settle >= f.max {
		return usageErr("--settle %s must be shorter than --boot-for %s", f.settle, f.max)
	}
	return nil
}

// netFlags say what the sandboxed builds may reach over the network, and
// with which CA bundle and secrets (buildnet.Settings).
type netFlags struct {
	bootEnv []string
	boot    []string
	egress  []string
	private bool
	ca      string
	secrets []string
}

// register adds --build-egress, --build-egress-private, --build-ca and
// --build-secret.
func (f *netFlags) register(fl *pflag.FlagSet) {
	fl.StringArrayVar(&f.egress, "build-egress", nil, `a destination HOST[:PORT] that build steps may reach through gate-control's egress proxy, besides the defaults: the npm registry (and Yarn's registry.yarnpkg.com when a yarn.lock is at the root), the registries the repository's .npmrc, .yarnrc.yml and pnpm settings name, and the apt/apk mirrors the base images' own sources name (repeatable); "none" keeps builds offline. Boots stay offline`)
	fl.StringArrayVar(&f.boot, "boot-egress", nil, "a destination HOST[:PORT] that the booted service may reach, for one that calls an API as it starts (repeatable): through a proxy of its own, named by HTTP_PROXY and HTTPS_PROXY with NODE_USE_ENV_PROXY=1 in its environment, so only proxy-aware clients use it; boots are offline without it")
	fl.StringArrayVar(&f.bootEnv, "boot-env", nil, "NAME=value (or NAME, for this process's value) in the booted service's environment, as docker run -e gives it: for a service that needs a setting to start (repeatable); the values reach no output, and the cache key holds only their digest")
	fl.BoolVar(&f.private, "build-egress-private", false, "let build steps reach loopback, private, link-local and metadata addresses through the egress proxy (refused otherwise, whatever the name resolves to)")
	fl.StringVar(&f.ca, "build-ca", "", "PEM CA bundle that every build step trusts besides its image's own (NODE_EXTRA_CA_CERTS, which Node clients such as yarn and corepack read, npm's cafile, SSL_CERT_FILE, CURL_CA_BUNDLE), for networks that inspect TLS; the image's trust store is not changed")
	fl.StringArrayVar(&f.secrets, "build-secret", nil, "a build secret, id=NAME,src=FILE, for RUN --mount=type=secret,id=NAME (repeatable); its bytes appear in no output, cache or log")
}

// settings reads the flags and the files they name.
func (f *netFlags) settings() (*buildnet.Settings, error) {
	s, err := buildnet.Parse(f.egress, f.private, f.ca, f.secrets)
	if err == nil {
		err = s.ParseBoot(f.boot)
	}
	if err == nil {
		err = s.ParseBootEnv(f.bootEnv)
	}
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return s, nil
}

// serveArgs are what a private gate-control needs to allow these
// settings: its default cap allows any public host.
func (f *netFlags) serveArgs() []string {
	if f.private {
		return []string{"--egress-allow-private"}
	}
	return nil
}
