// Package nodenpm is the distroless-migration plugin for Node.js services
// built with npm, yarn or pnpm. It contributes probes (under probes/) that
// gather evidence on whether a service can run on a distroless image.
//
// Probes here may do privileged work only through the sandbox.Client in
// their probe.Context; they never start processes themselves.
package nodenpm

import (
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/nodeproject"
)

// Task is the task this plugin serves.
const Task = "distroless-migration"

// Register adds the plugin's probes and warnings to reg.
func Register(reg *probe.Registry) {
	reg.Warnings().MustRegister(nodeproject.Warnings...)
	reg.MustRegister(nodeproject.New())
}
