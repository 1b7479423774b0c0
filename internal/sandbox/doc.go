// Package sandbox is the port through which codegenie runs anything that
// came from a target repository: builds, npm scripts and container boots.
// It declares the Client interface, the Role of a caller, the SpawnRequest
// and Result types, and the errors backends return. It runs nothing itself;
// backends (runsc, and the unsupported firecracker and lima) and the
// gate-control client implement Client in other packages.
//
// # Roles
//
// ADR-0003 gives SandboxClient.spawn a role parameter with a Python default
// of Role.GATE. Go has no keyword defaults, so this port is stricter: Role's
// zero value is invalid, Validate rejects it, and every call site names its
// role (sandbox.RoleGate or sandbox.RoleProbe). A forgotten role is an error,
// never a silent GATE. Both roles get the same sandbox topology; the role is
// an audit tag and a future scheduling signal. Adding a role is one new
// constant plus its name in roleNames.
package sandbox
