//! Dispatch: parse the command line once, apply the configuration file,
//! run one mode, map the result to an exit status. Errors are printed
//! here, once, as `outbox: error: …` with their causes.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::ArgMatches;

use crate::cli::{Cli, Command};
use crate::config::Config;

pub fn main() -> ExitCode {
    // args_os: arguments that are not UTF-8 must not panic.
    let args: Vec<OsString> = std::env::args_os().collect();
    let (mut cli, matches) = match parse(args.iter().cloned()) {
        Ok(p) => p,
        Err(e) => return usage_error(e, &args),
    };
    // The environment and the file never stop a run: what is wrong there
    // is said once, and the next source (down to the default) is used.
    let mut config = Config::load();
    config.apply(&mut cli, &matches);
    if reads_settings(&cli) {
        config.warn(&cli);
    }
    // Process-wide: every printer masks through `text::secrets`.
    outbox::text::secrets::set_enabled(cli.envelope.mask == crate::cli::MaskArg::On);
    // The agent hook with a broken configuration answers nothing (the tool
    // call runs as the agent wrote it) and exits 0: it never blocks, and it
    // rewrites nothing on settings it cannot trust.
    if matches!(cli.command, Some(Command::Hook(_))) && config.has_problems() {
        return ExitCode::SUCCESS;
    }
    if matches!(cli.command, Some(Command::Config)) {
        // Values come from the file and the environment: made safe.
        return print(&outbox::text::stderr::safe(&config.report(&cli)));
    }
    let wrapping = cli.command.is_none() && !cli.wrap.is_empty();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            outbox::say!("error: {e}");
            for cause in e.chain().skip(1) {
                outbox::text::stderr::say_raw(format_args!("  caused by: {cause}"));
            }
            // In wrap mode a failure of outbox itself is 125 (as GNU timeout).
            ExitCode::from(if wrapping { 125 } else { 1 })
        }
    }
}

/// A bad command line: clap's message, with a hint when the words look like
/// a command to wrap (`outbox git log` → `outbox -- git log`). Exit 2,
/// except for `outbox hook`: Claude Code reads a hook's exit 2 as "deny
/// this tool call", and a hook that cannot start must not take the agent's
/// shell away (any other status lets the call go ahead and shows the
/// message).
fn usage_error(mut e: clap::Error, args: &[OsString]) -> ExitCode {
    use clap::error::{ContextKind, ContextValue};
    if let Some(hints) = wrap_hint(&e, args) {
        e.insert(ContextKind::Suggested, ContextValue::StyledStrs(hints.into_iter().map(Into::into).collect()));
    }
    if !e.use_stderr() {
        // --help, --version: our own text.
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    // A usage error quotes the arguments: made safe for a terminal like
    // every other message (plain, without clap's colours).
    let text = outbox::text::stderr::safe(e.render().to_string().trim_end());
    let _ = std::io::stderr().write_all(format!("{text}\n").as_bytes());
    ExitCode::from(if first_word(args) == Some("hook") { 1 } else { 2 })
}

/// `did you mean: outbox [OPTIONS] -- CMD ARGS` when clap stopped at a word
/// that is neither an option nor a subcommand (and the subcommand it is
/// near, when there is one: `outbox shw`).
fn wrap_hint(e: &clap::Error, args: &[OsString]) -> Option<Vec<String>> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(e.kind(), ErrorKind::UnknownArgument | ErrorKind::InvalidSubcommand)
        || e.get(ContextKind::SuggestedSubcommand).is_some()
    {
        return None;
    }
    let Some(ContextValue::String(word)) = e.get(ContextKind::InvalidArg) else { return None };
    if word.starts_with('-') || args.iter().any(|a| a == "--") {
        return None;
    }
    let at = args.iter().skip(1).position(|a| a.to_string_lossy() == word.as_str())? + 1;
    let quoted = |a: &OsString| crate::integrate::shell::quote(&a.to_string_lossy());
    let mut words: Vec<String> = vec!["outbox".into()];
    words.extend(args[1..at].iter().map(quoted));
    words.push("--".into());
    words.extend(args[at..].iter().map(quoted));
    let shown = |s: &str| outbox::text::sanitize::display_str(s).text;
    let mut hints = vec![format!("did you mean: {}", shown(&words.join(" ")))];
    let cli = <Cli as clap::CommandFactory>::command();
    if let Some(sub) = crate::config::nearest_word(word, cli.get_subcommands().map(|c| c.get_name())) {
        hints.insert(0, format!("a subcommand with a similar name exists: '{sub}'"));
    }
    Some(hints)
}

/// The first word of the command line that is not an option (the
/// subcommand, when there is one).
fn first_word(args: &[OsString]) -> Option<&str> {
    let mut words = args.iter().skip(1).map(|a| a.to_str());
    while let Some(w) = words.next() {
        match w {
            Some("--") => return None,
            Some("--dir") => {
                words.next();
            }
            Some(w) if w.starts_with('-') => {}
            other => return other,
        }
    }
    None
}

/// Whether this mode reads the settings the environment and the file give
/// (the others would only be noisy about them).
fn reads_settings(cli: &Cli) -> bool {
    matches!(cli.command, None | Some(Command::Init(_) | Command::Hook(_) | Command::Config | Command::Trend(_)))
}

/// Parses the command line. `--dir` is global, so it may come before or
/// after a subcommand (`outbox --dir D ls`, `outbox ls --dir D`); clap's
/// `args_conflicts_with_subcommands` would refuse the first, so the rule it
/// enforced (the envelope's options do not go with a subcommand) is checked
/// here instead, as the same usage error (exit 2). The matches are kept:
/// the configuration file fills only what they say came from a default.
pub fn parse(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<(Cli, ArgMatches), clap::Error> {
    use clap::parser::ValueSource;
    use clap::{CommandFactory, FromArgMatches};
    let mut cmd = Cli::command();
    let matches = cmd.try_get_matches_from_mut(args)?;
    if let Some((sub, _)) = matches.subcommand() {
        let given = cmd.get_arguments().find(|a| {
            let id = a.get_id().as_str();
            !matches!(id, "dir" | "help" | "version") && matches.value_source(id) == Some(ValueSource::CommandLine)
        });
        if let Some(a) = given {
            let name = a.get_long().map_or_else(|| a.get_id().to_string(), |l| format!("--{l}"));
            return Err(cmd.error(
                clap::error::ErrorKind::ArgumentConflict,
                format!("{name} is an option of the envelope, not of `outbox {sub}`"),
            ));
        }
    }
    let cli = Cli::from_arg_matches(&matches)?;
    cli.check()?;
    Ok((cli, matches))
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    use clap::CommandFactory;
    let code = |c: ExitCode| -> u8 {
        if c == ExitCode::SUCCESS {
            0
        } else {
            1
        }
    };
    // The environment is read here, once, for every mode.
    let store = store_env(cli.dir.as_deref());
    if cli.command.is_none() {
        for w in crate::config::store_warnings(&store, |k| std::env::var_os(k)) {
            outbox::say!("{w}");
        }
    }
    let options = |cli: &Cli| -> anyhow::Result<outbox::session::RunOptions> {
        let mut o = cli.envelope.options()?;
        o.store = store.clone();
        Ok(o)
    };
    match cli.command {
        Some(Command::Show(a)) => match crate::follow::record(&store, &a.id) {
            Some(entry) => crate::follow::show(&a, &entry, &store),
            None => outbox::store::run_show(&a.into(), &store).map(code),
        },
        Some(Command::Status(a)) => crate::follow::status(&a, &store),
        Some(Command::Wait(a)) => crate::follow::wait(&a, &store),
        Some(Command::Ls(a)) => outbox::store::run_ls(&a.into(), &store).map(code),
        Some(Command::Rm(a)) => outbox::store::run_rm(&a.into(), &store).map(code),
        Some(Command::Gc(a)) => {
            let dry_run = a.dry_run;
            let status = outbox::store::run_gc(&a.into(), &store).map(code)?;
            if !dry_run {
                // Series outlive the entries they describe; only long-idle
                // ones go.
                let removed = match outbox::store::Store::open_existing(store.dir()?)? {
                    Some(s) => outbox::history::series::collect(&s, outbox::store::now_secs())?,
                    None => 0,
                };
                if removed > 0 {
                    outbox::say!("removed {removed} run-history series idle for 180 days or more");
                }
            }
            Ok(status)
        }
        Some(Command::Pack(a)) => outbox::notes::pack::run(&a.into()).map(code),
        Some(Command::Check(a)) => outbox::notes::check::run(&a.into()).map(code),
        Some(Command::Init(a)) => crate::integrate::shell::run(&a).map(code),
        Some(Command::Hook(a)) => crate::integrate::hook::run(&a).map(code),
        Some(Command::Config) => Ok(0),
        Some(Command::Trend(a)) => crate::trend::run(&a, &cli.envelope, &store),
        Some(Command::Stats(a)) => crate::stats::run(&a, &store),
        Some(Command::Completions { shell }) => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "outbox", &mut out);
            Ok(write_stdout(&out))
        }
        Some(Command::Man) => {
            let mut out = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut out)?;
            Ok(write_stdout(&out))
        }
        None if !cli.wrap.is_empty() => {
            // Claude Code's Bash tool stops a command at 120 s.
            let preset = (cli.envelope.harness == Some(crate::cli::HarnessArg::ClaudeCode))
                .then_some(crate::wrap::CLAUDE_CODE_DETACH);
            match cli.detach_after.or(preset) {
                Some(after) => crate::wrap::detach::run(&options(&cli)?, &cli.wrap, cli.timeout, after),
                None => crate::wrap::run(&options(&cli)?, &cli.wrap, cli.timeout),
            }
        }
        None => match (&cli.envelope.trailer, cli.envelope.cut) {
            (Some(nonce), cut) => crate::integrate::trailer::run(&options(&cli)?, nonce, cut),
            (None, _) => outbox::session::run_stdin(&options(&cli)?),
        },
    }
}

/// The store's settings from `--dir` and the environment (`OUTBOX_DIR`,
/// `XDG_CACHE_HOME`, `HOME`, `OUTBOX_TTL_SECONDS`, `OUTBOX_MAX_STORE_BYTES`).
fn store_env(dir: Option<&std::path::Path>) -> outbox::store::StoreEnv {
    let cwd = std::env::current_dir().ok();
    outbox::store::StoreEnv::from_vars(dir, |k| std::env::var_os(k), cwd.as_deref())
}

fn print(text: &str) -> ExitCode {
    ExitCode::from(write_stdout(text.as_bytes()))
}

/// Writes generated text to stdout; a reader that went away (`| head`) is
/// not an error.
fn write_stdout(bytes: &[u8]) -> u8 {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            outbox::say!("error: cannot write to stdout: {e}");
            1
        }
    }
}
