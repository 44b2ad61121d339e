# Second wave of real tool-output fixtures (issues 26 and 31): test
# frameworks (TAP producers, mocha, RSpec, test-unit, minitest), ansible,
# linters (pylint, flake8, ruff, mypy, black, ShellCheck, yamllint,
# Prettier, ESLint's unix format), package managers (pip, npm, apt), strace,
# vite, and the multi-run cases (pytest, maven). Sourced by
# scripts/capture-fixtures.sh, whose helpers (want, capture, capture_from,
# run_capture, stage, version, apt_install, have) it uses.
#
# Linters run on real code fetched at capture time from the registries
# (docopt 0.6.2 and six 1.16.0 from PyPI, generator-node 2.8.0 from npm,
# shell scripts and YAML files shipped by Debian and ansible-core); only
# the tools' output is committed.

# Pinned versions (where the registry lets us pin).
PY_TOOLS="ruff==0.17.6 mypy==2.4.1 pylint==4.1.5 flake8==7.5.0 black==26.10.1 yamllint==1.38.0 ansible-core==2.19.14 pytest==$PYTEST_VERSION"
NODE2_PKGS=(mocha@12.0.3 tap@21.8.0 prettier@3.10.1 eslint@$ESLINT_VERSION eslint-formatter-unix@9.0.1 vite@6.4.6)

PY2_FAMS=0
for f in pylint flake8 ruff mypy black yamllint ansible pytest2; do want $f && PY2_FAMS=1; done
if [ $PY2_FAMS -eq 1 ]; then
  if [ ! -x "$TOOLS/venv2/bin/ruff" ]; then
    python3 -m venv "$TOOLS/venv2"
    # shellcheck disable=SC2086
    "$TOOLS/venv2/bin/pip" install -q $PY_TOOLS >&2
  fi
  PY2=$TOOLS/venv2/bin
  # Real code to lint: two single-module packages from PyPI (sdists).
  LINT_SRC=$SCRATCH/_sources/lint
  if [ ! -f "$LINT_SRC/six.py" ]; then
    mkdir -p "$SCRATCH/_sources/dl" "$LINT_SRC"
    "$PY2/pip" download -q --no-deps --no-binary :all: docopt==0.6.2 six==1.16.0 -d "$SCRATCH/_sources/dl" >&2
    tar -xzf "$SCRATCH/_sources/dl/docopt-0.6.2.tar.gz" -C "$SCRATCH/_sources" docopt-0.6.2/docopt.py
    tar -xzf "$SCRATCH/_sources/dl/six-1.16.0.tar.gz" -C "$SCRATCH/_sources" six-1.16.0/six.py
    cp "$SCRATCH/_sources/docopt-0.6.2/docopt.py" "$SCRATCH/_sources/six-1.16.0/six.py" "$LINT_SRC/"
  fi
fi
# lint_capture FAMILY CASE COMMAND: the PyPI sources staged as CASE.
lint_capture() {
  stage "$1" "$2"
  cp "$LINT_SRC/docopt.py" "$LINT_SRC/six.py" "$SCRATCH/$1/$2/"
  run_capture "$@"
}
if want pylint; then
  version pylint bash -c "$PY2/pylint --version | head -n 1"
  lint_capture pylint messages "$PY2/pylint docopt.py six.py"
fi
if want flake8; then
  version flake8 "$PY2/flake8" --version
  lint_capture flake8 statistics "$PY2/flake8 --count --statistics ."
fi
if want ruff; then
  version ruff "$PY2/ruff" --version
  lint_capture ruff check "$PY2/ruff check --no-cache ."
  lint_capture ruff statistics "$PY2/ruff check --no-cache --select ALL --statistics ."
  lint_capture ruff concise "$PY2/ruff check --no-cache --output-format concise ."
  lint_capture ruff clean "$PY2/ruff check --no-cache --select F401 docopt.py"
fi
if want mypy; then
  version mypy "$PY2/mypy" --version
  lint_capture mypy strict "$PY2/mypy --strict --no-incremental docopt.py six.py"
  lint_capture mypy clean "$PY2/mypy --no-incremental --ignore-missing-imports docopt.py"
fi
if want black; then
  version black bash -c "$PY2/black --version | head -n 1"
  lint_capture black check "$PY2/black --check ."
  lint_capture black check-diff "$PY2/black --check --diff docopt.py"
fi
if want yamllint; then
  version yamllint "$PY2/yamllint" --version
  # Real YAML: files ansible-core ships (plugin docs, galaxy metadata).
  ANS=$("$PY2/python" -c 'import ansible, os; print(os.path.dirname(ansible.__file__))')
  yaml_capture() {
    stage yamllint "$1"
    cp "$ANS"/plugins/test/{failure,search,any}.yml "$ANS"/galaxy/data/collections_galaxy_meta.yml "$SCRATCH/yamllint/$1/"
    run_capture yamllint "$1" "$2"
  }
  yaml_capture standard "$PY2/yamllint ."
  yaml_capture parsable "$PY2/yamllint -f parsable ."
fi
if want ansible; then
  version ansible bash -c "$PY2/ansible-playbook --version | head -n 1"
  capture ansible failed-task "ANSIBLE_NOCOLOR=1 ANSIBLE_HOME=$TOOLS/ansible-home ANSIBLE_LOCAL_TEMP=$TOOLS/ansible-tmp $PY2/ansible-playbook -i inventory.ini play.yml"
fi

#---------------------------------------------------------------------------
# pytest: subtests on a real suite (more-itertools 10.5.0 from PyPI, one
# line of more.py changed to break `windowed`), and two runs in one output
#---------------------------------------------------------------------------
if want pytest2; then
  MI=$SCRATCH/_sources/more-itertools-10.5.0
  if [ ! -d "$MI" ]; then
    "$PY2/pip" download -q --no-deps --no-binary :all: more-itertools==10.5.0 -d "$SCRATCH/_sources/dl" >&2
    tar -xzf "$SCRATCH/_sources/dl/more-itertools-10.5.0.tar.gz" -C "$SCRATCH/_sources"
  fi
  BREAK="sed -i 's/(n - 1 if step >= n else step - 1)/(n - 1)/' more_itertools/more.py"
  mi_capture() {
    stage pytest "$1"
    cp -a "$MI/." "$SCRATCH/pytest/$1/"
    run_capture pytest "$1" "$2"
  }
  PYT="$PY2/python -m pytest -p no:cacheprovider"
  mi_capture subtests-failures "$BREAK && $PYT -q tests"
  mi_capture subtests-passing "$PYT -q tests"
  mi_capture two-runs "cp more_itertools/more.py /tmp/more.py.orig-\$\$ && $BREAK && $PYT tests/test_more.py -k 'Windowed or Replace'; cp /tmp/more.py.orig-\$\$ more_itertools/more.py && rm /tmp/more.py.orig-\$\$ && $PYT tests/test_more.py -k 'Windowed or Replace'"
fi

#---------------------------------------------------------------------------
# node: node --test (TAP), node-tap, mocha, Prettier, ESLint's unix format,
# vite, npm ERESOLVE
#---------------------------------------------------------------------------
NODE2_FAMS=0
for f in tap mocha prettier eslint2 vite npm2; do want $f && NODE2_FAMS=1; done
if [ $NODE2_FAMS -eq 1 ]; then
  have node || apt_install nodejs npm
  NM2=$TOOLS/node2
  mkdir -p "$NM2"
  [ -f "$NM2/package.json" ] || printf '{"name":"outbox-fixture-tools-2","private":true}\n' >"$NM2/package.json"
  need=0
  for p in "${NODE2_PKGS[@]}"; do
    name=${p%@*}; ver=${p##*@}
    got=$(node -p "require('$NM2/node_modules/$name/package.json').version" 2>/dev/null || true)
    [ "$got" = "$ver" ] || need=1
  done
  if [ $need -eq 1 ]; then
    (cd "$NM2" && npm install --no-audit --no-fund --save-exact "${NODE2_PKGS[@]}" >&2)
  fi
  BIN2=$NM2/node_modules/.bin
fi
# node2_capture FAMILY CASE SOURCE_CASE COMMAND: like node_capture, with
# the second wave's node_modules.
node2_capture() {
  local fam=$1 case=$2 src=$3 cmd=$4
  stage "$fam" "$case"
  cp -a "$FIX/$fam/$src/." "$SCRATCH/$fam/$case/"
  ln -sfn "$NM2/node_modules" "$SCRATCH/$fam/$case/node_modules"
  run_capture "$fam" "$case" "$cmd"
}
if want tap; then
  version tap node -p "require('$NM2/node_modules/tap/package.json').version"
  have prove || apt_install perl
  version prove bash -c 'prove --version'
  capture tap node-test 'node --test'
  node2_capture tap node-tap node-tap "$BIN2/tap --reporter=tap test/cart.test.js"
  capture tap prove 'prove t/'
  capture_from tap prove-verbose prove 'prove -v t/'
fi
if want mocha; then
  version mocha "$BIN2/mocha" --version
  node2_capture mocha failures failures "$BIN2/mocha"
  node2_capture mocha passing failures "$BIN2/mocha --grep 'total of an empty cart'"
fi
if want prettier; then
  version prettier "$BIN2/prettier" --version
  # Real code: generator-node 2.8.0 from npm; its templates hold EJS tags,
  # which no JavaScript parser accepts.
  stage prettier check
  (cd "$SCRATCH/prettier/check" && npm pack -q generator-node@2.8.0 >/dev/null && tar -xzf generator-node-2.8.0.tgz && rm generator-node-2.8.0.tgz)
  run_capture prettier check "cd package && $BIN2/prettier --check ."
fi
if want eslint2; then
  node2_capture eslint problems-unix problems "$BIN2/eslint --format unix src"
fi
if want vite; then
  version vite "$BIN2/vite" --version
  node2_capture vite build-failure build-failure "$BIN2/vite build"
fi
if want npm2; then
  capture npm eresolve 'npm install --dry-run --no-audit --no-fund'
fi

#---------------------------------------------------------------------------
# ruby: RSpec, test-unit, minitest through rake (Debian packages;
# rubygems.org is not reachable)
#---------------------------------------------------------------------------
if want rspec || want testunit || want minitest; then
  apt_install ruby ruby-rspec ruby-test-unit ruby-minitest rake
  version ruby ruby --version
fi
if want rspec; then
  version rspec bash -c 'rspec --version | tr "\n" " "'
  capture rspec failures 'rspec --no-color'
  capture_from rspec failures-documentation failures 'rspec --no-color --format documentation'
  capture rspec many-examples 'rspec --no-color --format documentation'
fi
if want testunit; then
  capture testunit failures 'ruby test/test_cart.rb --no-use-color'
fi
if want minitest; then
  capture minitest failures 'rake test'
fi

#---------------------------------------------------------------------------
# ShellCheck on shell scripts Debian ships (gettext-base, gzip, debconf)
#---------------------------------------------------------------------------
if want shellcheck; then
  apt_install shellcheck gettext-base gzip debconf
  version shellcheck bash -c 'shellcheck --version | sed -n 2p'
  sc_capture() {
    stage shellcheck "$1"
    cp /usr/bin/gettext.sh /usr/bin/zdiff /usr/share/debconf/confmodule "$SCRATCH/shellcheck/$1/"
    run_capture shellcheck "$1" "$2"
  }
  sc_capture tty 'shellcheck gettext.sh zdiff confmodule'
  sc_capture gcc 'shellcheck -f gcc gettext.sh zdiff confmodule'
fi

#---------------------------------------------------------------------------
# package managers: pip, apt/dpkg
#---------------------------------------------------------------------------
if want pip; then
  capture pip resolution-impossible "$TOOLS/venv2/bin/pip install --dry-run --ignore-installed --no-cache-dir requests==2.31.0 urllib3==1.20"
fi
if want apt; then
  version apt bash -c 'apt-get --version | head -n 1'
  # A simulation: what apt would do, the summary line in the middle.
  capture apt simulate-install 'apt-get install -s -y texlive-latex-base'
  capture apt reinstall 'DEBIAN_FRONTEND=noninteractive apt-get install -y --reinstall tree'
  capture apt unknown-package 'apt-get install -s -y no-such-package-outbox'
fi

#---------------------------------------------------------------------------
# strace -f of a link that fails: thousands of failed lookups (ENOENT) are
# the traced program's business; its own stderr and exit status are not.
#---------------------------------------------------------------------------
if want strace; then
  apt_install strace gcc
  version strace bash -c 'strace -V | head -n 1'
  capture strace link-failure 'strace -f -e trace=file,process gcc -o app main.c'
fi

#---------------------------------------------------------------------------
# outputs of tools no family knows: no family may be named for them
#---------------------------------------------------------------------------
if want unknown; then
  apt_install tree
  version tree bash -c 'tree --version'
  stage unknown tree
  cp -a "$FIX/rspec/failures/." "$SCRATCH/unknown/tree/"
  run_capture unknown tree 'tree --charset utf-8 .'
fi

#---------------------------------------------------------------------------
# go test -v with a panic, a gradle multi-project build, a maven reactor
# built twice (failing, then fixed)
#---------------------------------------------------------------------------
if want go2; then
  have go || apt_install golang-go
  export GOPATH=$TOOLS/gopath GOCACHE=$TOOLS/gocache GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
  capture go test-panic 'go test -count=1 -v ./...'
fi
if want gradle2; then
  apt_install gradle junit4 libhamcrest-java
  GRADLE="gradle --offline --console=plain --no-daemon -g $TOOLS/gradle-home"
  capture gradle multi-project "$GRADLE build"
  $GRADLE --stop >/dev/null 2>&1 || true
fi
if want maven2; then
  apt_install maven libmaven-compiler-plugin-java libmaven-resources-plugin-java \
    libmaven-jar-plugin-java libsurefire-java junit4 maven-debian-helper
  if [ ! -f "$TOOLS/m2/.copied" ]; then
    rm -rf "$TOOLS/m2"
    cp -rL /usr/share/maven-repo "$TOOLS/m2"
    touch "$TOOLS/m2/.copied"
  fi
  MVN="mvn -o -B -Dmaven.repo.local=$TOOLS/m2"
  capture maven reactor "$MVN test; cp fix/Pricing.java core/src/main/java/com/example/Pricing.java && $MVN test"
fi
