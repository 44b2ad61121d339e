//! Settings from the environment and the configuration file: defaults
//! people want everywhere, for the runs that take no flags (the shell
//! wrappers and the agent hook run `outbox -- CMD` as they were generated).
//!
//! `$OUTBOX_CONFIG`, else `$XDG_CONFIG_HOME/outbox/config.toml`, else
//! `~/.config/outbox/config.toml`. A missing file is no configuration.
//! Precedence, per setting: the command line, then the environment
//! (`OUTBOX_BUDGET`, ...), then the file, then the built-in default. clap
//! reads only the command line; this module fills what it left at its
//! default.
//!
//! A mistake here never costs output: a value the flag would refuse, an
//! unknown key, a file that is not TOML or cannot be read is said once on
//! stderr (where, which key, and the value used instead) and the setting
//! falls to the next source, down to the default. Only a bad command-line
//! option is a usage error (exit 2): a typo in a file must not make every
//! pipe lose its output, stop a wrapped command, or make the agent hook
//! deny every command (Claude Code reads exit 2 as "deny").
//!
//! ```toml
//! budget = 3000          # --budget
//! tail = 30              # --tail
//! tail_budget = 3000     # --tail-budget
//! head_budget = 1000     # --head-budget
//! signal = "(?i)oops"    # --signal
//! commands = "default,-ls,make"   # what `outbox init` and `outbox hook` wrap
//! mask = false           # --mask off: print credentials as they are
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::ArgMatches;
use regex::bytes::Regex;

use crate::cli::{self, Cli, Command, HarnessArg};

/// One setting: its key in the file, the clap argument it fills, and the
/// environment variable that sets it (None when it has none).
struct Setting {
    key: &'static str,
    arg: &'static str,
    env: Option<&'static str>,
}

const SETTINGS: &[Setting] = &[
    Setting { key: "budget", arg: "budget", env: Some("OUTBOX_BUDGET") },
    Setting { key: "tail", arg: "tail", env: Some("OUTBOX_TAIL") },
    Setting { key: "tail_budget", arg: "tail_budget", env: Some("OUTBOX_TAIL_BUDGET") },
    Setting { key: "head_budget", arg: "head_budget", env: Some("OUTBOX_HEAD_BUDGET") },
    Setting { key: "signal", arg: "signal", env: Some("OUTBOX_SIGNAL") },
    Setting { key: "harness", arg: "harness", env: Some("OUTBOX_HARNESS") },
    Setting { key: "boundary", arg: "boundary", env: Some("OUTBOX_BOUNDARY") },
    Setting { key: "commands", arg: "commands", env: None },
    Setting { key: "mask", arg: "mask", env: Some("OUTBOX_MASK") },
];

/// Largest configuration file read (a real one is a few hundred bytes).
const MAX_FILE: u64 = 1 << 20;

/// Where a value in force came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    CommandLine,
    Env(&'static str),
    File,
    Default,
}

impl Source {
    fn said(self) -> String {
        match self {
            Source::CommandLine => "from the command line".into(),
            Source::Env(var) => format!("from {var}"),
            Source::File => "from the file".into(),
            Source::Default => "the default".into(),
        }
    }
}

/// A setting that could not be used: where it was, which key, what is
/// wrong. Said once, after every source was applied, with the value used
/// instead.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Problem {
    place: String,
    key: Option<&'static str>,
    what: String,
}

/// The file's settings, as text, and what was wrong with the file.
#[derive(Debug, Default)]
pub struct Config {
    pub path: Option<PathBuf>,
    values: Vec<(&'static str, String)>,
    problems: Vec<Problem>,
    /// After [`Config::apply`]: where each setting's value came from.
    sources: Vec<(&'static str, Source)>,
}

/// A setting's value, parsed by the command line's own parser.
enum Parsed {
    Budget(usize),
    Tail(usize),
    TailBudget(usize),
    HeadBudget(usize),
    Signal(Regex),
    Harness(HarnessArg),
    Boundary(u64),
    Commands(String),
    Mask(cli::MaskArg),
}

/// Where the configuration file is looked for.
pub fn path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("OUTBOX_CONFIG").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| Path::new(p).is_absolute())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("outbox").join("config.toml"))
}

impl Config {
    /// Reads the file. A missing file is an empty configuration; a file
    /// that cannot be read or is not TOML is an empty configuration with a
    /// problem to say. Never fails.
    pub fn load() -> Config {
        let Some(path) = path() else { return Config::default() };
        match read(&path) {
            Ok(None) => Config::default(),
            Ok(Some(text)) => Config::parse(&text, path),
            Err(e) => {
                let place = shown(&path);
                Config {
                    path: Some(path),
                    problems: vec![Problem { place, key: None, what: format!("{e}; the file is ignored") }],
                    ..Config::default()
                }
            }
        }
    }

    fn parse(text: &str, path: PathBuf) -> Config {
        let place = shown(&path);
        let mut config = Config { path: Some(path), ..Config::default() };
        let table: toml::Table = match text.parse() {
            Ok(t) => t,
            Err(e) => {
                let what = format!("not valid TOML ({}); the file is ignored", e.to_string().trim());
                config.problems.push(Problem { place, key: None, what });
                return config;
            }
        };
        for (key, value) in &table {
            let Some(setting) = SETTINGS.iter().find(|s| s.key == key) else {
                let what = match nearest(key) {
                    Some(k) => format!("unknown setting '{key}', ignored (did you mean '{k}'?)"),
                    None => {
                        let known: Vec<&str> = SETTINGS.iter().map(|s| s.key).collect();
                        format!("unknown setting '{key}', ignored (known: {})", known.join(", "))
                    }
                };
                config.problems.push(Problem { place: place.clone(), key: nearest(key), what });
                continue;
            };
            match value {
                toml::Value::String(s) => config.values.push((setting.key, s.clone())),
                toml::Value::Integer(n) => config.values.push((setting.key, n.to_string())),
                toml::Value::Boolean(b) if setting.key == "mask" => config.values.push((setting.key, b.to_string())),
                other => config.problems.push(Problem {
                    place: place.clone(),
                    key: Some(setting.key),
                    what: format!("'{key}' must be a number or a string, not {}", other.type_str()),
                }),
            }
        }
        config
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.values.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str())
    }

    /// Fills the settings the command line left at their defaults, from the
    /// environment, else the file. A value that does not parse is a
    /// problem (said by [`Config::warn`]) and the next source is used.
    pub fn apply(&mut self, cli: &mut Cli, matches: &ArgMatches) {
        self.apply_with(cli, matches, |var| std::env::var_os(var));
    }

    fn apply_with(&mut self, cli: &mut Cli, matches: &ArgMatches, env: impl Fn(&str) -> Option<OsString>) {
        for s in SETTINGS {
            let mut source = if given(matches, s) { Some(Source::CommandLine) } else { None };
            let from_env = s.env.and_then(|var| env(var).filter(|v| !v.is_empty()).map(|v| (var, v)));
            if let Some((var, raw)) = from_env {
                let text = raw.to_string_lossy();
                match parse(s.key, &text) {
                    Ok(p) if source.is_none() => {
                        assign(cli, matches, p);
                        source = Some(Source::Env(var));
                    }
                    Ok(_) => {}
                    Err(e) => self.problems.push(Problem {
                        place: format!("{var}={}", shown_value(&text)),
                        key: Some(s.key),
                        what: e,
                    }),
                }
            }
            if let Some(text) = self.get(s.key).map(str::to_string) {
                match parse(s.key, &text) {
                    Ok(p) if source.is_none() => {
                        assign(cli, matches, p);
                        source = Some(Source::File);
                    }
                    Ok(_) => {}
                    Err(e) => self.problems.push(Problem {
                        place: self.path.as_deref().map(shown).unwrap_or_default(),
                        key: Some(s.key),
                        what: format!("{} = {}: {e}", s.key, shown_value(&text)),
                    }),
                }
            }
            self.sources.push((s.key, source.unwrap_or(Source::Default)));
        }
    }

    fn source(&self, key: &str) -> Source {
        self.sources.iter().find(|(k, _)| *k == key).map_or(Source::Default, |(_, s)| *s)
    }

    /// The problems found, one line each, with the value used instead.
    pub fn warnings(&self, cli: &Cli) -> Vec<String> {
        self.problems
            .iter()
            .map(|p| {
                let instead = p.key.map(|k| {
                    let value = effective(cli, k).unwrap_or_else(|| "(none)".into());
                    format!("; using {k} = {value} ({})", self.source(k).said())
                });
                let line = format!("warning: {}: {}{}", p.place, p.what, instead.unwrap_or_default());
                outbox::text::sanitize::display_str(&line).text
            })
            .collect()
    }

    /// Whether any setting could not be used.
    pub fn has_problems(&self) -> bool {
        !self.problems.is_empty()
    }

    /// Says each problem once on stderr.
    pub fn warn(&self, cli: &Cli) {
        for w in self.warnings(cli) {
            outbox::say!("{w}");
        }
    }

    /// `outbox config`: every setting, its value in force and where that
    /// value came from.
    pub fn report(&self, cli: &Cli) -> String {
        let mut out = format!(
            "configuration file: {}\n",
            match (&self.path, path()) {
                (Some(p), _) => shown(p),
                (None, Some(p)) => format!("{} (not present)", shown(&p)),
                (None, None) => "none (no $XDG_CONFIG_HOME or $HOME)".into(),
            }
        );
        for s in SETTINGS {
            let source = match self.source(s.key) {
                Source::CommandLine => "command line".to_string(),
                Source::Env(var) => format!("environment ({var})"),
                Source::File => "file".to_string(),
                Source::Default => "default".to_string(),
            };
            let value = match (self.source(s.key), s.key) {
                (Source::File, "commands") => self.get("commands").map(str::to_string),
                _ => effective(cli, s.key),
            };
            let value = shown_value(&value.unwrap_or_else(|| "(none)".into()));
            out.push_str(&format!("{:<12} = {:<24} # {source}\n", s.key, value));
        }
        out.push_str(&families_report());
        out
    }
}

/// `outbox config`'s lines on family files: where they are looked for,
/// which were loaded, which replace a shipped family, which are ignored.
fn families_report() -> String {
    use outbox::family::spec;
    let Some(dir) = spec::user_dir() else { return "family files: none (no $XDG_CONFIG_HOME or $HOME)\n".into() };
    let loaded = spec::load_from(Some(&dir));
    let users: Vec<String> = loaded
        .specs
        .iter()
        .filter_map(|f| f.source.as_deref())
        .map(|p| shown(Path::new(p.file_name().unwrap_or_default())))
        .collect();
    let mut out = format!(
        "family files: {}{}\n",
        shown(&dir),
        if users.is_empty() { " (none loaded)".to_string() } else { format!(" (loaded: {})", users.join(", ")) }
    );
    for (path, name, deliberate) in &loaded.overrides {
        let how = if *deliberate { format!(" (replaces = \"{name}\")") } else { String::new() };
        out.push_str(&format!("  {} replaces the shipped family '{name}'{how}\n", shown(path)));
    }
    for p in &loaded.problems {
        out.push_str(&format!("  {p}\n"));
    }
    out
}

/// What is wrong with the store's variables, one line each with the value
/// used instead (the store falls back to its defaults by itself).
pub fn store_warnings(store: &outbox::store::StoreEnv, env: impl Fn(&str) -> Option<OsString>) -> Vec<String> {
    use outbox::store::{DEFAULT_MAX_STORE_BYTES, DEFAULT_TTL_SECONDS};
    let mut out = Vec::new();
    if let Some(v) = env("OUTBOX_TTL_SECONDS").filter(|v| !v.is_empty()) {
        let v = v.to_string_lossy();
        if v.trim().parse::<u64>().is_err() {
            out.push(format!(
                "OUTBOX_TTL_SECONDS={}: not a whole number of seconds; using {DEFAULT_TTL_SECONDS} (the default)",
                shown_value(&v)
            ));
        }
    }
    if let Err(e) = &store.max_bytes {
        out.push(format!("{e}; using {} MiB (the default cap)", DEFAULT_MAX_STORE_BYTES >> 20));
    }
    if let Err(e) = &store.min_free_bytes {
        out.push(format!("{e}; using the default (1 GiB or 5% of the filesystem, whichever is more)"));
    }
    out.into_iter().map(|w| outbox::text::sanitize::display_str(&format!("warning: {w}")).text).collect()
}

/// Whether the command line gave this setting.
fn given(matches: &ArgMatches, s: &Setting) -> bool {
    if s.key == "commands" {
        return ["init", "hook"].iter().any(|sub| !sub_defaulted(matches, sub));
    }
    matches.try_contains_id(s.arg).is_ok() && matches.value_source(s.arg) == Some(ValueSource::CommandLine)
}

/// Parses a value with the command line's own parser.
fn parse(key: &str, v: &str) -> Result<Parsed, String> {
    let count = |v: &str| v.trim().parse::<usize>().map_err(|_| format!("'{v}' is not a number"));
    Ok(match key {
        "budget" => Parsed::Budget(cli::parse_budget(v)?),
        "tail" => Parsed::Tail(cli::parse_tail(v)?),
        "tail_budget" => Parsed::TailBudget(count(v)?),
        "head_budget" => Parsed::HeadBudget(count(v)?),
        "signal" => {
            Parsed::Signal(outbox::stream::signal::matcher(Some(v)).map_err(|e| format!("not a valid regex: {e}"))?)
        }
        "harness" => Parsed::Harness(
            <HarnessArg as clap::ValueEnum>::from_str(v.trim(), false)
                .map_err(|_| format!("'{v}' is not a harness: use claude-code, codex, gemini or none"))?,
        ),
        "boundary" => Parsed::Boundary(outbox::text::size::parse_size(v)?),
        "commands" => {
            crate::integrate::shell::parse_commands(v)?;
            Parsed::Commands(v.to_string())
        }
        "mask" => Parsed::Mask(cli::parse_mask(v)?),
        _ => return Err(format!("unknown setting '{key}'")),
    })
}

fn assign(cli: &mut Cli, matches: &ArgMatches, p: Parsed) {
    let e = &mut cli.envelope;
    match p {
        Parsed::Budget(n) => e.budget = Some(n),
        Parsed::Tail(n) => e.tail = n,
        Parsed::TailBudget(n) => e.tail_budget = n,
        Parsed::HeadBudget(n) => e.head_budget = n,
        Parsed::Signal(r) => e.signal = Some(r),
        Parsed::Harness(h) => e.harness = Some(h),
        Parsed::Boundary(b) => e.boundary = Some(b),
        Parsed::Mask(m) => e.mask = m,
        Parsed::Commands(v) => match &mut cli.command {
            Some(Command::Init(a)) if sub_defaulted(matches, "init") => a.commands = v,
            Some(Command::Hook(a)) if sub_defaulted(matches, "hook") => a.commands = v,
            _ => {}
        },
    }
}

/// The value in force for a setting, after every source was applied.
fn effective(cli: &Cli, key: &str) -> Option<String> {
    let e = &cli.envelope;
    let harness = e.harness.map_or(outbox::session::Harness::None, HarnessArg::harness);
    match key {
        "budget" => Some(e.budget.or(harness.budget()).unwrap_or(cli::DEFAULT_RUN_BUDGET).to_string()),
        "tail" => Some(e.tail.to_string()),
        "tail_budget" => Some(e.tail_budget.to_string()),
        "head_budget" => Some(e.head_budget.to_string()),
        "signal" => e.signal.as_ref().map(|r| r.as_str().to_string()),
        "harness" => Some(harness.name().to_string()),
        "boundary" => e.boundary.map(|b| b.to_string()).or_else(|| {
            Some(match harness.boundary() {
                Some((n, unit)) => format!("{n} {}", unit.name()),
                None => "the budget".to_string(),
            })
        }),
        "commands" => Some(match &cli.command {
            Some(Command::Init(a)) => a.commands.clone(),
            Some(Command::Hook(a)) => a.commands.clone(),
            _ => "default".to_string(),
        }),
        "mask" => Some(if e.mask == cli::MaskArg::On { "on" } else { "off" }.to_string()),
        _ => None,
    }
}

/// Whether a subcommand's `--commands` was left at its default.
fn sub_defaulted(matches: &ArgMatches, sub: &str) -> bool {
    matches
        .subcommand_matches(sub)
        .is_none_or(|m| matches!(m.value_source("commands"), None | Some(ValueSource::DefaultValue)))
}

/// The known key nearest to a misspelt one (`tial` → `tail`), if any is
/// near: at most two edits, or one for short keys.
fn nearest(key: &str) -> Option<&'static str> {
    nearest_word(key, SETTINGS.iter().map(|s| s.key))
}

/// The word of `known` nearest to `word`, if one is near: at most two
/// edits, or one for words of four letters or fewer.
pub fn nearest_word<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = if word.chars().count() <= 4 { 1 } else { 2 };
    known
        .into_iter()
        .map(|k| (edits(&word.to_ascii_lowercase(), k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Optimal string alignment distance: insertions, deletions,
/// substitutions and swaps of neighbours each count one (so `tial` is one
/// edit from `tail`).
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// The file's text; `Ok(None)` when there is none. Only a regular file is
/// read, opened without blocking (a FIFO named config.toml would hang
/// every run), and at most [`MAX_FILE`] bytes of it.
fn read(path: &Path) -> Result<Option<String>, String> {
    // `OUTBOX_CONFIG=/dev/null`: the usual way to say "no configuration".
    if path == Path::new("/dev/null") {
        return Ok(None);
    }
    // Never blocking on a FIFO, never reading a device or a huge file
    // (the one way outbox reads a file it does not own).
    let how = outbox::text::file::Untrusted { cap: MAX_FILE, follow: true };
    let bytes = match outbox::text::file::read(None, path, how) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    String::from_utf8(bytes).map(Some).map_err(|_| "not UTF-8 text".to_string())
}

fn shown(p: &Path) -> String {
    outbox::text::sanitize::display_str(&p.to_string_lossy()).text
}

/// A value as said back: escaped, and shortened when long.
fn shown_value(v: &str) -> String {
    let v = outbox::text::sanitize::display_str(v).text;
    match v.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &v[..i]),
        None => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Config {
        Config::parse(text, PathBuf::from("/x/config.toml"))
    }

    /// The configuration applied over `args`, with `env` as the
    /// environment: the resulting command line and the warnings said.
    fn applied(text: &str, env: &[(&str, &str)], args: &[&str]) -> (Cli, Vec<String>) {
        let argv = std::iter::once("outbox").chain(args.iter().copied()).map(OsString::from);
        let (mut cli, matches) = crate::app::parse(argv).unwrap();
        let mut c = parsed(text);
        let env: Vec<(String, OsString)> = env.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        c.apply_with(&mut cli, &matches, |k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()));
        let warnings = c.warnings(&cli);
        (cli, warnings)
    }

    #[test]
    fn known_settings_are_read() {
        let c = parsed("budget = 3000\ntail = 5\nsignal = 'oops'\ncommands = 'default,-ls'\n");
        assert_eq!(c.get("budget"), Some("3000"));
        assert_eq!(c.get("tail"), Some("5"));
        assert_eq!(c.get("commands"), Some("default,-ls"));
        assert!(c.problems.is_empty());
    }

    #[test]
    fn a_bad_value_in_the_file_is_said_and_the_default_used() {
        let (cli, w) = applied("budget = 10\ntail = 7\n", &[], &[]);
        assert_eq!(cli.envelope.budget, None);
        assert_eq!(cli.envelope.tail, 7, "the file's other settings still apply");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("/x/config.toml") && w[0].contains("budget = 10"), "{w:?}");
        assert!(w[0].ends_with("using budget = 14000 (the default)"), "{w:?}");
    }

    #[test]
    fn an_unknown_key_is_said_with_the_nearest_known_one() {
        let (cli, w) = applied("tial = 30\n", &[], &[]);
        assert_eq!(cli.envelope.tail, outbox::stream::defaults::TAIL_LINES);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("unknown setting 'tial', ignored (did you mean 'tail'?)"), "{w:?}");
        assert!(w[0].ends_with("using tail = 20 (the default)"), "{w:?}");
        let (_, w) = applied("colour = 'red'\n", &[], &[]);
        assert!(w[0].contains("known: budget, tail"), "{w:?}");
    }

    #[test]
    fn a_file_that_is_not_toml_is_ignored_whole() {
        let (cli, w) = applied("budget = 3000\ntail = \n", &[], &[]);
        assert_eq!(cli.envelope.budget, None);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("not valid TOML") && w[0].contains("the file is ignored"), "{w:?}");
        let (_, w) = applied("budget = [1]\n", &[], &[]);
        assert!(w[0].contains("must be a number or a string, not array"), "{w:?}");
    }

    #[test]
    fn a_bad_variable_falls_to_the_file_then_the_default() {
        let (cli, w) = applied("", &[("OUTBOX_BUDGET", "lots")], &[]);
        assert_eq!(cli.envelope.budget, None);
        assert!(w[0].starts_with("warning: OUTBOX_BUDGET=lots: 'lots' is not a size"), "{w:?}");
        assert!(w[0].ends_with("using budget = 14000 (the default)"), "{w:?}");
        let (cli, w) = applied("budget = 3000\n", &[("OUTBOX_BUDGET", "lots")], &[]);
        assert_eq!(cli.envelope.budget, Some(3000));
        assert!(w[0].ends_with("using budget = 3000 (from the file)"), "{w:?}");
        let (cli, w) = applied("", &[("OUTBOX_TAIL", "x"), ("OUTBOX_SIGNAL", "("), ("OUTBOX_HARNESS", "vim")], &[]);
        assert_eq!((cli.envelope.tail, cli.envelope.signal.is_none(), cli.envelope.harness), (20, true, None));
        assert_eq!(w.len(), 3, "{w:?}");
    }

    #[test]
    fn the_command_line_beats_the_environment_beats_the_file() {
        let (cli, w) = applied("budget = 3000\n", &[("OUTBOX_BUDGET", "5000")], &[]);
        assert_eq!((cli.envelope.budget, w.len()), (Some(5000), 0));
        let (cli, _) = applied("budget = 3000\n", &[("OUTBOX_BUDGET", "5000")], &["--budget", "2000"]);
        assert_eq!(cli.envelope.budget, Some(2000));
        // Overridden but broken: still said, so the file gets mended.
        let (cli, w) = applied("budget = 10\n", &[], &["--budget", "2000"]);
        assert_eq!(cli.envelope.budget, Some(2000));
        assert!(w[0].ends_with("using budget = 2000 (from the command line)"), "{w:?}");
    }

    #[test]
    fn warnings_are_escaped() {
        let (_, w) = applied("", &[("OUTBOX_BUDGET", "\x1b]52;c;x\x07")], &[]);
        assert!(!w[0].contains('\x1b') && !w[0].contains('\x07'), "{w:?}");
    }

    #[test]
    fn misspellings() {
        assert_eq!(nearest("tial"), Some("tail"));
        assert_eq!(nearest("bugdet"), Some("budget"));
        assert_eq!(nearest("head_budegt"), Some("head_budget"));
        assert_eq!(nearest("colour"), None);
    }
}
