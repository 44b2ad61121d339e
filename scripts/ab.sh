#!/usr/bin/env bash
# A/B timing of outbox builds through a pipe, beside `cat | tail -n 20`:
# alternating rounds on the same input, median wall time per command.
# For one change's before/after (scripts/bench.sh measures one build
# against tail, tee and cp).
#
#   scripts/ab.sh FILE ROUNDS OUTBOX_BINARY...
#   e.g. git stash; cargo build --release; cp target/release/outbox /tmp/before
#        git stash pop; cargo build --release
#        scripts/ab.sh big.log 7 /tmp/before target/release/outbox
#
# Each run gets an empty temporary store, so no run finds its content
# already stored (which would add a re-hash of the stored copy).
set -euo pipefail
[[ $# -ge 3 ]] || { sed -n 2,12p "$0"; exit 2; }
file=$1 rounds=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OUTBOX_DIR=$work/store
cat "$file" >/dev/null # into the page cache
for ((r = 1; r <= rounds; r++)); do
  for cmd in tail "$@"; do
    rm -rf "$OUTBOX_DIR" && mkdir -m 700 "$OUTBOX_DIR" && sync
    t0=$(date +%s.%N)
    if [[ $cmd == tail ]]; then cat "$file" | tail -n 20 >/dev/null; else cat "$file" | "$cmd" >/dev/null; fi
    t1=$(date +%s.%N)
    echo "$cmd $t0 $t1" >>"$work/times"
  done
done
python3 - "$work/times" tail "$@" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    cmd, t0, t1 = line.split()
    runs.setdefault(cmd, []).append(float(t1) - float(t0))
base = statistics.median(runs["tail"])
for cmd in sys.argv[2:]:
    m = statistics.median(runs[cmd])
    every = " ".join(f"{t:.2f}" for t in runs[cmd])
    print(f"{cmd}: median {m:.2f} s, {m / base:.2f}x tail  (runs: {every})")
PY
