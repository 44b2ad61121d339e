#!/usr/bin/env bash
# End-to-end benchmark: outbox side by side with tail, tee and cp on the
# same generated inputs, alternating rounds, medians and ratios; peak RSS;
# a check that every stored copy is byte-identical; a retention table (what
# survives of the verdict and the error lines) for head, tail and outbox;
# and a read-everything Python reference.
#
#   scripts/bench.sh [SIZE_MiB ...]        default: 256 (a short run)
#   ROUNDS=5 KINDS="log log10 ja ja10 server unique" scripts/bench.sh 1024 4096
#   KINDS="gitlog find grep" scripts/bench.sh 1024     (listings)
#
# Ratios, per input and size, all from the same rounds:
#   outbox through a pipe / `cat | tail -n 20`   (reading only)
#   outbox through a pipe / `cat | tee FILE`     (reading and writing a copy)
#   outbox with the file on stdin / `cp FILE`    (copying a file)
# Inputs: ASCII log with ~0.1% (log) or 10% (log10) signal lines, Japanese
# log with ~0.1% (ja) or 10% (ja10); real server logs (server: the
# PostgreSQL and nginx error logs captured by
# scripts/capture-server-logs.sh, interleaved, repeated with their numbers
# shifted; about a third of the lines are errors and warnings) and its worst
# case (unique: a random word in every line, so no two lines share a
# template); listings made by repeating real output (tests/fixtures/layouts,
# captured by scripts/capture-listings.sh), renamed in each copy so that no
# two units are alike: a `git log -p` (gitlog; each copy's commits get their
# own hashes), a `find` of millions of paths (find; each copy under its own
# directory) and a `grep -rn` (grep; likewise). Each round runs every command once, in
# the same order; files written by the previous command are removed and
# synced first, so no run pays for another's dirty pages. Inputs stay in
# the page cache (they are read once before timing).
#
# Needs: python3, GNU time (/usr/bin/time; installed with apt-get when
# missing). Nothing is committed: inputs are generated from a fixed seed
# into $BENCH_DIR (default: a temporary directory, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=("$@")
[[ ${#SIZES[@]} -gt 0 ]] || SIZES=(256)
ROUNDS=${ROUNDS:-5}
KINDS=${KINDS:-log log10 ja ja10 server unique}
REF_MIB=${REF_MIB:-200}
PATTERN='\b(error|failed|failure|fatal|panic|exception)\b'

if [[ ! -x /usr/bin/time ]]; then
  apt-get update -qq && apt-get install -y -qq time >/dev/null
fi
cargo build --release --quiet
OUTBOX=$PWD/target/release/outbox

WORK=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$WORK"
[[ -n ${BENCH_DIR:-} ]] || trap 'rm -rf "$WORK"' EXIT
export OUTBOX_DIR=$WORK/store
mkdir -p "$OUTBOX_DIR" && chmod 700 "$OUTBOX_DIR"

# The inputs (gen KIND MIB FILE) are made by scripts/bench-inputs.sh.
source scripts/bench-inputs.sh

# timed NAME CMD...: wall seconds, peak RSS (KiB) and user CPU seconds
# (the command's and its children's) of one run. Files
# written by the previous run are removed and flushed first, so no run pays
# for another's dirty pages.
timed() {
  local name=$1; shift
  local t0 t1 rss
  rm -f "$WORK/copy.out" "$OUTBOX_DIR"/* 2>/dev/null || true
  sync
  t0=$(date +%s.%N)
  /usr/bin/time -f '%M %U' -o "$WORK/rss" bash -c "$*"
  t1=$(date +%s.%N)
  rss=$(tail -n 1 "$WORK/rss")
  echo "$name $(python3 -c "print($t1-$t0)") $rss" >>"$WORK/times"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
med() { awk -v n="$1" '$1==n{print $2}' "$WORK/times" | median; }
peak() { awk -v n="$1" '$1==n{print $3}' "$WORK/times" | sort -n | tail -n 1; }
user() { awk -v n="$1" '$1==n{print $4}' "$WORK/times" | median; }

# same FILE: the entry outbox just stored is byte-identical to FILE.
same() {
  local entry
  entry=$(find "$OUTBOX_DIR" -maxdepth 1 -type f ! -name '*.meta' ! -name '.*' ! -name 'gc-stamp' | head -n 1)
  if [[ -n $entry ]] && cmp -s "$entry" "$1"; then echo yes; else echo "NO ($entry)"; fi
}

# compare LABEL FILE: ROUNDS alternating rounds, then one table row.
compare() {
  local label=$1 f=$2
  : >"$WORK/times"
  cat "$f" >/dev/null # into the page cache, as for every command after
  local id_pipe=yes id_file=yes s
  for ((r = 1; r <= ROUNDS; r++)); do
    timed tail "cat '$f' | tail -n 20 >/dev/null"
    timed tee "cat '$f' | tee '$WORK/copy.out' >/dev/null"
    timed cp "cp '$f' '$WORK/copy.out'"
    timed outbox_pipe "cat '$f' | '$OUTBOX' >/dev/null"
    s=$(same "$f"); [[ $s == yes ]] || id_pipe=$s
    timed outbox_file "'$OUTBOX' <'$f' >/dev/null"
    s=$(same "$f"); [[ $s == yes ]] || id_file=$s
  done
  rm -f "$WORK/copy.out" "$OUTBOX_DIR"/*
  local bytes
  bytes=$(stat -c %s "$f")
  python3 - "$label" "$bytes" "$(med tail)" "$(med tee)" "$(med cp)" "$(med outbox_pipe)" "$(med outbox_file)" \
    "$(peak outbox_pipe)" "$(peak outbox_file)" "$id_pipe" "$id_file" "$(user outbox_file)" <<'PY' | tee -a "$WORK/summary"
import sys
label, size, tail, tee, cp, op, of, rp, rf, ip, if_, uf = sys.argv[1:]
size, tail, tee, cp, op, of, uf = int(size), *map(float, (tail, tee, cp, op, of, uf))
mib = size / 2**20
print(f"| {label} | {mib:.0f} MiB | {op:.2f} | {tail:.2f} | {tee:.2f} | {of:.2f} | {cp:.2f} | "
      f"**{op/tail:.2f}** | **{op/tee:.2f}** | **{of/cp:.2f}** | {uf / (mib / 1024):.2f} | "
      f"{int(max(int(rp), int(rf))) / 1024:.0f} MiB | {ip}/{if_} |")
PY
}

echo "## Machine"
echo
echo "$(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB RAM, $(uname -r), $(findmnt -no FSTYPE -T "$WORK" 2>/dev/null || echo '?') under $WORK"
echo "Load average before: $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS alternating rounds, medians."
echo
echo "| input | size | outbox pipe s | tail s | tee s | outbox file s | cp s | pipe ÷ tail | pipe ÷ tee | file ÷ cp | outbox user s per GiB (file on stdin) | peak RSS | stored copy identical (pipe/file) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
: >"$WORK/summary"
declare -A NAMES=([log]="ASCII log, 0.1% signal" [log10]="ASCII log, 10% signal" [ja]="Japanese log, 0.1% signal" [ja10]="Japanese log, 10% signal"
  [server]="real server logs, repeated" [unique]="server logs, every template unique"
  [gitlog]="git log -p (commits)" [find]="find (paths)" [grep]="grep -rn (matches)")
for size in "${SIZES[@]}"; do
  for kind in $KINDS; do
    gen "$kind" "$size" "$WORK/in.txt"
    compare "${NAMES[$kind]}" "$WORK/in.txt"
    rm -f "$WORK/in.txt"
  done
done
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

SIZE_MIB=${SIZES[0]}
# One line of SIZE MiB: memory must not follow line length.
python3 -c "
import sys
with open('$WORK/oneline.txt','wb') as f:
    for _ in range($SIZE_MIB): f.write(b'x' * (1 << 20))
    f.write(b' verdict: FAILED\n')"
/usr/bin/time -f '%M' -o "$WORK/rss" "$OUTBOX" <"$WORK/oneline.txt" >/dev/null
echo
echo "Single ${SIZE_MIB} MiB line, file on stdin: peak RSS $(( $(tail -n 1 "$WORK/rss") / 1024 )) MiB"
rm -f "$WORK/oneline.txt" "$OUTBOX_DIR"/*

# Against a straightforward read-everything implementation.
gen log "$REF_MIB" "$WORK/ref.txt"
cat >"$WORK/naive.py" <<'PY'
import re, sys
data = sys.stdin.buffer.read()
text = data.decode("utf-8", "replace")
lines = text.split("\n")
pat = re.compile(r"\b(error|failed|failure|fatal|panic|exception)\b", re.I)
hits = [i for i, l in enumerate(lines, 1) if pat.search(l)]
open("/dev/null", "w").write(f"{len(text)} {len(lines)} {len(hits)}\n" + "\n".join(lines[:150] + lines[-20:]))
PY
: >"$WORK/times"
for ((r = 1; r <= ROUNDS; r++)); do
  timed naive "python3 '$WORK/naive.py' <'$WORK/ref.txt'"
  timed outbox_pipe "cat '$WORK/ref.txt' | '$OUTBOX' >/dev/null"
  rm -f "$OUTBOX_DIR"/*
done
naive=$(awk '$1=="naive"{print $2}' "$WORK/times" | median)
ob=$(awk '$1=="outbox_pipe"{print $2}' "$WORK/times" | median)
nrss=$(awk '$1=="naive"{print $3}' "$WORK/times" | sort -n | tail -n 1)
echo
echo "Read-everything Python reference on $REF_MIB MiB: $(python3 -c "print(f'{$naive:.2f} s, {$nrss/1024:.0f} MiB peak; outbox through a pipe {$ob:.3f} s: {$naive/$ob:.0f}x faster')")"
rm -f "$WORK/ref.txt"

# Retention: what survives of the verdict and the error lines.
python3 - "$WORK" <<'PY'
import random, sys
w = sys.argv[1]
rnd = random.Random(7)
with open(f"{w}/build.txt", "w") as f:
    for i in range(20000):
        f.write(f"   Compiling crate{i} v0.{i%9}.{i%4}\n")
        if i % 997 == 3:
            f.write(f"error[E0308]: mismatched types --> src/module{i}.rs:{rnd.randrange(900)}:{rnd.randrange(80)}\n")
    f.write("error: could not compile `app` due to 21 previous errors; BUILD FAILED\n")
with open(f"{w}/wc.txt", "w") as f:
    total = 0
    for i in range(40000):
        n = rnd.randrange(10, 5000); total += n
        f.write(f"{n:>8} ./src/pkg{i%300}/file_{i}.rs\n")
    f.write(f"{total:>8} total\n")
with open(f"{w}/tests.txt", "w") as f:
    for i in range(30000):
        if 14000 <= i < 14012:
            f.write(f"test suite::case_{i} ... FAILED\n")
        else:
            f.write(f"test suite::case_{i} ... ok\n")
    f.write("test result: FAILED. 29988 passed; 12 failed; 0 ignored\n")
PY
echo
echo "### Retention (default budget 14,000 chars)"
echo
echo "| input | tool | output chars | last line kept | signal lines shown / in input |"
echo "| --- | --- | ---: | --- | --- |"
for f in build wc tests; do
  in=$WORK/$f.txt
  last=$(tail -n 1 "$in")
  total=$(grep -ciE "$PATTERN" "$in" || true)
  for tool in "head -n 150" "head -c 14000" "tail -c 14000" "outbox"; do
    if [[ $tool == outbox ]]; then out=$("$OUTBOX" <"$in"); else out=$($tool <"$in"); fi
    chars=$(printf '%s' "$out" | python3 -c "import sys; print(len(sys.stdin.buffer.read().decode('utf-8','replace')))")
    kept=no; grep -qxF -- "$last" <<<"$out" && kept=yes
    if [[ $tool == outbox ]]; then
      shown=$(grep -o '"signal_lines_shown":[0-9]*' <<<"$out" | cut -d: -f2)
      hits=$(grep -o '"signal_hits":[0-9]*' <<<"$out" | cut -d: -f2)
      sig="$shown shown, all $hits counted"
    else
      sig="$(grep -ciE "$PATTERN" <<<"$out" || true) shown, none counted (of $total)"
    fi
    echo "| $f | \`$tool\` | $chars | $kept | $sig |"
  done
done
