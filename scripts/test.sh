#!/usr/bin/env bash
# test.sh is the one test command: the README's, and what .ci/run calls. It
# prepares the machine (scripts/setup.sh --tests: with the test-only tools),
# then runs go vet, golangci-lint and the whole test suite with the race
# detector. Any failure fails it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CODEGENIE_TOOLS:-/usr/local/lib/codegenie/bin}:/usr/local/go/bin:$PATH"

bash scripts/setup.sh --tests

echo "== go vet" >&2
go vet ./...
echo "== golangci-lint" >&2
golangci-lint run --allow-parallel-runners ./...
echo "== go test" >&2
# Everything runs under the race detector except the two packages that
# build the 100+ MB stand-in images: instrumented gzip makes them take
# minutes and gigabytes there, and their concurrency is covered elsewhere.
norace='/internal/devimages$|/plugins/distroless-migration--node--npm$'
# The two runs go at once: each spends much of its time waiting on
# sandboxes (gVisor, buildah), so one alone leaves a core idle. The
# non-race run's output follows the race run's, whole; both must pass.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -count=1 -timeout 25m $(go list ./... | grep -E "$norace") >"$out" 2>&1 &
norace_pid=$!
rc=0
go test -race -count=1 -timeout 25m $(go list ./... | grep -Ev "$norace") || rc=$?
norace_rc=0
wait "$norace_pid" || norace_rc=$?
cat "$out"
if [ "$rc" -ne 0 ] || [ "$norace_rc" -ne 0 ]; then
	echo "== go test failed (race run: exit $rc; non-race run: exit $norace_rc)" >&2
	exit 1
fi
