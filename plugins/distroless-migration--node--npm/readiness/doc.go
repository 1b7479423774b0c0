// Package readiness is the distroless_readiness assessor: it combines the
// plugin's probe results into one verdict: ready, ready_after_rewrite
// (every shell use is mechanically removable), blocked, or unknown. Each
// blocker names its kind, its evidence and, when known, its fix.
//
// The verdict is never ready while a probe it rests on has low confidence,
// and it is never ready while a heavy probe that should have run (the
// shell-invocation trace) could not. It is a pure function of the results.
//
// # Where things are
//
// The rule table (rules.go) is the one contract with the migrate recipe:
// every blocker names a rule there, and the rule decides whether the
// blocker is removable. Plan and Edit (plan.go) carry what a removable
// rule's rewrite needs. Each blocker is made in the file of the evidence
// it rests on, so adding a blocker kind means a row in rules.go and a
// case in one of these:
//
//   - image.go: the judged Dockerfile and stage, final-stage RUN and
//     SHELL steps (runstep.go says which RUN steps can move), the app's
//     directory, compose overrides;
//   - healthcheck.go: HEALTHCHECK and compose healthchecks;
//   - start.go: the start command (package-manager chains, shell form,
//     node's script) and its distroless form;
//   - executables.go: entrypoint scripts, shims and env-node files;
//   - runtime.go: binaries, OS packages, Node majors; which OS packages
//     run time uses (wrappers.go reads wrappers.json, the one table of
//     dependencies known to run a program, each with its source);
//   - native.go: the stages whose native code ships, and musl ones;
//   - childprocess.go: child_process calls in shipped code;
//   - trace.go: the traced build and boot;
//   - notnode.go: images that run no Node.
//
// readiness.go combines them into the verdict; builder.go holds the
// blocker collector and shared helpers.
package readiness
