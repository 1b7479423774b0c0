#!/usr/bin/env bash
# demo.sh is the README's first command: it prepares the machine, builds
# codegenie, and asks it whether the bundled example can go distroless,
# with the traced build and boot. Machines of this kind reach no Docker Hub,
# so it serves local stand-ins of node:22 and the distroless node image on
# a loopback registry and points codegenie at it as a registry mirror, the
# way a corporate mirror works. Then it migrates the example: the rewrite
# to distroless and the gates that prove it, in the same sandbox (the
# checkout is not changed: no --write). It exits with gather's code, 1,
# since the example is not ready as it is (on purpose), unless migrate
# fails, whose code it then exits with.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

bash scripts/setup.sh
go build -o bin/codegenie ./cmd/codegenie

log=$(mktemp)
bin/codegenie dev images serve --addr 127.0.0.1:0 >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 120); do
  grep -q '^registry-mirror:' "$log" && break
  kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 1
done
mirror=$(sed -n 's/^registry-mirror: //p' "$log")
[ -n "$mirror" ] || { echo "demo: the local registry did not start" >&2; cat "$log" >&2; exit 1; }

echo "demo: gathering examples/hello-service (the first run builds and boots it in gVisor: about half a minute)" >&2
code=0
bin/codegenie gather --format text --registry-mirror "$mirror" "$@" examples/hello-service || code=$?

echo "demo: migrating examples/hello-service to distroless, proven by the gates (nothing is written)" >&2
mcode=0
bin/codegenie migrate --registry-mirror "$mirror" examples/hello-service || mcode=$?
if [ "$mcode" -ne 0 ]; then
  echo "demo: migrate exited $mcode" >&2
  exit "$mcode"
fi
exit "$code"
