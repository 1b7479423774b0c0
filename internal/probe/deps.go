package probe

import "sync"

// Dependencies says that a repository's node_modules is not its own but
// mounted from a lockfile install (gather --deps lockfile: see package
// deps), and what that install could not provide.
type Dependencies struct {
	// Lockfile is the lockfile the packages came from.
	Lockfile string
	// Installed counts the packages mounted.
	Installed int
	// Dev is set when the development packages were mounted too: the
	// judged image's install omits nothing, so it ships them
	// (DevDependencyJudge).
	Dev bool
	// Unavailable are pinned packages that were not mounted, sorted by
	// Path.
	Unavailable []UnavailableDependency
	// RegistryVerified names (name@version) the mounted packages whose
	// lockfile records no tarball hash (yarn berry's hashes yarn's own
	// archive): they were verified against the hash the registry
	// publishes, a weaker check.
	RegistryVerified []string
	// Mentions reports whether one of the lockfiles may pin a package
	// that installs as name, development ones included (deps.Lock.Mentions:
	// it errs toward yes). nil means unknown: every name may be pinned.
	Mentions func(name string) bool
	// Memo, when set, holds what probes derive from one mounted package's
	// content alone, keyed by Mount.Key and the probe's own key: shared by
	// every repository a process gathers (a portfolio), so each distinct
	// package version is scanned once. Values must not be modified.
	Memo *sync.Map
}

// UnavailableDependency is a pinned package that could not be provided.
type UnavailableDependency struct {
	Name    string
	Version string
	// Path is where an install would have put it (node_modules/a).
	Path string
	// Kind says why: unreachable, integrity_mismatch, unsafe_archive,
	// too_large, registry_error or no_integrity.
	Kind  string
	Error string
}
