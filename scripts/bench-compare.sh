#!/usr/bin/env bash
# bench-compare.sh times a codegenie command as built from this checkout
# against the same command as built from an earlier revision, side by
# side: the two binaries alternate, N runs each, on one local stand-in
# registry, and it prints each run, the medians and their ratio. Use it for
# claims of the form "migrate takes X of what it took before".
#
#   bash scripts/bench-compare.sh BASE_REV N -- migrate examples/hello-service
#   bash scripts/bench-compare.sh 026093b 5 -- gather --no-cache --format json examples/hello-service
#
# Each run starts from a fresh cache and an empty base-image store, so
# that the pulls are timed too; with BENCH_BASES=pulled, each binary first
# fills a store of its own, untimed, and every timed run reads it (a
# machine that has run codegenie before):
#
#   BENCH_BASES=pulled bash scripts/bench-compare.sh 026093b 3 -- migrate examples/hello-service
#
# The command gets --registry-mirror for the stand-ins; its output is
# discarded and its exit code ignored (gather's 1 is an answer), except
# that a run that fails outright (exit 2 or more than 3) stops the
# benchmark. Run as root, after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
PREFIX=bench-compare
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

if [ $# -lt 4 ] || [ "$3" != "--" ]; then
  echo "usage: bash scripts/bench-compare.sh BASE_REV N -- COMMAND [ARG...]" >&2
  exit 2
fi
base=$1 n=$2
shift 3
case "$n" in '' | *[!0-9]*) log "N must be a whole number, not $n"; exit 2 ;; esac

work=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  git worktree remove --force "$work/base" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

git worktree add --detach "$work/base" "$base" >/dev/null 2>&1 || { log "no revision $base"; exit 2; }
long "building codegenie at HEAD" go build -o "$work/new" ./cmd/codegenie
long "building codegenie at $base" sh -c 'cd "$1" && go build -o "$2" ./cmd/codegenie' sh "$work/base" "$work/old"

"$work/new" dev images serve --addr 127.0.0.1:0 >"$work/reg" 2>&1 &
server=$!
for _ in $(seq 1 600); do
  grep -q '^registry-mirror:' "$work/reg" && break
  kill -0 "$server" 2>/dev/null || { cat "$work/reg" >&2; exit 1; }
  sleep 0.5
done
mirror=$(sed -n 's/^registry-mirror: //p' "$work/reg")
[ -n "$mirror" ] || { log "the local registry did not start"; exit 1; }

case "${BENCH_BASES:-empty}" in
  empty | pulled) ;;
  *) log "BENCH_BASES must be empty or pulled, not $BENCH_BASES"; exit 2 ;;
esac

# run BIN: one timed run, in ms, with a fresh cache, and a fresh base
# store unless BENCH_BASES=pulled.
run() {
  local dir rc=0 t0 t1 bases
  dir=$(mktemp -d "$work/run.XXXXXX")
  bases=$dir/bases
  [ "${BENCH_BASES:-empty}" = pulled ] && bases=$work/bases-$(basename "$1")
  t0=$(date +%s%N)
  CODEGENIE_BASE_STORE="$bases" \
    "$1" --cache-dir "$dir/cache" "$CMD" --registry-mirror "$mirror" "${ARGS[@]}" >/dev/null 2>"$dir/err" || rc=$?
  t1=$(date +%s%N)
  if [ "$rc" -ge 2 ] && [ "$rc" -ne 3 ]; then
    log "$1 exited $rc:"; tail -5 "$dir/err" >&2; exit 1
  fi
  rm -rf "$dir"
  echo $(((t1 - t0) / 1000000))
}
CMD=$1
shift
ARGS=("$@")

if [ "${BENCH_BASES:-empty}" = pulled ]; then
  for which in old new; do
    log "filling $which's base store (untimed): $(run "$work/$which") ms"
  done
fi

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: >"$work/old.ms"
: >"$work/new.ms"
for i in $(seq 1 "$n"); do
  if [ $((i % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
  for which in $order; do
    ms=$(run "$work/$which")
    echo "$ms" >>"$work/$which.ms"
    log "run $i $which ($base or HEAD): $ms ms"
  done
done
old=$(median <"$work/old.ms")
new=$(median <"$work/new.ms")
echo "base $base: median $old ms over $n runs: $(paste -sd' ' "$work/old.ms")"
echo "HEAD: median $new ms over $n runs: $(paste -sd' ' "$work/new.ms")"
awk -v a="$new" -v b="$old" 'BEGIN { printf "HEAD/base: %.2f\n", a / b }'
