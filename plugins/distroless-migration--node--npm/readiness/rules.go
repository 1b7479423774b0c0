package readiness

import (
	"fmt"
	"sort"
)

// Rule is one row of the rule table that the verdict and the migrate
// recipe share. Each blocker names its rule. A removable rule names the
// rewrite that removes the blocker, and the recipe implements exactly those
// rewrites: ready_after_rewrite means "the recipe removes every blocker".
// A rule that is not removable says why no rewrite can remove it.
type Rule struct {
	Name      string
	Removable bool
	// Rewrite is what the recipe does (removable rules).
	Rewrite string
	// WhyNot is why no rewrite removes the blocker (the others).
	WhyNot string
}

// The rule names.
const (
	RuleScriptArgv      = "script_to_exec_form"
	RuleNodeLauncher    = "node_launcher"
	RuleExecForm        = "exec_form"
	RuleDistrolessBase  = "distroless_base"
	RuleDropNodeArgv    = "drop_node_argv"
	RuleHealthExecForm  = "healthcheck_exec_form"
	RuleHealthNode      = "healthcheck_node_script"
	RuleMoveToBuilder   = "move_to_builder"
	RuleJSEntry         = "js_entry"
	RuleEntrypointToEnv = "entrypoint_to_env"
	RuleGlibcBuilder    = "glibc_builder"
	RuleSameMajor       = "same_major_builder"
	RuleBumpNode        = "bump_node"
	RuleInitWrapper     = "init_wrapper"
	RuleNonRootUser     = "nonroot_user"

	RuleShellInCode     = "shell_in_code"
	RuleBinaryAtRuntime = "binary_at_runtime"
	RuleScriptLogic     = "entrypoint_script_logic"
	RuleShellLine       = "shell_command_line"
	RuleRunSideEffects  = "run_side_effects"
	RuleUnclassified    = "unclassified"
	RuleTracedShell     = "traced_shell"
)

// Rules is the rule table.
var Rules = []Rule{
	{Name: RuleScriptArgv, Removable: true, Rewrite: "npm/yarn/pnpm start or run x (and node --run x, npx x) becomes the script's own command in exec form, with the arguments the package manager passes it (not its own options); VAR=x prefixes, cross-env and env assignments, and npm_config_ settings from options npm does not know, move to ENV (cross-env and env would look node up by PATH, which distroless does not have); a script of another package (npm -w or --prefix, pnpm --filter or -C, yarn workspace or --cwd, cd DIR &&) runs with WORKDIR set to that package's directory"},
	{Name: RuleNodeLauncher, Removable: true, Rewrite: "pre/post hooks, && chains and npm-run-all/run-s of scripts that each come down to node commands (the start's steps, which the module graph starts from too) become a generated Node launcher that runs each step with process.execPath, in order, each with its own VAR=x or cross-env variables, and stops at the first failure with its status"},
	{Name: RuleExecForm, Removable: true, Rewrite: "a shell-form CMD or ENTRYPOINT that needs no expansion, pipe or redirection becomes exec form"},
	{Name: RuleDistrolessBase, Removable: true, Rewrite: "the runtime stage moves to gcr.io/distroless/nodejs<major>-debian13, whose entrypoint is node: the node image's docker-entrypoint.sh, a nodesource install and an end-of-life distroless line go with it"},
	{Name: RuleDropNodeArgv, Removable: true, Rewrite: "CMD holds node's arguments only (the distroless entrypoint is node): the leading node goes, and a preload such as --require ./otel.js becomes --require=./otel.js"},
	{Name: RuleHealthExecForm, Removable: true, Rewrite: "a shell-form HEALTHCHECK becomes exec form: with /nodejs/bin/node when it runs node, else the one simple command it runs (a healthcheck binary the image holds, whose own needs are judged on their own)"},
	{Name: RuleHealthNode, Removable: true, Rewrite: "a curl or wget HEALTHCHECK becomes a generated Node script that makes the same requests and passes on the same answers, with the same interval, timeout and retries; a pipe into grep (a fixed string, or a pattern of literal text, ., .*, ^ and $) is carried too, the script reading what the tool printed (the body it prints, or curl -w '%{http_code}') as grep did; an option it cannot carry makes the check a rewrite by hand, named"},
	{Name: RuleMoveToBuilder, Removable: true, Rewrite: "a final-stage RUN step that only produces files (dependency installs, users, directories, permissions, certificates) moves to the builder, and its results are copied with COPY --from, ownership kept; dev dependencies are pruned there"},
	{Name: RuleJSEntry, Removable: true, Rewrite: "a node_modules/.bin shim or a #!/usr/bin/env node file is replaced by the JavaScript file it runs"},
	{Name: RuleEntrypointToEnv, Removable: true, Rewrite: "an entrypoint script that only sets defaults and execs node becomes ENV plus an exec-form command; exec node app.js \"$@\" becomes ENTRYPOINT [\"/nodejs/bin/node\", \"app.js\"] with the script's default arguments as CMD, so that docker run's arguments reach the app as they did"},
	{Name: RuleGlibcBuilder, Removable: true, Rewrite: "an alpine (musl) builder moves to node:<major>-bookworm-slim, so native addons match the glibc runtime; its apk steps install the same packages by their Debian names, and a package with no Debian name codegenie knows makes the move a rewrite by hand, named (run_side_effects)"},
	{Name: RuleSameMajor, Removable: true, Rewrite: "the builder and the runtime use the same Node major, so native addons match the runtime's ABI"},
	{Name: RuleInitWrapper, Removable: true, Rewrite: "an init wrapper (tini, dumb-init, docker-init, catatonit) goes, and the command it wrapped is judged like any start; the generated Node launcher takes its place as pid 1, runs that command as its child and forwards SIGTERM, SIGINT and SIGHUP to it, so docker stop stops the service even when the app has no SIGTERM handler (ADR 0016)"},
	{Name: RuleNonRootUser, Removable: true, Rewrite: "a service that ran as root and moves to a target that runs as another user (distroless :nonroot, uid 65532) keeps what root let it do: the directories it writes (VOLUME, directories the runtime stage's RUN steps make, paths its reachable code writes with literal arguments) are made in a files stage and chowned to the target's uid, and copied with COPY --chown to that uid (a COPY makes its destination directory as root); a port below 1024 (EXPOSE, or a literal listen), which only root may bind without CAP_NET_BIND_SERVICE, or a write into a system directory (/etc, /usr, /root), which no files stage can hand over, picks the target's root variant (distroless :latest) instead; the change list says which and why (docs/gates/nonroot.md)"},
	{Name: RuleBumpNode, Removable: true, Rewrite: "a Node major with no distroless image is bumped to the nearest supported LTS (22, 24 or 26), with a warning"},

	{Name: RuleShellInCode, WhyNot: "the app's own code (or a dependency's) runs /bin/sh at run time; only a code change (execFile or spawn with an argv) removes it"},
	{Name: RuleBinaryAtRuntime, WhyNot: "the service runs a program a distroless image does not have; keep a non-distroless image, copy a static build in, or do the work in Node"},
	{Name: RuleScriptLogic, WhyNot: "the script has logic exec form cannot express (conditions, loops, traps, waits or migrations); move it into Node or an init job"},
	{Name: RuleShellLine, WhyNot: "the command line uses what only a shell does (variable expansion, pipes, redirections, non-node steps); split it by hand"},
	{Name: RuleRunSideEffects, WhyNot: "the step's effect is not a set of files the builder can hand over (services, kernel settings, files outside the app, or a command codegenie cannot read)"},
	{Name: RuleUnclassified, WhyNot: "codegenie cannot tell what this needs; read the evidence"},
	{Name: RuleTracedShell, WhyNot: "the traced boot ran a shell that no static finding explains, so no rewrite is known to remove it"},
}

var rulesByName = func() map[string]Rule {
	m := make(map[string]Rule, len(Rules))
	for _, r := range Rules {
		if _, dup := m[r.Name]; dup {
			panic("readiness: rule " + r.Name + " listed twice")
		}
		m[r.Name] = r
	}
	return m
}()

// RuleFor returns the named rule; it panics on a name the table lacks,
// since every blocker must be decided by the table.
func RuleFor(name string) Rule {
	r, ok := rulesByName[name]
	if !ok {
		panic(fmt.Sprintf("readiness: no rule %q in the rule table", name))
	}
	return r
}

// RuleNames lists the table's names, sorted.
func RuleNames() []string {
	out := make([]string, 0, len(Rules))
	for _, r := range Rules {
		out = append(out, r.Name)
	}
	sort.Strings(out)
	return out
}
