package nodeproject

import (
	"encoding/json"
	"path"

	"go.yaml.in/yaml/v3"
)

// WorkspacePatterns reads the workspace package patterns of folder dir:
// pnpm-workspace.yaml's packages, else package.json's "workspaces" (a
// list, or {"packages": [...]}). read reads a file by its path; ok is
// false when dir declares no workspaces.
func WorkspacePatterns(read func(string) ([]byte, error), dir string) (pats []string, ok bool) {
	if data, err := read(path.Join(dir, "pnpm-workspace.yaml")); err == nil {
		var y struct {
			Packages []string `yaml:"packages"`
		}
		if yaml.Unmarshal(data, &y) == nil {
			return y.Packages, true
		}
	}
	data, err := read(path.Join(dir, "package.json"))
	if err != nil {
		return nil, false
	}
	var pj struct {
		Workspaces json.RawMessage `json:"workspaces"`
	}
	if json.Unmarshal(data, &pj) != nil || len(pj.Workspaces) == 0 {
		return nil, false
	}
	var list []string
	if json.Unmarshal(pj.Workspaces, &list) == nil {
		return list, true
	}
	var obj struct {
		Packages []string `json:"packages"`
	}
	if json.Unmarshal(pj.Workspaces, &obj) == nil {
		return obj.Packages, true
	}
	return nil, false
}
