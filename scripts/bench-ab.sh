#!/usr/bin/env bash
# Before and after on one machine: the outbox built from REV against the
# one built from the working tree, on the same generated inputs, in
# alternating rounds. Per input: user CPU per GiB with the file on stdin
# (the steadier figure) and the pipe's wall time over `cat | tail -n 20`'s,
# medians. Figures taken on different machines do not compare; these do.
#
#   scripts/bench-ab.sh REV [SIZE_MiB]        default size: 1024
#   ROUNDS=5 KINDS="server grep" scripts/bench-ab.sh acfa513 256
#
# REV is built in a temporary worktree with its own target directory.
# Needs python3, GNU time (/usr/bin/time), git. Inputs go to $BENCH_DIR
# (default: a temporary directory, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

REV=${1:?usage: scripts/bench-ab.sh REV [SIZE_MiB]}
MIB=${2:-1024}
ROUNDS=${ROUNDS:-3}
KINDS=${KINDS:-log log10 server unique gitlog find grep}
[[ -x /usr/bin/time ]] || { echo "bench-ab: needs GNU time (/usr/bin/time)" >&2; exit 2; }

WORK=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$WORK"
TREE=$(mktemp -d)
cleanup() {
  git worktree remove --force "$TREE" 2>/dev/null || rm -rf "$TREE"
  [[ -n ${BENCH_DIR:-} ]] || rm -rf "$WORK"
}
trap cleanup EXIT

git worktree add -q --detach "$TREE" "$REV"
(cd "$TREE" && CARGO_TARGET_DIR="$WORK/target-before" cargo build --release --quiet)
cargo build --release --quiet
declare -A BIN=([before]="$WORK/target-before/release/outbox" [after]="$PWD/target/release/outbox")

source scripts/bench-inputs.sh
export OUTBOX_DIR=$WORK/store
mkdir -p "$OUTBOX_DIR" && chmod 700 "$OUTBOX_DIR"

clear_store() {
  rm -rf "${OUTBOX_DIR:?}"/*
  sync
}
now() { date +%s.%N; }

echo "before: $REV ($(git rev-parse --short "$REV")); after: the working tree at $(git rev-parse --short HEAD)"
echo "$(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$WORK/ab"
for kind in $KINDS; do
  f=$WORK/$kind.txt
  [[ -s $f ]] || gen "$kind" "$MIB" "$f"
  cat "$f" >/dev/null
  for ((r = 1; r <= ROUNDS; r++)); do
    for side in before after; do
      clear_store
      /usr/bin/time -f '%U' -o "$WORK/user" "${BIN[$side]}" <"$f" >/dev/null
      clear_store
      t0=$(now); cat "$f" | "${BIN[$side]}" >/dev/null; t1=$(now)
      clear_store
      t2=$(now); cat "$f" | tail -n 20 >/dev/null; t3=$(now)
      echo "$kind $side $(tail -n 1 "$WORK/user") $t0 $t1 $t2 $t3 $(stat -c %s "$f")" >>"$WORK/ab"
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$WORK/ab" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    kind, side, user, t0, t1, t2, t3, size = line.split()
    gib = int(size) / 2**30
    rows.setdefault(kind, {}).setdefault(side, []).append(
        (float(user) / gib, (float(t1) - float(t0)) / (float(t3) - float(t2))))
print()
print("| input | user CPU per GiB, before | after | pipe ÷ tail, before | after |")
print("| --- | ---: | ---: | ---: | ---: |")
for kind, sides in rows.items():
    med = lambda side, i: statistics.median(x[i] for x in sides[side])
    print(f"| {kind} | {med('before', 0):.2f} s | {med('after', 0):.2f} s | {med('before', 1):.2f} | {med('after', 1):.2f} |")
PY
