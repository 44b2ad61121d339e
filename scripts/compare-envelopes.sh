#!/usr/bin/env bash
# Runs two outbox binaries on the same inputs and reports every input whose
# envelope differs: the check that a speed change changed nothing a reader
# sees. Each run gets a fresh store at the same path, so ids and paths match.
#
#   scripts/compare-envelopes.sh OLD_BIN NEW_BIN [BUDGET...] -- FILE...
#
# Budgets default to 4000 and 14000. Exit status 1 when any envelope differs.
set -euo pipefail
old=$1 new=$2
shift 2
budgets=()
while [[ $# -gt 0 && $1 != -- ]]; do budgets+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
[[ ${#budgets[@]} -eq 0 ]] && budgets=(4000 14000)
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
run() {
    rm -rf "$home/store" && mkdir "$home/store"
    OUTBOX_DIR="$home/store" "$1" --budget "$2" < "$3" > "$4" 2>&1 || true
}
differ=0 same=0
for f in "$@"; do
    for b in "${budgets[@]}"; do
        run "$old" "$b" "$f" "$home/old"
        run "$new" "$b" "$f" "$home/new"
        if cmp -s "$home/old" "$home/new"; then
            same=$((same + 1))
        else
            differ=$((differ + 1))
            echo "differs: $f (budget $b)"
        fi
    done
done
echo "$same identical, $differ different"
[[ $differ -eq 0 ]]
