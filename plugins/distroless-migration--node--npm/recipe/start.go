package recipe

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// The start command (rules script_to_exec_form, node_launcher, exec_form,
// drop_node_argv, js_entry, entrypoint_to_env and init_wrapper).

// startRules are the rules whose rewrite is the start command.
var startRules = []string{readiness.RuleInitWrapper, readiness.RuleScriptArgv, readiness.RuleNodeLauncher, readiness.RuleExecForm, readiness.RuleDropNodeArgv,
	readiness.RuleJSEntry, readiness.RuleEntrypointToEnv}

// startLines are the instructions that start the service on the target.
func (r *rewriter) startLines() ([]string, error) {
	s := r.in.Plan.Start
	if s == nil {
		return nil, r.refuse(readiness.RuleUnclassified, "the service's start command is not known", "codegenie cannot tell what the container runs, so it cannot write its exec-form command", 0)
	}
	if r.has(readiness.RuleInitWrapper) && s.Init == "" {
		// The init's job would go with it, unreplaced.
		return nil, r.refuse(readiness.RuleUnclassified, "the start runs through an init wrapper that the plan does not name", "codegenie cannot tell which command the init wraps, so the launcher cannot take its place", 0)
	}
	var out []string
	if len(s.Env) > 0 {
		out = append(out, "ENV "+strings.Join(quoteEnv(s.Env), " ")+"\n")
	}
	var args []string
	switch {
	case s.Program != nil:
		return nil, r.refuse(readiness.RuleBinaryAtRuntime, "the service starts "+strings.Join(s.Program, " "), "it is not node, and a distroless node image runs node", 0)
	case len(s.Steps) > 0 || s.Bin != "" || s.Init != "":
		var steps []step
		for i, st := range s.Steps {
			if i < len(s.StepBin) && s.StepBin[i] != "" {
				steps = append(steps, step{Bin: s.StepBin[i], Args: append([]string{}, st[1:]...)})
			} else {
				steps = append(steps, step{Args: readiness.DistrolessCmd(st)})
			}
			if i < len(s.StepEnv) {
				steps[i].Env = envObject(s.StepEnv[i])
			}
		}
		switch {
		case s.Bin != "":
			steps = append(steps, step{Bin: s.Bin, Args: append([]string{}, s.Args...)})
		case len(s.Steps) == 0:
			// An init wrapper's command: the launcher, as pid 1, runs it as
			// its child and forwards signals to it, as the init did.
			steps = append(steps, step{Args: append([]string{}, s.Args...)})
		}
		if s.AppendArgs {
			steps[len(steps)-1].PassArgs = true
		}
		for i := range steps {
			if steps[i].Args == nil {
				steps[i].Args = []string{}
			}
		}
		r.generate(readiness.RuleNodeLauncher, LauncherName, launcher(steps, nil))
		// COPY sources are relative to the build context, where generate
		// puts the file.
		out = append(out, fmt.Sprintf("COPY %s %s\n", LauncherName, path.Join(r.wd, LauncherName)))
		args = []string{path.Join(r.wd, LauncherName)}
		cmd := ""
		if !s.AppendArgs {
			cmd = " (CMD " + execForm(args) + ")"
		}
		if len(s.Steps) > 0 || s.Bin != "" {
			r.change(readiness.RuleNodeLauncher, fmt.Sprintf("a generated launcher (%s) runs %s without a shell%s", LauncherName, s.From, cmd))
		}
		if s.Bin != "" {
			r.change(readiness.RuleScriptArgv, fmt.Sprintf("%s becomes %s%s, which runs %s's JS file from node_modules", s.From, LauncherName, cmd, s.Bin))
		}
		if s.Init != "" {
			r.change(readiness.RuleInitWrapper, fmt.Sprintf("%s goes; %s runs %s as its child and forwards SIGTERM, SIGINT and SIGHUP to it%s; unlike %s, it does not reap orphaned grandchildren (only a service that starts processes and abandons them leaves any; docs/adr/0016)", s.Init, LauncherName, s.From, cmd, path.Base(strings.Fields(s.Init)[0])))
		}
	default:
		args = s.Args
	}
	entry := ""
	switch {
	case s.AppendArgs:
		// exec node app.js "$@": node and its fixed arguments are the
		// ENTRYPOINT, and docker run's arguments (else CMD) follow them.
		entry = execForm(append([]string{r.target.Node}, args...))
		out = append(out, "ENTRYPOINT "+entry+"\n")
		args = s.CmdArgs
	case !r.target.EntrypointNode:
		out = append(out, "ENTRYPOINT "+execForm([]string{r.target.Node})+"\n")
	}
	where := ""
	if s.Dir != "" {
		// The script of another package runs in that package's folder.
		out = append(out, "WORKDIR "+path.Join(r.wd, s.Dir)+"\n")
		where = fmt.Sprintf(", with WORKDIR %s, the folder %s ran in", path.Join(r.wd, s.Dir), s.From)
		if len(s.Steps) > 0 || s.Bin != "" {
			r.change(readiness.RuleScriptArgv, fmt.Sprintf("the command runs in %s, as %s did", path.Join(r.wd, s.Dir), s.From))
		}
	}
	if len(args) > 0 || !s.AppendArgs {
		out = append(out, "CMD "+execForm(args)+"\n")
	}
	if len(s.Steps) == 0 && s.Bin == "" {
		what := fmt.Sprintf("%s becomes CMD %s", s.From, execForm(args))
		if s.AppendArgs {
			what = fmt.Sprintf("%s becomes ENTRYPOINT %s", s.From, entry)
			if len(args) > 0 {
				what += " and CMD " + execForm(args)
			}
		}
		what += where
		if len(s.Env) > 0 {
			what += " with ENV " + strings.Join(s.Env, " ")
		}
		if s.AppendArgs {
			what += `; docker run's arguments follow the command, as the script's "$@" passed them`
		}
		for _, rule := range startRules {
			if rule != readiness.RuleNodeLauncher {
				r.changeIfBlocked(rule, what)
			}
		}
		if !slices.ContainsFunc(startRules, r.has) && !r.startUnchanged(out, args) {
			// No blocker asked for it: the start is rewritten for the new
			// base, whose entrypoint is node.
			r.change(readiness.RuleDropNodeArgv, what+", for "+r.target.Ref+"'s entrypoint")
		}
	}
	r.changeIfBlocked(readiness.RuleJSEntry, "the start runs the JS file itself, not its shim or #!/usr/bin/env node wrapper")
	r.warnScriptRunner()
	return out, nil
}

// warnScriptRunner warns when the image's ENTRYPOINT ran the package
// script that docker run names (logto's ENTRYPOINT ["npm", "run"] with
// CMD ["start"]): the rewrite runs the default script only, and another
// one named on docker run's command line goes to node instead.
func (r *rewriter) warnScriptRunner() {
	ep, ok := r.d.Effective(r.t, "entrypoint")
	if !ok || ep.Form != dockerfile.FormExec || len(ep.Args) == 0 {
		return
	}
	a := ep.Args
	runner := false
	switch path.Base(a[0]) {
	case "npm", "pnpm":
		runner = len(a) == 2 && (a[1] == "run" || a[1] == "run-script")
	case "yarn":
		runner = len(a) == 1 || len(a) == 2 && a[1] == "run"
	}
	if !runner {
		return
	}
	r.res.Warnings = append(r.res.Warnings, fmt.Sprintf(
		"the image's ENTRYPOINT %s ran the package script that docker run names (line %d); the rewritten image runs %s only, and a script named on docker run's command line (docker run IMAGE cli …) now goes to node as its argument: run other scripts in an image of their own, or with --entrypoint on an image that has npm",
		execForm(a), ep.Line, r.in.Plan.Start.From))
}

// startUnchanged reports a start the rewrite writes as it was: the one
// line CMD args, where the stage already runs that exec-form CMD and no
// ENTRYPOINT of its own (an image already on distroless). It is no
// change, and the change list does not name one.
func (r *rewriter) startUnchanged(out, args []string) bool {
	if len(out) != 1 || out[0] != "CMD "+execForm(args)+"\n" {
		return false
	}
	// On a node base the same CMD ran through docker-entrypoint.sh; say
	// that it now runs through node.
	if dockerfile.ClassifyBase(r.d.RootBase(r.t)) != dockerfile.BaseDistroless {
		return false
	}
	if _, set := r.d.Effective(r.t, "entrypoint"); set {
		return false
	}
	cmd, set := r.d.Effective(r.t, "cmd")
	if !set || cmd.Form != dockerfile.FormExec || !slices.Equal(cmd.Args, args) || cmd.Line < 1 || cmd.Line > len(r.src) || cmd.EndLine > cmd.Line {
		return false
	}
	// Written the same way too (CMD ["index.js"], not cmd [ "index.js" ]).
	return strings.TrimRight(string(r.src[cmd.Line-1]), "\r\n") == strings.TrimSuffix(out[0], "\n")
}
