#!/usr/bin/env bash
# demo.sh is the README's first command: it prepares the machine (only what
# gather and migrate need), builds codegenie, and asks it whether the
# bundled example can go distroless, with the traced build and boot.
# Machines of this kind reach no Docker Hub, so it serves local stand-ins
# of node:22 and the distroless node image on a loopback registry and
# points codegenie at it as a registry mirror, the way a corporate mirror
# works. Then it migrates the example: the rewrite to distroless and the
# gates that prove it, in the same sandbox (the checkout is not changed:
# no --write).
#
# It exits 0 when the demo ran as designed: gather gave its answer (the
# example is not ready as it is, on purpose: gather's exit 1) and migrate
# proved the rewrite. Otherwise it exits with the failing command's code.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
PREFIX=demo
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

start=$SECONDS
# codegenie builds while setup builds runsc: both spend part of their time
# fetching modules, and the two compilers share the cores.
long "building codegenie into bin/codegenie, beside the set-up (2 to 3 minutes cold: it compiles its JavaScript parser)" \
  go build -o bin/codegenie ./cmd/codegenie &
build=$!
bash scripts/setup.sh
wait "$build"

reg=$(mktemp)
bin/codegenie dev images serve --addr 127.0.0.1:0 >"$reg" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$reg"' EXIT
log "building the local node:22 and distroless stand-in images (about 10 s)"
for _ in $(seq 1 600); do
  grep -q '^registry-mirror:' "$reg" && break
  kill -0 "$server" 2>/dev/null || { cat "$reg" >&2; exit 1; }
  sleep 0.5
done
mirror=$(sed -n 's/^registry-mirror: //p' "$reg")
[ -n "$mirror" ] || { log "the local registry did not start within 5 minutes"; cat "$reg" >&2; exit 1; }

log "gathering examples/hello-service: the first run builds and boots it in gVisor (about half a minute)"
code=0
bin/codegenie gather --format text --registry-mirror "$mirror" "$@" examples/hello-service || code=$?
case "$code" in
  0) meaning="ready for distroless, confirmed by the traced build and boot" ;;
  3) meaning="ready on static evidence only (unconfirmed)" ;;
  1) meaning="not ready as it is: the blockers above, each with its evidence and fix. That is the example's expected answer: it is built to need a rewrite" ;;
  *) log "gather failed with exit $code"; exit "$code" ;;
esac
log "gather's answer for examples/hello-service: exit $code, $meaning"

log "migrating examples/hello-service to distroless, proven by seven gates in gVisor (about a minute; nothing is written)"
mcode=0
bin/codegenie migrate --registry-mirror "$mirror" examples/hello-service || mcode=$?
if [ "$mcode" -ne 0 ]; then
  log "migrate exited $mcode: the rewrite is not proven"
  exit "$mcode"
fi
log "done in $((SECONDS - start)) s: the example needs a rewrite, and migrate proved one (run it with --write to apply it)"
