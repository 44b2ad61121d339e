//! The family file format (TOML) and where family files come from: the
//! shipped ones, embedded at build time, then the user's
//! (`$XDG_CONFIG_HOME/outbox/families/*.toml`, else
//! `~/.config/outbox/families`; a relative `XDG_CONFIG_HOME` is ignored, as
//! the XDG spec says), which add families or replace a shipped one of the
//! same name. A replacement is said once on stderr (unless the file says
//! `replaces = "NAME"`, which makes it deliberate) and always in `outbox
//! config`. A user file that does not parse, whose patterns do not compile,
//! or that is not a regular file (a FIFO would block every run; it is
//! opened without blocking and refused) is reported once on stderr and
//! ignored: a typo in a personal file must never stop a build log from
//! being kept. So is a file that loads alone but makes the families too
//! large together (`session::family` drops it and names it).
//!
//! ```toml
//! name = "pytest"
//! commands = ["pytest", "python -m pytest"]   # wrap-mode hint
//! detect = ['^=+ test session starts =+$']   # evidence, counted over the whole stream
//! location = '(?P<file>[\w./-]+\.py):(?P<line>\d+)'
//! location_skip = ['/site-packages/']         # locations passed over
//! success = ['\b0 failed\b']                  # spans that are not signals
//! run_start = ['^=+ test session starts =+$'] # a new run: earlier verdicts give way
//! lead = ['^\S+: In function ']              # a line just before a signal, shown with it
//! passing = ['^test .+ \.\.\. ok$']           # a passing test's line: runs of them fold into a count
//! block = { until = "blank", max_lines = 8, max_chars = 600 }
//!   # until: indent, deeper (lines indented more than the signal line),
//!   # blank, location, traceback, none; next (every line
//!   # up to the next signal line); same (the next lines the same pattern
//!   # matches: npm's `npm error` block is one signal)
//!
//! [[signal]]
//! severity = "error"                          # or "warning"
//! pattern = '^E\s{3}(?:\s*(?P<kind>\w+Error):)?'  # `kind`: the line's kind (else its template)
//! block = { until = "location" }              # optional, per pattern
//!
//! [[verdict]]
//! pattern = '(?P<failed>\d+) failed'
//! merge = "sum"        # lines of one run add up; "last" (default) overwrites
//! ends_run = true      # the next verdict line begins a new run (the verdict is the last run's)
//! quote = true         # the line is quoted in the summary
//! status = "failed"    # fixed; else the `status` capture; else from the counts
//! tally = "failed"     # optional: each such line adds 1 to this count
//! ```

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;

/// One family, as written in its file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilySpec {
    pub name: String,
    /// In a user file: the shipped family it replaces on purpose (it must
    /// be `name`); a replacement without it is said on stderr.
    #[serde(default)]
    pub replaces: Option<String>,
    /// The user file it came from; None for a shipped family.
    #[serde(skip)]
    pub source: Option<PathBuf>,
    #[serde(default)]
    pub description: String,
    /// Applies whatever family is detected (log levels, crashes); never
    /// detected itself.
    #[serde(default)]
    pub generic: bool,
    /// Command names (`argv[0]` basename, optionally followed by the first
    /// arguments: `python -m pytest`, `go test`) that hint at this family.
    #[serde(default)]
    pub commands: Vec<String>,
    /// How much a matching command counts, in evidence lines (default 20;
    /// wrappers such as npm that run other tools give 1).
    #[serde(default)]
    pub hint_weight: Option<u64>,
    #[serde(default)]
    pub detect: Vec<String>,
    #[serde(default)]
    pub success: Vec<String>,
    /// Lines that begin a new run of the tool (a second pytest session, a
    /// second maven build in one log): the verdict is the last run's, so
    /// the counts of the runs before it give way at its first verdict line.
    /// A run start is evidence, as detection lines are.
    #[serde(default)]
    pub run_start: Vec<String>,
    /// Lines that, found right before one of the family's signal lines,
    /// belong to it and are shown before it (gcc's `In function 'f':`, the
    /// file header of ESLint's stylish format). A `file` capture is carried
    /// to the signal lines that follow, until the next lead line: their
    /// location gets that file when their own has none (`63:28`).
    #[serde(default)]
    pub lead: Vec<String>,
    /// Lines that report a passing test (`test x ... ok`, `✓ name`, `---
    /// PASS: TestX`): in the envelope's head and tail, a run of them folds
    /// into one counted marker whatever their names, so a verbose run's
    /// passing names do not take the room its failures need.
    #[serde(default)]
    pub passing: Vec<String>,
    #[serde(default)]
    pub location: Option<String>,
    /// Locations whose file matches one of these are passed over for the
    /// next one (a Go panic's frames in the runtime and `testing`, before
    /// the user's own).
    #[serde(default)]
    pub location_skip: Vec<String>,
    #[serde(default)]
    pub block: Option<BlockSpec>,
    #[serde(default)]
    pub signal: Vec<SignalSpec>,
    #[serde(default)]
    pub verdict: Vec<VerdictSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalSpec {
    pub severity: String,
    pub pattern: String,
    #[serde(default)]
    pub block: Option<BlockSpec>,
}

/// Which lines after a signal line belong to it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockSpec {
    /// `indent`: indented lines; `deeper`: lines indented more than the
    /// signal line; `blank`: up to a blank line; `location`:
    /// up to and including a line with a location; `traceback`: indented
    /// lines and the first line after them; `none`.
    #[serde(default)]
    pub until: Option<String>,
    #[serde(default)]
    pub max_lines: Option<usize>,
    #[serde(default)]
    pub max_chars: Option<usize>,
    /// `first` (default) or `last` location in the signal line and block.
    #[serde(default)]
    pub pick: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictSpec {
    pub pattern: String,
    #[serde(default)]
    pub merge: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub tally: Option<String>,
    /// The line ends a run of the tool (pytest's summary, maven's `BUILD
    /// SUCCESS`): the next verdict line begins a new run.
    #[serde(default)]
    pub ends_run: bool,
    /// The line itself is quoted in the summary (apt's `4 upgraded, 81
    /// newly installed, ...`), the latest one of the last run.
    #[serde(default)]
    pub quote: bool,
}

/// The shipped families, in priority order (an earlier one wins a tie).
pub const EMBEDDED: &[(&str, &str)] = &[
    ("cargo", include_str!("../../families/cargo.toml")),
    ("go", include_str!("../../families/go.toml")),
    ("pytest", include_str!("../../families/pytest.toml")),
    ("unittest", include_str!("../../families/unittest.toml")),
    ("jest", include_str!("../../families/jest.toml")),
    ("vitest", include_str!("../../families/vitest.toml")),
    ("tsc", include_str!("../../families/tsc.toml")),
    ("eslint", include_str!("../../families/eslint.toml")),
    ("gcc", include_str!("../../families/gcc.toml")),
    ("maven", include_str!("../../families/maven.toml")),
    ("gradle", include_str!("../../families/gradle.toml")),
    ("javac", include_str!("../../families/javac.toml")),
    ("npm", include_str!("../../families/npm.toml")),
    ("pnpm", include_str!("../../families/pnpm.toml")),
    ("docker", include_str!("../../families/docker.toml")),
    ("dotnet", include_str!("../../families/dotnet.toml")),
    ("rubocop", include_str!("../../families/rubocop.toml")),
    ("terraform", include_str!("../../families/terraform.toml")),
    ("tap", include_str!("../../families/tap.toml")),
    ("mocha", include_str!("../../families/mocha.toml")),
    ("rspec", include_str!("../../families/rspec.toml")),
    ("testunit", include_str!("../../families/testunit.toml")),
    ("minitest", include_str!("../../families/minitest.toml")),
    ("ansible", include_str!("../../families/ansible.toml")),
    ("pylint", include_str!("../../families/pylint.toml")),
    ("flake8", include_str!("../../families/flake8.toml")),
    ("ruff", include_str!("../../families/ruff.toml")),
    ("mypy", include_str!("../../families/mypy.toml")),
    ("black", include_str!("../../families/black.toml")),
    ("shellcheck", include_str!("../../families/shellcheck.toml")),
    ("yamllint", include_str!("../../families/yamllint.toml")),
    ("prettier", include_str!("../../families/prettier.toml")),
    ("pip", include_str!("../../families/pip.toml")),
    ("apt", include_str!("../../families/apt.toml")),
    ("strace", include_str!("../../families/strace.toml")),
    ("vite", include_str!("../../families/vite.toml")),
    ("logs", include_str!("../../families/logs.toml")),
    ("crash", include_str!("../../families/crash.toml")),
];

/// Parses one family file and checks that its patterns compile.
pub fn parse(text: &str) -> Result<FamilySpec, String> {
    parse_checked(text, true)
}

/// Parses one family file; `check` compiles each pattern alone (the shipped
/// files skip it at run time: the test suite compiles them, and compiling a
/// few hundred patterns would slow every start).
fn parse_checked(text: &str, check: bool) -> Result<FamilySpec, String> {
    let spec: FamilySpec = toml::from_str(text).map_err(|e| e.to_string())?;
    if spec.name.is_empty() || spec.name == "none" || spec.name == "auto" {
        return Err(format!("'{}' cannot be a family name", spec.name));
    }
    if spec.replaces.as_ref().is_some_and(|r| *r != spec.name) {
        return Err(format!("replaces = {:?} must be the file's own name ({:?})", spec.replaces, spec.name));
    }
    for p in spec.patterns().filter(|_| check) {
        super::classify::compile_one(p).map_err(|e| format!("pattern {p:?}: {e}"))?;
    }
    for s in &spec.signal {
        super::classify::Severity::parse(&s.severity)?;
    }
    Ok(spec)
}

impl FamilySpec {
    /// Every pattern of the family.
    pub fn patterns(&self) -> impl Iterator<Item = &String> {
        self.detect
            .iter()
            .chain(&self.success)
            .chain(&self.run_start)
            .chain(&self.lead)
            .chain(&self.passing)
            .chain(self.location.iter())
            .chain(&self.location_skip)
            .chain(self.signal.iter().map(|s| &s.pattern))
            .chain(self.verdict.iter().map(|v| &v.pattern))
    }
}

/// The shipped families (parsed once; a broken shipped file is a bug the
/// test suite catches, so it panics).
pub fn embedded() -> Vec<FamilySpec> {
    EMBEDDED.iter().map(|(n, t)| parse_checked(t, false).unwrap_or_else(|e| panic!("families/{n}.toml: {e}"))).collect()
}

/// The user's family directory, if any: `$XDG_CONFIG_HOME/outbox/families`
/// when that is an absolute path (a relative one is ignored: it would load
/// families from whatever directory a command runs in), else
/// `~/.config/outbox/families`.
pub fn user_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| Path::new(v).is_absolute()) {
        Some(x) => PathBuf::from(x),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".config"),
    };
    Some(base.join("outbox").join("families"))
}

/// A family file is a few KiB; a larger one is not read.
pub const USER_FILE_MAX: u64 = 1 << 20;

/// What loading the families found.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// Shipped families with the user's merged in.
    pub specs: Vec<FamilySpec>,
    /// User files ignored, one message each (names the file and why).
    pub problems: Vec<String>,
    /// User files that replace a shipped family: (file, family, deliberate).
    pub overrides: Vec<(PathBuf, String, bool)>,
}

impl Loaded {
    /// The messages for stderr: problems, and replacements not marked
    /// deliberate.
    pub fn messages(&self) -> Vec<String> {
        let replaced = self.overrides.iter().filter(|o| !o.2).map(|(p, name, _)| {
            format!(
                "the family file {} replaces the shipped family '{name}' (add replaces = \"{name}\" to it to say that \
                 is meant)",
                shown(p)
            )
        });
        self.problems.iter().cloned().chain(replaced).collect()
    }
}

/// Shipped families with the user's files in `dir` merged in; each problem
/// with a user file is a message and that file is ignored.
pub fn load_from(dir: Option<&Path>) -> Loaded {
    let mut out = Loaded { specs: embedded(), ..Loaded::default() };
    let Some(dir) = dir else { return out };
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    let mut paths: Vec<PathBuf> =
        rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    paths.sort();
    let how = crate::text::file::Untrusted { cap: USER_FILE_MAX, follow: true };
    for p in paths {
        let parsed =
            crate::text::file::read_to_string(None, &p, how).map_err(|e| e.to_string()).and_then(|t| parse(&t));
        match parsed {
            Ok(mut spec) => {
                spec.source = Some(p.clone());
                match out.specs.iter_mut().find(|f| f.name == spec.name) {
                    Some(slot) => {
                        if slot.source.is_none() {
                            out.overrides.push((p, spec.name.clone(), spec.replaces.is_some()));
                        }
                        *slot = spec;
                    }
                    None => {
                        // A user family goes before the generic ones, so it
                        // wins ties against nothing shipped but keeps
                        // generic last.
                        let at = out.specs.iter().position(|f| f.generic).unwrap_or(out.specs.len());
                        out.specs.insert(at, spec);
                    }
                }
            }
            Err(e) => out.problems.push(format!("ignoring the family file {}: {}", shown(&p), shown_text(&e))),
        }
    }
    out
}

/// Every family this process uses, loaded once; problems with user files
/// and unannounced replacements are reported on stderr once.
pub fn load_all() -> &'static [FamilySpec] {
    static ALL: OnceLock<Vec<FamilySpec>> = OnceLock::new();
    ALL.get_or_init(|| {
        let loaded = load_from(user_dir().as_deref());
        for m in loaded.messages() {
            crate::text::stderr::say(format_args!("{m}"));
        }
        loaded.specs
    })
}

/// A path in a message, escaped.
pub fn shown(p: &Path) -> String {
    shown_text(&p.to_string_lossy())
}

/// Untrusted text in a message (a TOML error quotes the file), escaped.
fn shown_text(s: &str) -> String {
    crate::text::sanitize::display_str(s).text
}
