package readiness

// The judged image's Dockerfile: which file and stage are judged, the
// final stage's RUN and SHELL instructions, the app's directory, what a
// compose service overrides, and the programs the final stage names.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/npmscripts"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// composeFor finds the compose service that runs the judged image: the
// same Dockerfile and target, in a compose file that is not a development
// one (images.ServiceFor).
func composeFor(f *dockerfileprobe.Facts, dockerfilePath string) (images.ComposeBuild, bool) {
	for _, file := range f.Files {
		if f.Image != nil && file.Path == dockerfilePath && file.Parsed != nil {
			return images.ServiceFor(f.Compose, file.Parsed, dockerfilePath, f.Image.Stage)
		}
	}
	return images.ComposeBuild{}, false
}

// stageOf names the stage of d that holds the first evidence in d.
func stageOf(d *dockerfile.File, evs []probe.Evidence) string {
	for _, e := range evs {
		if e.File != d.Path || e.Line < 1 {
			continue
		}
		// Stages are in line order: the last that starts at or before the
		// line, found without a scan per blocker.
		st := sort.Search(len(d.Stages), func(i int) bool { return d.Stages[i].Line > e.Line }) - 1
		if st >= 0 {
			return d.StageName(st)
		}
	}
	return ""
}

// judgedFile returns the judged image's Dockerfile as built for its target.
func judgedFile(f *dockerfileprobe.Facts) *dockerfile.File {
	if f.Image == nil {
		return nil
	}
	for _, file := range f.Files {
		if file.Path == f.Image.Dockerfile && file.Parsed != nil {
			return file.Parsed.AsTarget(f.Image.Stage)
		}
	}
	return nil
}

// appDir: a rewrite that moves a runtime stage built FROM another stage,
// or one whose RUN steps move to a files stage, copies the app's directory
// into a new stage. With no WORKDIR, that is the directory that holds
// every COPY destination; an app copied into / itself cannot be told from
// the base image's files, and the recipe cannot make the new stage.
func (b *builder) appDir(d *dockerfile.File) {
	st := d.Stages[d.Final]
	moves := slices.ContainsFunc(b.blockers, func(bl probe.Blocker) bool { return bl.Rule == RuleMoveToBuilder })
	if len(b.blockers) == 0 || st.BaseStage < 0 && !moves {
		return
	}
	if _, ok := d.AppDir(d.Final); ok {
		return
	}
	title := "the runtime stage's files cannot move to a distroless stage: no WORKDIR is set and the app is copied into /"
	why := "a distroless runtime stage copies the app's directory from the stage that builds it, and with the app in / its files cannot be told from the base image's; set a WORKDIR (or copy the app into a directory of its own)"
	if !copiesFiles(d, d.Final) {
		title = "the runtime stage's files cannot move to a distroless stage: it sets no WORKDIR and copies in no app"
		why = "a distroless runtime stage copies the app's directory from the stage that builds it, and this stage's RUN steps put what they install among the base image's own files " +
			"(a global npm install, OS packages); install the app into a WORKDIR of its own"
	}
	b.Add(probe.Blocker{ID: dockerfileprobe.WarnShellFormRunFinal, Kind: probe.ShellInFinalStageBuild, Rule: RuleRunSideEffects,
		Title: title, WhyNot: why, Evidence: ev(d.Path, st.Line)})
}

// copiesFiles reports whether stage i, or a stage it is built FROM, has a
// COPY or ADD.
func copiesFiles(d *dockerfile.File, i int) bool {
	for ; i >= 0; i = d.Stages[i].BaseStage {
		if slices.ContainsFunc(d.Stages[i].Instructions, func(in dockerfile.Instruction) bool { return in.Command == "copy" || in.Command == "add" }) {
			return true
		}
	}
	return false
}

// dockerfiles: what the judged image's final stage needs a shell for while
// it builds, and its health check.
func (b *builder) dockerfiles(f *dockerfileprobe.Facts) {
	d := judgedFile(f)
	if d == nil {
		return
	}
	b.judged = d
	b.startBinaries = startBinaries(d)
	startArgv := d.Start(d.Final).Argv
	if len(startArgv) > 0 && baseName(startArgv[0]) == dockerfile.NodeEntrypoint {
		startArgv = startArgv[1:] // docker-entrypoint.sh execs its arguments
	}
	b.init, b.startArgv = dockerfile.SplitInit(startArgv)
	b.envBinaries = envBinaries(d)
	if cmd, ok := d.Effective(d.Final, "cmd"); ok {
		b.cmdArgv = cmd.Args
		if cmd.Form == dockerfile.FormShell {
			b.cmdArgv = shellcmd.Analyze(strings.Join(cmd.Args, " ")).Argv
		}
	}
	// Each stage's working directory, once: not once per RUN, which made
	// the assessment quadratic in the Dockerfile's length.
	workdirs := d.Workdirs(d.Final)
	for i := d.Final; i >= 0; i = d.Stages[i].BaseStage {
		for _, in := range d.Stages[i].Instructions {
			switch {
			case in.Command == "run" && in.Form == dockerfile.FormShell:
				step := ClassifyRun(in, workdirs[i])
				bl := probe.Blocker{ID: dockerfileprobe.WarnShellFormRunFinal, Kind: probe.ShellInFinalStageBuild,
					Title:    fmt.Sprintf("RUN %s needs /bin/sh in the final stage", clip(strings.Join(in.Args, " "), 120)),
					Evidence: ev(d.Path, in.Line)}
				if step.Movable {
					bl.Rule, bl.Fix = RuleMoveToBuilder, "move this step into the builder stage and COPY its output into the final stage ("+step.Why+")"
				} else {
					bl.Rule, bl.WhyNot = RuleRunSideEffects, step.Why
					b.keepRun(in)
				}
				b.Add(bl)
			case in.Command == "run" && in.Form == dockerfile.FormExec && len(in.Args) > 0 && !isNodeWord(in.Args[0]):
				step := ClassifyRun(in, workdirs[i])
				bl := probe.Blocker{ID: dockerfileprobe.WarnShellFormRunFinal, Kind: probe.MissingBinary,
					Title:    fmt.Sprintf("RUN %s runs %s in the final stage, which distroless lacks", quoteArgv(in.Args), in.Args[0]),
					Evidence: ev(d.Path, in.Line)}
				if step.Movable {
					bl.Rule, bl.Fix = RuleMoveToBuilder, "move this step into the builder stage and COPY its output into the final stage"
				} else {
					bl.Rule, bl.WhyNot = RuleRunSideEffects, step.Why
				}
				b.Add(bl)
			case in.Command == "shell":
				b.Add(probe.Blocker{ID: dockerfileprobe.WarnShellInstruction, Kind: probe.ShellInFinalStageBuild, Rule: RuleExecForm,
					Title: fmt.Sprintf("SHELL %v in the final stage", in.Args), Fix: "remove SHELL once the final stage's instructions are in exec form", Evidence: ev(d.Path, in.Line)})
			}
		}
	}
	if cb, found := composeFor(f, d.Path); found {
		b.composeOverrides(cb)
	}
	// The image's HEALTHCHECK is judged on its own even when a compose
	// file sets the service's healthcheck: compose's overrides it only
	// where the service runs through compose, and the image ships its own
	// everywhere else.
	if hc, ok := d.Effective(d.Final, "healthcheck"); ok {
		b.healthcheck(d, hc, d.Path)
	}
	if cb, found := composeFor(f, d.Path); found && len(cb.Healthcheck) > 1 {
		b.composeHealthBinaries(cb.Healthcheck)
		switch cb.Healthcheck[0] {
		case "CMD-SHELL":
			b.healthcheck(d, dockerfile.Instruction{Command: "healthcheck", Form: dockerfile.FormShell, Args: cb.Healthcheck[1:2], Line: cb.HealthcheckLine}, cb.File)
		case "CMD":
			b.healthcheck(d, dockerfile.Instruction{Command: "healthcheck", Form: dockerfile.FormExec, Args: cb.Healthcheck[1:], Line: cb.HealthcheckLine}, cb.File)
		}
	}
}

// composeOverrides judges a compose file's command and entrypoint, which
// replace the image's own when the service runs through compose: a shell
// or a package manager there needs a shell whatever the Dockerfile says,
// and the Dockerfile rewrite does not reach it.
func (b *builder) composeOverrides(cb images.ComposeBuild) {
	for _, o := range []struct {
		what string
		argv []string
		line int
	}{{"ENTRYPOINT", cb.Entrypoint, cb.EntrypointLine}, {"CMD", cb.Command, cb.CommandLine}} {
		if len(o.argv) == 0 {
			continue
		}
		prog := baseName(o.argv[0])
		var why string
		switch {
		case shellcmd.IsShell(prog):
			why = "runs " + prog
		case prog == "npm" || prog == "yarn" || prog == "pnpm" || prog == "npx":
			why = "starts through " + prog + ", which runs scripts through sh -c"
		case prog == "nodemon":
			// lib/monitor/run.js of nodemon 2.0.22 and 3.1.10: spawn(sh,
			// ['-c', …]) unless it forks node, and kill through
			// exec(`kill -${sig} ${pid}`) on every system but Windows.
			why = "nodemon, which stops and restarts the app with exec(\"kill …\") through /bin/sh, and starts it through sh -c unless it can fork node"
		default:
			continue
		}
		service := "the compose service " + cb.Service
		if cb.Published != "" {
			// It runs the image by the name a build of this Dockerfile
			// publishes it under: moving the image moves it too.
			service = fmt.Sprintf("the compose service %s, which runs %s (built from %s at %s),", cb.Service, cb.Image, cb.Dockerfile, cb.Published)
		}
		b.Add(probe.Blocker{ID: npmscripts.WarnShellFormStart, Kind: probe.ShellAtRuntime, Rule: RuleShellLine,
			Title:    fmt.Sprintf("%s overrides the image's %s with %s (%s)", service, o.what, strings.Join(o.argv, " "), why),
			WhyNot:   "the compose file, not the Dockerfile, sets this command: change it there to exec-form node arguments",
			Evidence: []probe.Evidence{{File: cb.File, Line: o.line}}})
	}
}

// keepRun records the programs a RUN step that stays in the final stage
// configures for run time.
func (b *builder) keepRun(in dockerfile.Instruction) {
	if b.keptRunBinaries == nil {
		b.keptRunBinaries = map[string]int{}
	}
	cmds := shellcmd.Instruction(in)
	for _, c := range cmds {
		// "git config --global ..." sets a program up for run time; other
		// uses at build time say nothing about run time.
		if len(c) > 1 && c[1] == "config" {
			b.keptRunBinaries[baseName(c[0])] = in.Line
		}
	}
}

// envBinaries names the programs the final stage's ENV values point at by
// an absolute path, with the variable that does.
func envBinaries(d *dockerfile.File) map[string]string {
	out := map[string]string{}
	for i := d.Final; i >= 0; i = d.Stages[i].BaseStage {
		for _, in := range d.Stages[i].Instructions {
			if in.Command != "env" {
				continue
			}
			for _, kv := range in.Args {
				k, v, ok := strings.Cut(kv, "=")
				v = strings.Trim(v, `"'`)
				if ok && strings.HasPrefix(v, "/") && !strings.ContainsAny(v, " :") {
					out[baseName(v)] = k
				}
			}
		}
	}
	return out
}

// startBinaries names the programs the final stage's ENTRYPOINT, CMD and
// HEALTHCHECK run, each with the instruction that names it.
func startBinaries(d *dockerfile.File) map[string]string {
	out := map[string]string{}
	for _, c := range []string{"entrypoint", "cmd", "healthcheck"} {
		in, ok := d.Effective(d.Final, c)
		if !ok || len(in.Args) == 0 {
			continue
		}
		cmds := shellcmd.Instruction(in)
		for _, cmd := range cmds {
			if init, rest := dockerfile.SplitInit(cmd); init != nil && !dockerfile.IsUserWrapper(init[0]) {
				cmd = rest // the rewrite drops the init; the wrapped command is judged on its own
			}
			if len(cmd) > 0 {
				out[baseName(cmd[0])] = strings.ToUpper(c)
			}
		}
	}
	return out
}

// composeHealth names the compose service's healthcheck among
// startBinaries' instructions.
const composeHealth = "compose healthcheck"

// composeHealthBinaries adds the programs a compose healthcheck's test
// runs to startBinaries (where the image's own instructions do not name
// them already): the container runs them as it runs the image's.
func (b *builder) composeHealthBinaries(test []string) {
	var cmds [][]string
	switch test[0] {
	case "CMD-SHELL":
		cmds = shellcmd.Analyze(test[1]).Commands
	case "CMD":
		cmds = [][]string{test[1:]}
	}
	for _, cmd := range cmds {
		if len(cmd) > 0 && b.startBinaries[baseName(cmd[0])] == "" {
			b.startBinaries[baseName(cmd[0])] = composeHealth
		}
	}
}
