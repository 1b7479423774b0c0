package nodenpm_test

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// The ADR-0002 fence: a probe's or gate's only privileged exit is
// sandbox.Client.Spawn. Nothing the plugin's probe and gate packages reach
// may start a process, load code, or make raw system calls that can.

// bannedImports may not appear anywhere in the closure.
var bannedImports = map[string]string{
	"os/exec": "starts processes",
	"plugin":  "loads code",
}

// bannedFuncs are functions and methods that start a process or make raw
// system calls (which can execve), by package path and name; "*" bans the
// whole package.
var bannedFuncs = map[string]map[string]bool{
	"os/exec": {"*": true},
	"plugin":  {"*": true},
	"os":      {"StartProcess": true},
	"syscall": {"Exec": true, "ForkExec": true, "StartProcess": true, "Syscall": true, "Syscall6": true,
		"RawSyscall": true, "RawSyscall6": true, "RawSyscallNoError": true, "AllThreadsSyscall": true, "AllThreadsSyscall6": true},
	"golang.org/x/sys/unix": {"Exec": true, "Syscall": true, "Syscall6": true, "RawSyscall": true, "RawSyscall6": true,
		"RawSyscallNoError": true, "SyscallNoError": true, "ForkExec": true},
}

// thirdPartyAllow lists non-module packages in the closure whose use of
// cgo is known not to start processes.
var thirdPartyAllow = map[string]string{
	"github.com/smacker/go-tree-sitter":                       "tree-sitter's C runtime: parsing only",
	"github.com/smacker/go-tree-sitter/javascript":            "generated grammar tables",
	"github.com/smacker/go-tree-sitter/typescript/typescript": "generated grammar tables",
	"github.com/smacker/go-tree-sitter/typescript/tsx":        "generated grammar tables",
}

const module = "github.com/codegenie/codegenie/"

type violation struct{ pos, what string }

// checkTyped reports banned uses in a type-checked package.
func checkTyped(fset *token.FileSet, files []*ast.File, info *types.Info) []violation {
	var vs []violation
	for _, f := range files {
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if why, ok := bannedImports[p]; ok {
				vs = append(vs, violation{fset.Position(imp.Pos()).String(), "imports " + p + " (" + why + ")"})
			}
			if p == "C" {
				vs = append(vs, violation{fset.Position(imp.Pos()).String(), "uses cgo, which can run anything"})
			}
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				if strings.HasPrefix(c.Text, "//go:linkname") {
					vs = append(vs, violation{fset.Position(c.Pos()).String(), "uses go:linkname"})
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := info.Uses[id]
			if obj == nil || obj.Pkg() == nil {
				return true
			}
			if fn, ok := obj.(*types.Func); ok {
				if banned := bannedFuncs[fn.Pkg().Path()]; banned["*"] || banned[fn.Name()] {
					vs = append(vs, violation{fset.Position(id.Pos()).String(), "reaches " + fn.FullName()})
				}
			}
			return true
		})
	}
	return vs
}

// checkSyntax reports banned calls in a package known only by syntax,
// resolving package names through its imports.
func checkSyntax(fset *token.FileSet, files []*ast.File) []violation {
	var vs []violation
	for _, f := range files {
		names := map[string]string{}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := filepath.Base(p)
			if p == "golang.org/x/sys/unix" {
				name = "unix"
			}
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if banned := bannedFuncs[names[x.Name]]; banned["*"] || banned[sel.Sel.Name] {
				vs = append(vs, violation{fset.Position(sel.Pos()).String(), "calls " + names[x.Name] + "." + sel.Sel.Name})
			}
			return true
		})
	}
	return vs
}

func TestFenceNoProcessExecution(t *testing.T) {
	t.Parallel()
	cfg := &packages.Config{
		Mode:  packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Tests: false,
	}
	// The whole plugin: its probes and gates, and everything they share.
	roots, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatalf("loading the plugin's packages: %v", err)
	}
	if packages.PrintErrors(roots) > 0 {
		t.Fatal("the plugin's packages do not load")
	}
	probes := 0
	for _, r := range roots {
		if strings.Contains(r.PkgPath, "/probes/") || strings.Contains(r.PkgPath, "/gates/") {
			probes++
		}
	}
	if probes < 5 {
		t.Fatalf("loaded %d probe and gate packages; the pattern is wrong", probes)
	}
	var vs []violation
	seen := map[string]bool{}
	var visit func(p *packages.Package, via string)
	visit = func(p *packages.Package, via string) {
		if seen[p.PkgPath] {
			return
		}
		seen[p.PkgPath] = true
		if why, ok := bannedImports[p.PkgPath]; ok {
			vs = append(vs, violation{via, "reaches " + p.PkgPath + " (" + why + ")"})
		}
		switch {
		case strings.HasPrefix(p.PkgPath, module):
			vs = append(vs, checkTyped(p.Fset, p.Syntax, p.TypesInfo)...)
		case strings.Contains(strings.Split(p.PkgPath, "/")[0], "."): // third party
			if _, ok := thirdPartyAllow[p.PkgPath]; !ok {
				vs = append(vs, checkSyntax(p.Fset, p.Syntax)...)
				for _, imp := range p.Imports {
					if imp.PkgPath == "C" || imp.PkgPath == "runtime/cgo" {
						vs = append(vs, violation{p.PkgPath, "third-party cgo package not on the allowlist"})
					}
				}
			}
		}
		for _, imp := range p.Imports {
			visit(imp, p.PkgPath)
		}
	}
	for _, r := range roots {
		visit(r, r.PkgPath)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].pos < vs[j].pos })
	for _, v := range vs {
		t.Errorf("ADR-0002 fence: %s %s", v.pos, v.what)
	}
	t.Logf("checked %d packages reached from the plugin's %d packages (%d probes and gates)", len(seen), len(roots), probes)
}

// TestFenceCatchesPlantedViolation proves the checks can fail: a planted
// package that starts processes four ways is caught four times.
func TestFenceCatchesPlantedViolation(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("testdata", "fence", "planted", "planted.go"), nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.Default()}
	if _, err := conf.Check("planted", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	typed := checkTyped(fset, []*ast.File{f}, info)
	var whats []string
	for _, v := range typed {
		whats = append(whats, v.what)
	}
	for _, want := range []string{"imports os/exec", "reaches os/exec.Command", "reaches os.StartProcess", "reaches syscall.RawSyscall", "reaches syscall.Exec"} {
		found := false
		for _, w := range whats {
			found = found || strings.HasPrefix(w, want)
		}
		if !found {
			t.Errorf("the typed check missed %q; it found %q", want, whats)
		}
	}
	syn := checkSyntax(fset, []*ast.File{f})
	if len(syn) < 4 {
		t.Errorf("the syntax check found %d violations in the planted package, want at least 4: %v", len(syn), syn)
	}
}
