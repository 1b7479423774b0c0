#!/usr/bin/env bash
# test.sh is the one test command: the README's, and what .ci/run calls. It
# prepares the machine (scripts/setup.sh), then runs go vet, golangci-lint
# and the whole test suite with the race detector. Any failure fails it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CODEGENIE_TOOLS:-/usr/local/lib/codegenie/bin}:/usr/local/go/bin:$PATH"

bash scripts/setup.sh

echo "== go vet" >&2
go vet ./...
echo "== golangci-lint" >&2
golangci-lint run ./...
echo "== go test" >&2
go test -race -count=1 -timeout 25m ./...
