// Package deps installs a repository's production dependencies for a
// static scan without running anything: it reads the lockfile
// (package-lock.json or npm-shrinkwrap.json v1, v2 and v3, yarn.lock classic
// and berry, pnpm-lock.yaml), downloads exactly the tarballs it pins from
// the registry the repository's own .npmrc or .yarnrc.yml names, verifies
// each one's integrity hash before reading it, and unpacks it read-only
// into a content-addressed cache keyed by that hash. The result is a
// layout: which cached directory sits at which node_modules path, as an
// npm install would have placed it, for probe.Repo to mount.
//
// It never runs a script, never executes a file from a tarball, and never
// follows an archive entry out of its package: path traversal, absolute
// names, links that point out of the package, devices and FIFOs are
// refused, and compressed size, unpacked size and file count are capped.
// A tarball whose hash does not match is an *IntegrityError and is never
// unpacked.
//
// Offline (the registry unreachable), packages already in the cache are
// used and the rest are reported missing, each with why.
//
// It does not resolve version ranges: a dependency the lockfile does not
// pin is missing, as it would be from npm ci. Development dependencies are
// left out (they do not ship from an install that omits them), unless the
// caller asks for them (InstallDev): an image whose install omits nothing
// ships them. Registry credentials are not read:
// a registry that needs them answers 401 and the package is missing.
package deps
