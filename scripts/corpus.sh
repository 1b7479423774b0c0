#!/usr/bin/env bash
# corpus.sh DIR EXPECTATIONS: run `codegenie gather --no-sandbox --deps
# lockfile` (the dependencies the lockfile pins are fetched from the npm
# registry and scanned, never run) over real
# service checkouts in DIR and score each against EXPECTATIONS, a
# tab-separated file with a header line and the columns
#   service  dockerfile  target  verdict  blockers  source  why
# (service relative to DIR; dockerfile and target "-" for the defaults;
# blockers: comma-separated kinds of the hard blockers expected, or "-").
#
# It prints one row per service (with HARD, its blockers no rewrite removes)
# and the totals: verdict matches, false
# blockers (hard blocker kinds reported but not expected), missed blockers
# (expected but not reported), and "unsafe": a ready verdict for a service
# that is expected to be blocked. Exit status 1 when any row is unsafe.
#
# CORPUS_CACHE=DIR reuses DIR as the cache (the dependencies the lockfiles
# pin take about 21 GB for docs/corpus/baseline.tsv, and a warm result is
# byte-identical to a cold one); by default each run starts with an empty
# cache of its own, removed at the end.
#
# Example: bash scripts/corpus.sh ~/corpus ~/corpus/expectations.tsv
set -euo pipefail
if [ $# -ne 2 ] || [ ! -d "$1" ] || [ ! -f "$2" ]; then
  echo "usage: $0 DIR EXPECTATIONS   (DIR holds the checkouts; EXPECTATIONS is the .tsv described in this script)" >&2
  exit 2
fi
dir=$1 expect=$2
cd "$(dirname "$0")/.."
command -v jq >/dev/null || { echo "corpus.sh needs jq (apt-get install jq)" >&2; exit 2; }
go build -o bin/codegenie ./cmd/codegenie
cg=$PWD/bin/codegenie
if [ -n "${CORPUS_CACHE:-}" ]; then
  cache=$CORPUS_CACHE
  mkdir -p "$cache"
else
  cache=$(mktemp -d)
  trap 'rm -rf "$cache"' EXIT
fi

rows=0 match=0 false_b=0 missed_b=0 unsafe=0 errors=0
printf '%-52s %-20s %-20s %-5s %-5s %s\n' SERVICE EXPECTED GOT OK HARD NOTE
while IFS=$'\t' read -r service dockerfile target verdict blockers _source _why; do
  [ "$service" = service ] && continue
  [ -z "$service" ] && continue
  case "$service" in \#*) continue ;; esac
  rows=$((rows + 1))
  # A generous light-probe timeout: the scorecard measures verdicts, and a
  # loaded machine must not turn a big service's child_process scan into
  # a timeout (unknown).
  args=(gather --no-sandbox --deps lockfile --format json --cache-dir "$cache" --light-timeout 10m)
  [ "$dockerfile" != - ] && args+=(--dockerfile "$dockerfile")
  [ "$target" != - ] && args+=(--target "$target")
  label=$service
  [ "$target" != - ] && label="$service#$target"
  set +e
  out=$("$cg" "${args[@]}" "$dir/$service" 2>/tmp/corpus.err)
  rc=$?
  set -e
  if [ $rc -eq 2 ] || [ $rc -gt 3 ] || [ -z "$out" ]; then
    errors=$((errors + 1))
    printf '%-52s %-20s %-20s %-5s %-5s %s\n' "$label" "$verdict" error no - "exit $rc: $(head -c 120 /tmp/corpus.err | tr '\n' ' ')"
    continue
  fi
  got=$(jq -r '.assessments.distroless_readiness.verdict' <<<"$out")
  # HARD: the blockers no rewrite removes, whatever their kind.
  hard=$(jq -r '[.assessments.distroless_readiness.blockers[]? | select(.removable|not)] | length' <<<"$out")
  kinds=$(jq -r '[.assessments.distroless_readiness.blockers[]? | select(.removable|not) | select(.kind != "unknown") | .kind] | unique | join(",")' <<<"$out")
  want_kinds=$blockers
  [ "$want_kinds" = - ] && want_kinds=
  note=
  ok=no
  if [ "$got" = "$verdict" ]; then ok=yes; match=$((match + 1)); fi
  for k in ${kinds//,/ }; do
    case ",$want_kinds," in *",$k,"*) ;; *) false_b=$((false_b + 1)); note+="false:$k " ;; esac
  done
  for k in ${want_kinds//,/ }; do
    case ",$kinds," in *",$k,"*) ;; *) missed_b=$((missed_b + 1)); note+="missed:$k " ;; esac
  done
  # A static run reads the dependencies from the lockfile (--deps
  # lockfile); without one, what they do is unseen, and the row says so.
  cp=$(jq -r '.probes[]? | select(.probe == "child_process") | "\(.reason // "") \(.facts.node_modules // false) \(.facts.dependencies_scanned // 0)"' <<<"$out")
  read -r cp_reason cp_nm cp_scanned <<<"$cp"
  if [ "$cp_reason" = dependencies_not_installed ]; then
    if [ "$cp_nm" = true ] || [ "${cp_scanned:-0}" -gt 0 ]; then note+="deps-partly-scanned "; else note+="deps-unscanned(no-lockfile) "; fi
  fi
  if [ "$verdict" = blocked ] && { [ "$got" = ready ] || [ "$got" = ready_after_rewrite ]; }; then
    unsafe=$((unsafe + 1)); note+="UNSAFE "
  fi
  printf '%-52s %-20s %-20s %-5s %-5s %s\n' "$label" "$verdict" "$got" "$ok" "$hard" "$note"
done <"$expect"
echo
echo "services: $rows  verdict matches: $match/$rows  false blockers: $false_b  missed blockers: $missed_b  unsafe (ready for a service that needs a shell): $unsafe  errors: $errors"
[ $unsafe -eq 0 ]
