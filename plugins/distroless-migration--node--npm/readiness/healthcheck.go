package readiness

// HEALTHCHECK: the image's and a compose service's health checks, and
// whether a generated Node check can check the same thing.

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/httpcheck"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// healthcheck judges one health check of the judged image: its
// HEALTHCHECK, or (hcFile a compose file) the compose service's.
func (b *builder) healthcheck(d *dockerfile.File, hc dockerfile.Instruction, hcFile string) {
	if hc.HealthcheckNone || len(hc.Args) == 0 {
		return
	}
	argv := hc.Args
	inCompose := hcFile != d.Path
	if hc.Form == dockerfile.FormExec && !inCompose {
		b.execHealth = argv
	}
	env := httpEnv{opts: httpcheck.Options{BusyboxWget: busyboxWget(d)}, proxy: proxyEnv(d), image: imageEnv(d)}
	var line string
	var bl probe.Blocker
	switch {
	case hc.Form == dockerfile.FormShell:
		line = hc.Args[0]
		if cmds, why := shellcmd.AndList(line); why == "" && len(cmds) == 1 && len(cmds[0].Env) == 0 {
			// CMD sh -c 'curl … || exit 1': the shell the shell form
			// starts only starts another one, which runs the line.
			if inner := shellcmd.ShellLineOnly(cmds[0].Argv); inner != "" {
				line = inner
			}
		}
		bl = probe.Blocker{ID: dockerfileprobe.WarnShellFormHealth, Kind: probe.ShellAtRuntime,
			Title: fmt.Sprintf("HEALTHCHECK CMD %s runs through /bin/sh -c", hc.Args[0]), Evidence: ev(hcFile, hc.Line)}
	case shellcmd.IsShell(argv[0]) && len(argv) >= 3 && argv[1] == "-c":
		// ["sh", "-c", LINE] is a shell-form check written as exec form.
		line = hc.Args[2]
		bl = probe.Blocker{ID: dockerfileprobe.WarnShellFormHealth, Kind: probe.ShellAtRuntime,
			Title: fmt.Sprintf("HEALTHCHECK runs %s -c %q", hc.Args[0], hc.Args[2]), Evidence: ev(hcFile, hc.Line)}
	}
	if bl.ID != "" {
		a := healthAnalysis(line)
		cl, why, ok := shellcmd.ParseCheckLine(line)
		switch {
		case ok && httpcheck.IsClient(cl.Argv):
			b.httpHealth(bl, cl, env, inCompose)
		case len(a.Commands) > 0 && httpcheck.IsClient(a.Commands[0]):
			// A curl or wget check in a line that does more: a pipe into
			// a grep it cannot carry, a second request, an expansion.
			if why == "" {
				why = "it does more than run " + a.Commands[0][0]
			}
			bl.Rule, bl.WhyNot = RuleShellLine, fmt.Sprintf("the %s check line cannot become a generated Node check that checks the same thing: %s; write the check as a Node script", path.Base(a.Commands[0][0]), why)
			b.healthKept = true
			b.Add(bl)
		default:
			b.health(bl, a, inCompose)
		}
		return
	}
	switch {
	case isNodeWord(argv[0]) && argv[0] != dockerfile.DistrolessEntrypoint:
		b.health(probe.Blocker{ID: dockerfileprobe.WarnShellFormHealth, Kind: probe.MissingBinary,
			Title:    fmt.Sprintf("HEALTHCHECK runs %q, but distroless has node only at /nodejs/bin/node, not on PATH", argv[0]),
			Evidence: ev(hcFile, hc.Line)}, shellcmd.Analysis{Removable: true, Argv: argv}, inCompose)
	case httpcheck.IsClient(argv):
		b.httpHealth(probe.Blocker{ID: noderuntime.WarnMissingBinary, Kind: probe.MissingBinary,
			Title:    fmt.Sprintf("HEALTHCHECK runs %s, which distroless lacks", argv[0]),
			Evidence: ev(hcFile, hc.Line)}, shellcmd.CheckLine{Argv: argv}, env, inCompose)
	}
}

// httpEnv is what decides how the image's curl or wget behaves beyond its
// command line: which wget it is, and a proxy its ENV sets.
type httpEnv struct {
	opts  httpcheck.Options
	proxy map[string]string // proxy variables the final stage's ENV sets, and no_proxy
	image map[string]string // every variable the final stage's ENV sets
}

// busyboxWget reports a final stage whose wget is BusyBox's: an Alpine or
// BusyBox base (or a distroless :debug one) with no wget package added.
func busyboxWget(d *dockerfile.File) bool {
	root := ""
	for i, n := d.Final, 0; i >= 0 && i < len(d.Stages) && n <= len(d.Stages); i, n = d.Stages[i].BaseStage, n+1 {
		root = d.Stages[i].ResolvedBase
		for _, in := range d.Stages[i].Instructions {
			if in.Command == "run" && apkAddWgetRE.MatchString(strings.Join(in.Args, " ")) {
				return false
			}
		}
	}
	return strings.Contains(root, "alpine") || strings.Contains(root, "busybox") || strings.HasSuffix(root, ":debug") ||
		strings.Contains(root, ":debug-")
}

var apkAddWgetRE = regexp.MustCompile(`\bapk\s+(?:[^&;|]*\s)?add\b[^&;|]*\swget\b`)

// proxyEnv returns the proxy variables (and no_proxy) the final stage's
// ENV sets, by lower-case name: curl and wget send their requests through
// them.
func proxyEnv(d *dockerfile.File) map[string]string {
	out := map[string]string{}
	env := imageEnv(d)
	// HTTP_PROXY and http_proxy: the lower-case one, as curl reads them.
	for _, k := range slices.Sorted(maps.Keys(env)) {
		switch lk := strings.ToLower(k); lk {
		case "http_proxy", "https_proxy", "all_proxy", "no_proxy":
			out[lk] = env[k]
		}
	}
	return out
}

// imageEnv returns the variables the final stage's ENV (and its FROM
// chain's) sets, as the image has them: a later ENV wins.
func imageEnv(d *dockerfile.File) map[string]string {
	var chain []int
	for i := d.Final; i >= 0 && i < len(d.Stages) && len(chain) <= len(d.Stages); i = d.Stages[i].BaseStage {
		chain = append([]int{i}, chain...)
	}
	out := map[string]string{}
	for _, i := range chain {
		for _, in := range d.Stages[i].Instructions {
			if in.Command != "env" {
				continue
			}
			for _, kv := range in.Args {
				if k, v, ok := strings.Cut(kv, "="); ok {
					out[k] = strings.Trim(v, `"'`)
				}
			}
		}
	}
	return out
}

// viaProxy names the proxy variable a check's request would go through,
// "" when none (no proxy set, or no_proxy lists every URL's host).
func viaProxy(proxy map[string]string, c *httpcheck.Check) string {
	if c.UnixSocket != "" {
		return ""
	}
	for _, raw := range c.URLs {
		u, err := url.Parse(raw)
		if err != nil {
			return "a proxy"
		}
		name := "http_proxy"
		if u.Scheme == "https" {
			name = "https_proxy"
		}
		for _, n := range []string{name, "all_proxy"} {
			if proxy[n] == "" || noProxy(proxy["no_proxy"], u.Hostname()) {
				continue
			}
			return n
		}
	}
	return ""
}

func noProxy(list, host string) bool {
	for _, h := range strings.Split(list, ",") {
		h = strings.TrimPrefix(strings.TrimSpace(h), ".")
		if h == "*" || h != "" && (strings.EqualFold(h, host) || strings.HasSuffix(strings.ToLower(host), "."+strings.ToLower(h))) {
			return true
		}
	}
	return false
}

// httpHealth decides a curl or wget health check's blocker: a generated
// Node check that checks the same thing, or, when the command does
// something a generated check would not, a rewrite by hand, saying what.
func (b *builder) httpHealth(bl probe.Blocker, cl shellcmd.CheckLine, env httpEnv, inCompose bool) {
	prog := path.Base(cl.Argv[0])
	// Words built from the environment are read as the image's ENV
	// resolves them; the generated check builds them again at run time.
	argv := slices.Clone(cl.Argv)
	for _, w := range cl.EnvWords {
		argv[w.Index] = w.Resolve(env.image)
	}
	c, err := httpcheck.Parse(argv, env.opts)
	for _, w := range cl.EnvWords {
		if err == nil {
			err = c.FromEnv(argv[w.Index], w.Parts)
		}
	}
	if err == nil && cl.Grep != nil {
		err = c.Pipe(cl.Grep.Regexp, cl.Grep.IgnoreCase, strings.Join(cl.Grep.Argv, " "))
	}
	why := ""
	switch {
	case len(cl.Env) > 0:
		name, _, _ := strings.Cut(cl.Env[0], "=")
		why = fmt.Sprintf("the line sets %s for %s", name, prog)
	case err != nil:
		why = err.Error()
	default:
		if p := viaProxy(env.proxy, c); p != "" {
			why = fmt.Sprintf("the image's ENV sets %s, so %s sends the request through a proxy", p, prog)
		}
	}
	if why != "" {
		bl.Rule, bl.WhyNot = RuleShellLine, fmt.Sprintf("the %s check cannot become a generated Node check that checks the same thing: %s; write the check as a Node script", prog, why)
		b.healthKept = true
		b.Add(bl)
		return
	}
	c.AlwaysSucceeds = cl.AlwaysSucceeds
	bl.Rule, bl.Fix = RuleHealthNode, healthFix(c)
	b.healthToNode = true
	if inCompose {
		bl.Fix = "the compose healthcheck's test: " + strings.TrimPrefix(bl.Fix, "HEALTHCHECK CMD ")
	}
	b.addEdit(bl, Edit{HealthURL: c.URLs[0], HealthCheck: c, InCompose: inCompose})
}

// health decides a health check's blocker that is not curl or wget: exec
// form with node, or a check only a person can rewrite. A check the
// compose file sets is rewritten there.
func (b *builder) health(bl probe.Blocker, a shellcmd.Analysis, inCompose bool) {
	where := "HEALTHCHECK CMD "
	if inCompose {
		where = "the compose healthcheck's test: [\"CMD\", ...]: "
	}
	if a.Removable && len(a.Env) == 0 && len(a.Argv) > 0 && isNodeWord(a.Argv[0]) {
		bl.Rule, bl.Fix = RuleHealthExecForm, where+quoteArgv(append([]string{dockerfile.DistrolessEntrypoint}, a.Argv[1:]...))
		b.addEdit(bl, Edit{Health: a.Argv[1:], InCompose: inCompose})
		return
	}
	if !a.NeedsShell && len(a.Argv) > 0 && !shellcmd.IsShell(a.Argv[0]) {
		// One simple command of another program (a static healthcheck
		// binary the image copies in): exec form runs it with no shell.
		// Whether distroless can run the program is its own blocker.
		bl.Rule, bl.Fix = RuleHealthExecForm, where+quoteArgv(a.Argv)
		b.addEdit(bl, Edit{Health: a.Argv[1:], HealthProgram: a.Argv[0], InCompose: inCompose})
		b.healthPrograms = append(b.healthPrograms, healthProgramUse{bin: a.Argv[0], at: bl.Evidence[0]})
		return
	}
	bl.Rule, bl.Fix = RuleShellLine, "write the check as a Node script: HEALTHCHECK CMD [\"/nodejs/bin/node\", \"healthcheck.js\"]"
	b.healthKept = true
	b.Add(bl)
}

// healthProgramUse is a program other than node that a HEALTHCHECK runs
// in exec form once rewritten, and where.
type healthProgramUse struct {
	bin string
	at  probe.Evidence
}

// healthProgramsCopied: a program the rewritten HEALTHCHECK runs that the
// Dockerfile copies in (a healthcheck binary) is there, but whether it
// runs on distroless depends on what it links. A script codegenie read
// has its own blocker. (After executables, which reads the scripts.)
func (b *builder) healthProgramsCopied() {
	for _, u := range b.healthPrograms {
		if b.readScripts["healthcheck "+u.bin] {
			continue
		}
		if line, ok := b.copiedProgram(u.bin, imageEnv(b.judged)); ok && !staticGoBuild(b.judged, line) {
			b.Add(copiedProgramBlocker(noderuntime.WarnMissingBinary, "the HEALTHCHECK", u.bin, line,
				[]probe.Evidence{u.at, {File: b.judged.Path, Line: line, Note: "copies " + baseName(u.bin) + " into the image"}}))
		}
	}
}

// healthAnalysis analyses a shell-form health check. "CHECK || exit 1" is
// CHECK: Docker takes any non-zero exit as unhealthy, so the fallback adds
// nothing a shell is needed for (and output sent to /dev/null changes no
// exit status). A fallback that exits 0 is not dropped: it makes the check
// pass whatever CHECK does.
func healthAnalysis(line string) shellcmd.Analysis {
	a := shellcmd.Analyze(line)
	if a.Removable || !a.NeedsShell {
		return a
	}
	// A pipe into grep is carried only into a generated curl or wget
	// check (httpHealth): grep decides the line's status.
	if cl, _, ok := shellcmd.ParseCheckLine(line); ok && !cl.AlwaysSucceeds && len(cl.Env) == 0 && cl.Grep == nil && len(cl.EnvWords) == 0 {
		return shellcmd.Analysis{NeedsShell: true, Reasons: a.Reasons, Removable: true, Argv: cl.Argv, Commands: [][]string{cl.Argv}}
	}
	return a
}

// healthFix is the Node health check that checks what c does.
func healthFix(c *httpcheck.Check) string {
	return fmt.Sprintf("HEALTHCHECK CMD [\"/nodejs/bin/node\", \"healthcheck.js\"] with a script that requests %s as %s did and %s",
		strings.Join(c.URLs, " and "), healthTool(c.Tool), c.Rule())
}

func healthTool(t string) string {
	if t == httpcheck.BusyboxWget {
		return "BusyBox wget"
	}
	return t
}
