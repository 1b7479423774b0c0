package recipe

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/httpcheck"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// Health checks (rules healthcheck_exec_form and healthcheck_node_script):
// the image's HEALTHCHECK and a compose file's healthcheck.

// healthRE splits a HEALTHCHECK line into its options and its command.
var healthRE = regexp.MustCompile(`(?is)^\s*HEALTHCHECK\s+((?:--[a-z-]+=\S+\s+)*)CMD\b`)

// healthLines is the rewritten HEALTHCHECK (with the COPY of a generated
// check before it), nil when the check stays.
func (r *rewriter) healthLines() ([]string, error) {
	// The image's HEALTHCHECK and a compose file's healthcheck are each
	// rewritten where they are: compose's overrides the image's only when
	// the service runs through compose.
	var act *readiness.Action
	var composed []*readiness.Action
	for _, rule := range []string{readiness.RuleHealthExecForm, readiness.RuleHealthNode} {
		for i := range r.byRule[rule] {
			a := &r.byRule[rule][i]
			if a.Edit.InCompose {
				composed = append(composed, a)
			} else {
				act = a
			}
		}
	}
	for _, a := range composed {
		if err := r.composeHealth(a, act != nil && act.Blocker.Rule == readiness.RuleHealthNode); err != nil {
			return nil, err
		}
	}
	if act == nil {
		return nil, nil
	}
	hc, ok := r.d.Effective(r.t, "healthcheck")
	if !ok {
		return nil, r.refuse(act.Blocker.Rule, "the HEALTHCHECK is not in the runtime stage", "codegenie rewrites the runtime stage's own HEALTHCHECK", 0)
	}
	// The parser's one-line text of the instruction: continuation lines
	// (with either escape character) joined and the comments between them
	// dropped.
	text := hc.Source
	if text == "" {
		text = r.verbatim(hc)
	}
	m := healthRE.FindStringSubmatch(text)
	if m == nil {
		return nil, r.refuse(act.Blocker.Rule, "the HEALTHCHECK's options could not be read", "write it as HEALTHCHECK [options] CMD [...] by hand", hc.Line)
	}
	opts := strings.Join(strings.Fields(m[1]), " ")
	if opts != "" {
		opts += " "
	}
	// The author's line breaks and indentation before CMD are kept.
	head := "HEALTHCHECK " + opts
	if p := r.healthPrefix(hc, opts); p != "" {
		head = p
	}
	node := r.target.Node
	var out []string
	switch act.Blocker.Rule {
	case readiness.RuleHealthExecForm:
		program := healthProgram(act, node)
		out = append(out, head+"CMD "+execForm(append([]string{program}, act.Edit.Health...))+"\n")
		r.change(readiness.RuleHealthExecForm, "the HEALTHCHECK runs "+program+" in exec form, options kept")
	case readiness.RuleHealthNode:
		c, err := r.httpCheck(act, HealthName)
		if err != nil {
			return nil, err
		}
		dest := path.Join(r.wd, HealthName)
		out = append(out, fmt.Sprintf("COPY %s %s\n", HealthName, dest))
		out = append(out, head+"CMD "+execForm([]string{node, dest})+"\n")
		r.change(readiness.RuleHealthNode, fmt.Sprintf("the %s HEALTHCHECK becomes %s, a generated Node script that requests %s as %s did and %s; interval, timeout and retries kept",
			healthTool(c.Tool), HealthName, strings.Join(c.URLs, " and "), healthTool(c.Tool), c.Rule()))
	}
	return out, nil
}

// healthProgram is the program an exec-form check runs: node, or the
// one its shell-form line ran.
func healthProgram(act *readiness.Action, node string) string {
	if act.Edit.HealthProgram != "" {
		return act.Edit.HealthProgram
	}
	return node
}

// healthCmdRE finds the CMD keyword of a HEALTHCHECK's text.
var healthCmdRE = regexp.MustCompile(`(?i)\sCMD[\s\[]`)

// healthPrefix is hc's text up to its CMD as the author wrote it, with
// its continuation lines and indentation, when that text holds nothing but
// HEALTHCHECK and opts (no comment between the lines); "" otherwise.
func (r *rewriter) healthPrefix(hc dockerfile.Instruction, opts string) string {
	v := r.verbatim(hc)
	loc := healthCmdRE.FindStringIndex(v)
	if loc == nil {
		return ""
	}
	prefix := v[:loc[0]+1]
	joined := strings.NewReplacer("\\\r\n", " ", "\\\n", " ", "`\r\n", " ", "`\n", " ").Replace(prefix)
	if !strings.EqualFold(strings.Join(strings.Fields(joined), " "), strings.TrimSpace("HEALTHCHECK "+opts)) {
		return ""
	}
	return prefix
}

// httpCheck generates the Node check of a curl or wget health check and
// records the URL paths it requests for the gates.
func (r *rewriter) httpCheck(act *readiness.Action, name string) (*httpcheck.Check, error) {
	c := act.Edit.HealthCheck
	if c == nil || len(c.URLs) == 0 {
		return nil, r.refuse(act.Blocker.Rule, "the health check's requests are not known", "the plan names no curl or wget command to carry into a Node check; rewrite the check by hand", 0)
	}
	r.generate(act.Blocker.Rule, name, healthScript(c))
	for _, raw := range c.URLs {
		if u, err := url.Parse(raw); err == nil && u.Path != "" && u.Path != "/" && !slices.Contains(r.res.ProbePaths, u.EscapedPath()) {
			r.res.ProbePaths = append(r.res.ProbePaths, u.EscapedPath())
		}
	}
	return c, nil
}

// composeHealth rewrites a compose file's healthcheck test to run node by
// its path in exec form: the check's own node command, or a generated Node
// script that requests the URL a curl or wget check requested (its COPY
// goes before the start command). With imageScript, the image's own
// HEALTHCHECK has a generated script too, and compose's is another file.
func (r *rewriter) composeHealth(act *readiness.Action, imageScript bool) error {
	if len(act.Blocker.Evidence) == 0 || r.in.Read == nil {
		return r.refuse(act.Blocker.Rule, "the compose healthcheck cannot be located", "rewrite it by hand", 0)
	}
	ev := act.Blocker.Evidence[0]
	argv := append([]string{"CMD", healthProgram(act, r.target.Node)}, act.Edit.Health...)
	if act.Blocker.Rule == readiness.RuleHealthNode {
		name := pick(imageScript, ComposeHealthName, HealthName)
		if _, err := r.httpCheck(act, name); err != nil {
			return err
		}
		dest := path.Join(r.wd, name)
		r.preStart = append(r.preStart, fmt.Sprintf("COPY %s %s\n", name, dest))
		argv = []string{"CMD", r.target.Node, dest}
	}
	old, err := r.in.Read(ev.File)
	if err != nil {
		return err
	}
	edits, ok := composeTestEdit(old, ev.Line, argv)
	if !ok {
		return r.refuse(act.Blocker.Rule, "the compose healthcheck's test is not where its line says", "rewrite it by hand as test: "+execForm(argv), 0)
	}
	out, err := apply(old, edits)
	if err != nil {
		return err
	}
	r.others = append(r.others, File{Path: ev.File, Old: old, New: out, Mode: 0o644})
	r.change(act.Blocker.Rule, fmt.Sprintf("the compose healthcheck (%s:%d) becomes test: %s", ev.File, ev.Line, execForm(argv)))
	return nil
}

// composeTestRE is a compose healthcheck's test key and what follows it on
// its line.
var composeTestRE = regexp.MustCompile(`^(\s*)test:(.*)$`)

// composeTestEdit replaces the test at line (one line, or a block list
// below it) with a flow sequence of argv.
func composeTestEdit(data []byte, line int, argv []string) ([]edit, bool) {
	ls := lines(data)
	if line < 1 || line > len(ls) {
		return nil, false
	}
	// The line compose's parser gives may be the healthcheck key, the test
	// key or an item of its list: take the nearest test key.
	var m []string
	for d := 0; d <= 6 && m == nil; d++ {
		for _, l := range []int{line - d, line + d} {
			if l >= 1 && l <= len(ls) && m == nil {
				if m = composeTestRE.FindStringSubmatch(strings.TrimRight(string(ls[l-1]), "\r\n")); m != nil {
					line = l
				}
			}
		}
	}
	if m == nil {
		return nil, false
	}
	end := line
	if strings.TrimSpace(m[2]) == "" {
		// A block list: the items below, indented deeper.
		for end < len(ls) {
			next := string(ls[end])
			trimmed := strings.TrimLeft(next, " ")
			if !strings.HasPrefix(trimmed, "- ") || len(next)-len(trimmed) <= len(m[1]) {
				break
			}
			end++
		}
	}
	return []edit{{from: line, to: end, text: m[1] + "test: " + execForm(argv) + "\n"}}, true
}
