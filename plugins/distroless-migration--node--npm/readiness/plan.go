package readiness

import (
	"fmt"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/httpcheck"
)

// Plan is the verdict with what the migrate recipe needs to carry it out:
// each blocker with the data of its rule's rewrite, and the start command
// the service has on a distroless runtime. The recipe implements exactly
// the removable rules, from this plan, so that ready_after_rewrite means
// "the recipe removes every blocker".
type Plan struct {
	Assessment probe.Assessment
	Actions    []Action
	// Start is the start command on a distroless runtime; nil when the
	// service's start command is not known.
	Start *Start
	// NonRoot is what a move to a target that runs as another user
	// touches (rule nonroot_user); nil without a parsed Dockerfile.
	NonRoot *NonRoot
}

// Action is one blocker and what its rewrite needs.
type Action struct {
	Blocker probe.Blocker
	Edit    Edit
}

// Edit is the data of one removable blocker's rewrite (its rule says which
// rewrite). The fields a rule does not use are zero.
type Edit struct {
	// Health is node's arguments for an exec-form HEALTHCHECK run with
	// /nodejs/bin/node (healthcheck_exec_form), or HealthProgram's when
	// it is set: the program a shell-form check of one simple command
	// runs (extra/healthcheck), kept in exec form.
	Health        []string
	HealthProgram string
	// HealthURL is the first URL that a generated Node health check
	// requests, and HealthCheck all it checks: the curl or wget command's
	// requests and its rule for which answers pass
	// (healthcheck_node_script).
	HealthURL   string
	HealthCheck *httpcheck.Check
	// InCompose is set when the health check is a compose file's (the
	// blocker's evidence), which overrides the image's: the rewrite edits
	// its test there.
	InCompose bool
	// Stages are the judged Dockerfile's stages, each the first of its FROM
	// chain, whose native code ships in the image and that move to a glibc
	// builder image (glibc_builder): every such stage, not only the one
	// Dockerfile.Builder names (NativeStages).
	Stages []int
}

// Start is a start command that needs no shell on a runtime whose
// entrypoint is node.
type Start struct {
	// Args are node's arguments (the distroless CMD), when the service
	// starts one node command.
	Args []string `json:"args,omitempty"`
	// Bin, when set, is a node_modules/.bin command whose JavaScript file
	// is known only once dependencies are installed; Args are then its
	// arguments, and the recipe resolves the file at run time with a
	// generated launcher.
	Bin string `json:"bin,omitempty"`
	// Steps are node commands run one after the other (pre and post hooks,
	// && chains), each an argv that starts with node; a generated launcher
	// runs them.
	Steps [][]string `json:"steps,omitempty"`
	// StepEnv, when set, holds each step's own variables (the cross-env
	// or VAR=x of its command), which the launcher gives that step's
	// process only; index i is Steps[i]'s.
	StepEnv [][]string `json:"step_env,omitempty"`
	// StepBin, when set, names for each step the node_modules/.bin
	// command it runs ("" for a node step): the launcher finds that
	// command's JS file at run time and runs it with the step's other
	// words as its arguments.
	StepBin []string `json:"step_bin,omitempty"`
	// Env are KEY=VALUE pairs that move to ENV.
	Env []string `json:"env,omitempty"`
	// Dir is the folder, relative to the image's WORKDIR, that the
	// command runs in (a workspace package's script, npm --prefix, cd
	// DIR &&); the rewrite sets WORKDIR to it before CMD. "" is the
	// WORKDIR itself.
	Dir string `json:"dir,omitempty"`
	// Program is set when the service starts a program that is not node
	// (its argv), which the rewrite writes as an exec-form ENTRYPOINT.
	Program []string `json:"program,omitempty"`
	// AppendArgs is set when the arguments the container is given follow
	// Args, as an entrypoint script's exec node app.js "$@" did: the
	// rewrite puts node and Args in ENTRYPOINT and CmdArgs, the arguments
	// the script was given by default, in CMD, so that docker run's
	// arguments replace CmdArgs and reach the app.
	AppendArgs bool     `json:"append_args,omitempty"`
	CmdArgs    []string `json:"cmd_args,omitempty"`
	// Init is the init wrapper (tini, dumb-init) that ran the command; the
	// rewrite drops it and the generated launcher takes its job (signals
	// reach the command, which is not pid 1).
	Init string `json:"init,omitempty"`
	// From says where the command comes from, for the change's reason.
	From string `json:"from,omitempty"`
}

// Plan assesses results (as Assess does) and returns the plan the migrate
// recipe carries out.
func (a *Assessor) Plan(results []probe.Result) (*Plan, error) {
	as, b, err := a.assess(results)
	if err != nil {
		return nil, err
	}
	p := &Plan{Assessment: as, Start: b.rewriteStart}
	if p.Start != nil && b.init != nil && dockerfile.IsInit(b.init[0]) {
		st := *p.Start
		st.Init = baseName(b.init[0])
		p.Start = &st
	}
	if p.NonRoot, err = planNonRoot(results, b.judged, p.Start); err != nil {
		return nil, err
	}
	for _, bl := range as.Blockers {
		p.Actions = append(p.Actions, Action{Blocker: bl, Edit: b.edits[blockerKey(bl)]})
	}
	return p, nil
}

// blockerKey identifies a blocker: its ID and its first evidence.
func blockerKey(bl probe.Blocker) string {
	key := bl.ID
	if len(bl.Evidence) > 0 {
		key += fmt.Sprintf("@%s:%d", bl.Evidence[0].File, bl.Evidence[0].Line)
	}
	return key
}

// addEdit records a blocker with its rewrite's data.
func (b *builder) addEdit(bl probe.Blocker, e Edit) {
	if b.edits == nil {
		b.edits = map[string]Edit{}
	}
	key := blockerKey(bl)
	if _, seen := b.edits[key]; !seen && !b.seen[key] {
		b.edits[key] = e
	}
	b.Add(bl)
}

// setStart records the start command a rewrite gives the service; the
// first one set wins, except that an entrypoint script's (which replaces
// the whole start) overrides the others.
func (b *builder) setStart(s Start, override bool) {
	if b.rewriteStart == nil || override {
		b.rewriteStart = &s
	}
}

// nodeStart is the start of a node command line on distroless: node's
// arguments, a .bin command the launcher resolves, or another program.
func (b *builder) nodeStart(argv, env []string, from string) Start {
	argv = b.viaJSEntry(argv)
	switch {
	case len(argv) == 0:
		return Start{Env: env, From: from}
	case isNodeWord(argv[0]):
		return Start{Args: DistrolessCmd(argv), Env: env, From: from}
	case b.binCommands[argv[0]]:
		return Start{Bin: baseName(argv[0]), Args: argv[1:], Env: env, From: from}
	default:
		return Start{Program: argv, Env: env, From: from}
	}
}
