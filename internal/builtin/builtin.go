// Package builtin is the one place that lists codegenie's plugins. Adding a
// plugin is one line in Register; nothing else in the tree enumerates them.
package builtin

import (
	"github.com/codegenie/codegenie/internal/probe"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
)

// Register adds every built-in plugin's probes and warnings to reg.
func Register(reg *probe.Registry) {
	nodenpm.Register(reg)
}

// NewRegistry returns a registry with every built-in plugin registered.
func NewRegistry() *probe.Registry {
	reg := probe.NewRegistry()
	Register(reg)
	return reg
}
