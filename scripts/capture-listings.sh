#!/usr/bin/env bash
# Regenerate the real listing fixtures under tests/fixtures/layouts/: path
# listings (find, ls, du, wc, tree, git ls-files), match listings (grep, rg,
# git grep) and commit and patch listings (git log in its forms, git show,
# git diff, diff -u), made by running the real commands over real trees.
#
# Usage: scripts/capture-listings.sh [LAYOUT...]   (paths matches commits patch)
#
# The trees, copied or extracted to a fixed scratch path
# ($OUTBOX_FIXTURE_SCRATCH/listings, default /tmp/outbox-fixtures/listings)
# so that the paths printed are stable:
# - this repository's history, cloned and read at a pinned commit (PIN);
# - crate sources from the cargo registry, at the versions Cargo.lock pins
#   (`cargo fetch --locked` brings them when missing);
# - Japanese text: the manual pages of Debian's manpages-ja (apt),
#   decompressed;
# - /usr/share itself (zoneinfo, the Japanese manual pages).
# Each command's stdout and stderr go, merged and byte for byte, to
# <layout>/<case>.out; the command line is recorded in README.md's table by
# hand when a case is added. Sizes are kept small (the big inputs of the
# benches are made at bench time by scripts/bench.sh, never committed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FIX=$ROOT/tests/fixtures/layouts
SCRATCH=${OUTBOX_FIXTURE_SCRATCH:-/tmp/outbox-fixtures}/listings
# The newest commit of main when the fixtures were first made.
PIN=be08cc8e1e2eac3aa3017d13aa8aa500243eb5eb
CRATES=(regex-automata regex-syntax clap_builder bstr memchr aho-corasick)

export LANG=C.UTF-8 LC_ALL=C.UTF-8 TZ=UTC
unset GREP_COLOR GREP_COLORS RIPGREP_CONFIG_PATH GIT_PAGER PAGER || true
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

declare -a ONLY=("$@")
want() {
  local l
  [ ${#ONLY[@]} -eq 0 ] && return 0
  for l in "${ONLY[@]}"; do [ "$l" = "$1" ] && return 0; done
  return 1
}
log() { printf '== %s\n' "$*" >&2; }

apt_install() { # the missing ones only
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
}

# capture LAYOUT CASE DIR COMMAND: run COMMAND (a bash string) in DIR, stdin
# closed, stdout and stderr merged into LAYOUT/CASE.out.
capture() {
  local layout=$1 case=$2 dir=$3 cmd=$4 st
  mkdir -p "$FIX/$layout"
  log "$layout/$case: (cd $dir && $cmd)"
  set +e
  (cd "$dir" && bash -c "$cmd") >"$FIX/$layout/$case.out" 2>&1 </dev/null
  st=$?
  set -e
  printf '%-34s exit %s, %s lines, %s bytes\n' "$layout/$case" "$st" \
    "$(wc -l <"$FIX/$layout/$case.out")" "$(wc -c <"$FIX/$layout/$case.out")" >&2
}

apt_install git tree ripgrep manpages-ja findutils coreutils diffutils grep

mkdir -p "$SCRATCH"
REPO=$SCRATCH/repo
if [ ! -d "$REPO/.git" ]; then git clone -q "$ROOT" "$REPO"; fi
git -C "$REPO" fetch -q "$ROOT" 2>/dev/null || true
git -C "$REPO" -c advice.detachedHead=false checkout -q "$PIN"

# Crate sources at the versions Cargo.lock pins, copied to the scratch dir.
CRATE_DIR=$SCRATCH/crates
rm -rf "$CRATE_DIR"; mkdir -p "$CRATE_DIR"
REGISTRY=${CARGO_HOME:-$HOME/.cargo}/registry/src
for c in "${CRATES[@]}"; do
  v=$(awk -v n="$c" '$0 == "name = \"" n "\"" { getline; gsub(/version = |"/, ""); print; exit }' "$ROOT/Cargo.lock")
  src=$(ls -d "$REGISTRY"/*/"$c-$v" 2>/dev/null | head -n 1 || true)
  if [ -z "$src" ]; then (cd "$ROOT" && cargo fetch --locked -q); src=$(ls -d "$REGISTRY"/*/"$c-$v" | head -n 1); fi
  cp -a "$src" "$CRATE_DIR/"
done

# Japanese text: the manual pages of section 1, decompressed.
JA=$SCRATCH/ja
rm -rf "$JA"; mkdir -p "$JA"
for f in /usr/share/man/ja/man1/*.gz; do zcat "$f" >"$JA/$(basename "$f" .gz)"; done

# Two versions of one folder of this repository, for diff -u.
rm -rf "$SCRATCH/old" "$SCRATCH/new"; mkdir -p "$SCRATCH/old" "$SCRATCH/new"
git -C "$REPO" archive "$PIN~25" src/family | tar -x -C "$SCRATCH/old"
git -C "$REPO" archive "$PIN" src/family | tar -x -C "$SCRATCH/new"

if want paths; then
  capture paths find-man-ja /usr/share/man 'find ja'
  capture paths ls-l-man-ja-man8 /usr/share/man/ja/man8 'ls -l'
  capture paths ls-laR-crates "$CRATE_DIR" 'ls -laR regex-automata-* clap_builder-* bstr-*'
  capture paths du-ah-zoneinfo /usr/share 'du -ah zoneinfo/right'
  capture paths wc-l-crates "$CRATE_DIR" "find . -name '*.rs' | sort | xargs -n 60 wc -l"
  capture paths tree-crates "$CRATE_DIR" 'tree regex-syntax-* memchr-*'
  capture paths git-ls-files "$REPO" 'git ls-files'
fi

if want matches; then
  capture matches grep-rn-ja "$JA" "grep -rn 'エラー' [a-c]*"
  capture matches grep-rn-error "$CRATE_DIR" 'grep -rn error clap_builder-*/src/error clap_builder-*/src/parser'
  capture matches grep-rn-context "$CRATE_DIR" "grep -rn -C1 'panic!' regex-syntax-* memchr-*"
  capture matches grep-c "$CRATE_DIR" 'grep -rc error .'
  capture matches rg "$CRATE_DIR" "rg -n --sort path 'Error' bstr-* memchr-*"
  capture matches git-grep "$REPO" "git grep -n error $PIN -- src/family src/stream"
fi

if want commits; then
  capture commits git-log "$REPO" "git log -n 50 $PIN"
  capture commits git-log-stat "$REPO" "git log --stat -n 30 $PIN"
  capture commits git-log-oneline "$REPO" "git log --oneline $PIN"
  capture commits git-log-p "$REPO" "git log -p $PIN -- Cargo.toml scripts/test.sh rustfmt.toml"
  capture commits git-log-graph "$REPO" "git log --graph -n 30 4c19935"
fi

if want patch; then
  capture patch git-show "$REPO" "git show $PIN~5"
  capture patch git-diff "$REPO" "git diff $PIN~30 $PIN -- src/render/ends.rs src/render/fold.rs src/text/shape.rs"
  capture patch diff-u "$SCRATCH" 'diff -ru old new'
fi

{
  printf 'git       %s\n' "$(git --version)"
  printf 'grep      %s\n' "$(grep --version | head -n 1)"
  printf 'ripgrep   %s\n' "$(rg --version | head -n 1)"
  printf 'find      %s\n' "$(find --version | head -n 1)"
  printf 'coreutils %s\n' "$(ls --version | head -n 1)"
  printf 'tree      %s\n' "$(tree --version | head -n 1)"
  printf 'diff      %s\n' "$(diff --version | head -n 1)"
  printf 'manpages-ja %s\n' "$(dpkg-query -W -f='${Version}' manpages-ja)"
} >"$FIX/VERSIONS.txt"
