//! The configuration file: defaults people want everywhere, for the runs
//! that take no flags (the shell wrappers and the agent hook run
//! `outbox -- CMD` as they were generated).
//!
//! `$OUTBOX_CONFIG`, else `$XDG_CONFIG_HOME/outbox/config.toml`, else
//! `~/.config/outbox/config.toml`. A missing file is no configuration.
//! Precedence, per setting: the command line, then the environment
//! (`OUTBOX_BUDGET`, ...), then the file, then the built-in default. clap
//! already resolves the first two and the last; a file value replaces a
//! value only when clap says it came from the default.
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

use crate::cli::{self, Cli, Command};

/// One setting the file may hold: its key, the clap argument it fills, and
/// the environment variable clap reads for it (None when it has none).
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

/// The file's settings, as text, with where they came from.
#[derive(Debug, Default)]
pub struct Config {
    pub path: Option<PathBuf>,
    values: Vec<(&'static str, String)>,
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
    /// Reads the file; a missing file is an empty configuration, a file
    /// that is not valid is an error naming the file and the key.
    pub fn load() -> Result<Config, String> {
        let Some(path) = path() else { return Ok(Config::default()) };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(format!("cannot read the configuration file {}: {e}", shown(&path))),
        };
        Config::parse(&text, path)
    }

    fn parse(text: &str, path: PathBuf) -> Result<Config, String> {
        let table: toml::Table = text.parse().map_err(|e| format!("{} is not valid TOML: {e}", shown(&path)))?;
        let mut values = Vec::new();
        for (key, value) in &table {
            let Some(setting) = SETTINGS.iter().find(|s| s.key == key) else {
                let known: Vec<&str> = SETTINGS.iter().map(|s| s.key).collect();
                return Err(format!("{}: unknown setting '{key}' (known: {})", shown(&path), known.join(", ")));
            };
            let text = match value {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => {
                    return Err(format!(
                        "{}: '{key}' must be a number, a string or true/false, not {}",
                        shown(&path),
                        other.type_str()
                    ))
                }
            };
            check(setting.key, &text).map_err(|e| format!("{}: {key} = {text}: {e}", shown(&path)))?;
            values.push((setting.key, text));
        }
        Ok(Config { path: Some(path), values })
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.values.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str())
    }

    /// Fills the settings the command line and the environment left at
    /// their defaults.
    pub fn apply(&self, cli: &mut Cli, matches: &ArgMatches) {
        let defaulted =
            |m: &ArgMatches, arg: &str| matches!(m.value_source(arg), None | Some(ValueSource::DefaultValue));
        let e = &mut cli.envelope;
        if let Some(v) = self.get("budget").filter(|_| defaulted(matches, "budget")) {
            e.budget = Some(cli::parse_budget(v).expect("checked when loaded"));
        }
        if let Some(v) = self.get("tail").filter(|_| defaulted(matches, "tail")) {
            e.tail = cli::parse_tail(v).expect("checked when loaded");
        }
        if let Some(v) = self.get("tail_budget").filter(|_| defaulted(matches, "tail_budget")) {
            e.tail_budget = v.parse().expect("checked when loaded");
        }
        if let Some(v) = self.get("head_budget").filter(|_| defaulted(matches, "head_budget")) {
            e.head_budget = v.parse().expect("checked when loaded");
        }
        if let Some(v) = self.get("signal").filter(|_| defaulted(matches, "signal")) {
            e.signal = Some(cli::parse_signal(v).expect("checked when loaded"));
        }
        if let Some(v) = self.get("harness").filter(|_| defaulted(matches, "harness")) {
            e.harness = Some(<cli::HarnessArg as clap::ValueEnum>::from_str(v, false).expect("checked when loaded"));
        }
        if let Some(v) = self.get("boundary").filter(|_| defaulted(matches, "boundary")) {
            e.boundary = Some(outbox::text::size::parse_size(v).expect("checked when loaded"));
        }
        if let Some(v) = self.get("mask").filter(|_| defaulted(matches, "mask")) {
            e.mask = cli::parse_mask(v).expect("checked when loaded");
        }
        if let Some(v) = self.get("commands") {
            match &mut cli.command {
                Some(Command::Init(a)) if sub_defaulted(matches, "init") => a.commands = v.to_string(),
                Some(Command::Hook(a)) if sub_defaulted(matches, "hook") => a.commands = v.to_string(),
                _ => {}
            }
        }
    }

    /// `outbox config`: every setting, its value in force and where that
    /// value came from.
    pub fn report(&self, matches: &ArgMatches, cli: &Cli) -> String {
        let mut out = format!(
            "configuration file: {}\n",
            match (&self.path, path()) {
                (Some(p), _) => shown(p),
                (None, Some(p)) => format!("{} (not present)", shown(&p)),
                (None, None) => "none (no $XDG_CONFIG_HOME or $HOME)".into(),
            }
        );
        for s in SETTINGS {
            let from_env = s.env.and_then(|v| std::env::var_os(v).map(|x| (v, x)));
            let given = matches.try_contains_id(s.arg).is_ok().then(|| matches.value_source(s.arg)).flatten();
            let (value, source) = match (given, from_env, self.get(s.key)) {
                (Some(ValueSource::CommandLine), _, _) => (None, "command line".to_string()),
                (_, Some((var, x)), _) => (Some(lossy(&x)), format!("environment ({var})")),
                (_, None, Some(v)) => (Some(v.to_string()), "file".to_string()),
                _ => (None, "default".to_string()),
            };
            let value = value.or_else(|| effective(cli, s.key)).unwrap_or_else(|| "(none)".into());
            out.push_str(&format!("{:<12} = {:<24} # {source}\n", s.key, value));
        }
        out
    }
}

/// The value in force for a setting, after every source was applied.
fn effective(cli: &Cli, key: &str) -> Option<String> {
    let e = &cli.envelope;
    let harness = e.harness.map_or(outbox::session::Harness::None, cli::HarnessArg::harness);
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
        "commands" => Some("default".to_string()),
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

/// Validates a file value with the command line's own parser.
fn check(key: &str, v: &str) -> Result<(), String> {
    match key {
        "budget" => cli::parse_budget(v).map(drop),
        "tail" => cli::parse_tail(v).map(drop),
        "tail_budget" | "head_budget" => v.parse::<usize>().map(drop).map_err(|_| format!("'{v}' is not a number")),
        "signal" => outbox::stream::signal::matcher(Some(v)).map(drop).map_err(|e| format!("not a valid regex: {e}")),
        "harness" => <cli::HarnessArg as clap::ValueEnum>::from_str(v, false)
            .map(drop)
            .map_err(|_| "use claude-code, codex, gemini or none".to_string()),
        "boundary" => outbox::text::size::parse_size(v).map(drop),
        "mask" => cli::parse_mask(v).map(drop),
        _ => Ok(()),
    }
}

fn lossy(s: &OsString) -> String {
    s.to_string_lossy().into_owned()
}

fn shown(p: &Path) -> String {
    outbox::text::sanitize::display_str(&p.to_string_lossy()).text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Config, String> {
        Config::parse(text, PathBuf::from("/x/config.toml"))
    }

    #[test]
    fn known_settings_are_read_and_checked() {
        let c = parsed("budget = 3000\ntail = 5\nsignal = 'oops'\ncommands = 'default,-ls'\n").unwrap();
        assert_eq!(c.get("budget"), Some("3000"));
        assert_eq!(c.get("tail"), Some("5"));
        assert_eq!(c.get("commands"), Some("default,-ls"));
    }

    #[test]
    fn bad_files_name_the_file_and_the_key() {
        let e = parsed("budget = 10\n").unwrap_err();
        assert!(e.contains("/x/config.toml") && e.contains("budget"), "{e}");
        let e = parsed("bugdet = 3000\n").unwrap_err();
        assert!(e.contains("unknown setting 'bugdet'"), "{e}");
        let e = parsed("signal = '('\n").unwrap_err();
        assert!(e.contains("signal"), "{e}");
        assert!(parsed("budget = [1]\n").is_err());
        assert!(parsed("budget = \n").is_err());
    }
}
