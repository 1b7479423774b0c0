package recipe

import "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"

// carriedOut names, for each removable rule of the readiness rule table
// (readiness/rules.go, the one contract between the verdict and the
// recipe), the file of this package that carries out its rewrite. A new
// removable rule gets its rewrite in the file of its group, or a file of
// its own, and a line here; TestEveryRemovableRuleIsCarriedOut fails until
// it has one.
var carriedOut = map[string]string{
	readiness.RuleScriptArgv:      "start.go",
	readiness.RuleNodeLauncher:    "start.go",
	readiness.RuleExecForm:        "start.go",
	readiness.RuleDropNodeArgv:    "start.go",
	readiness.RuleJSEntry:         "start.go",
	readiness.RuleEntrypointToEnv: "start.go",
	readiness.RuleInitWrapper:     "start.go",
	readiness.RuleDistrolessBase:  "layout.go",
	readiness.RuleMoveToBuilder:   "split.go",
	readiness.RuleHealthExecForm:  "health.go",
	readiness.RuleHealthNode:      "health.go",
	readiness.RuleGlibcBuilder:    "builders.go",
	readiness.RuleSameMajor:       "builders.go",
	readiness.RuleBumpNode:        "builders.go",
	readiness.RuleNonRootUser:     "nonroot.go",
}
