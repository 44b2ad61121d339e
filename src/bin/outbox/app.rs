//! Dispatch: parse the command line once, run one mode, map the result to
//! an exit status. Errors are printed here, once, as `outbox: error: …`
//! with their causes.

use std::process::ExitCode;

use crate::cli::{Cli, Command};

pub fn main() -> ExitCode {
    // args_os: arguments that are not UTF-8 must not panic.
    let cli = match parse(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let wrapping = cli.command.is_none() && !cli.wrap.is_empty();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("outbox: error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            // In wrap mode a failure of outbox itself is 125 (as GNU timeout).
            ExitCode::from(if wrapping { 125 } else { 1 })
        }
    }
}

/// Parses the command line. `--dir` is global, so it may come before or
/// after a subcommand (`outbox --dir D ls`, `outbox ls --dir D`); clap's
/// `args_conflicts_with_subcommands` would refuse the first, so the rule it
/// enforced (the envelope's options do not go with a subcommand) is checked
/// here instead, as the same usage error (exit 2).
pub fn parse(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<Cli, clap::Error> {
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
    Cli::from_arg_matches(&matches)
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    let code = |c: ExitCode| -> u8 {
        if c == ExitCode::SUCCESS {
            0
        } else {
            1
        }
    };
    // The environment is read here, once, for every mode.
    let store = store_env(cli.dir.as_deref());
    let options = |cli: &Cli| -> anyhow::Result<outbox::session::RunOptions> {
        let mut o = cli.envelope.options()?;
        o.store = store.clone();
        Ok(o)
    };
    match cli.command {
        Some(Command::Show(a)) => outbox::store::run_show(&a.into(), &store).map(code),
        Some(Command::Ls(a)) => outbox::store::run_ls(&a.into(), &store).map(code),
        Some(Command::Rm(a)) => outbox::store::run_rm(&a.into(), &store).map(code),
        Some(Command::Gc(a)) => outbox::store::run_gc(&a.into(), &store).map(code),
        Some(Command::Pack(a)) => outbox::notes::pack::run(&a.into()).map(code),
        Some(Command::Check(a)) => outbox::notes::check::run(&a.into()).map(code),
        Some(Command::Init(a)) => crate::integrate::shell::run(&a).map(code),
        Some(Command::Hook(a)) => crate::integrate::hook::run(&a).map(code),
        None if !cli.wrap.is_empty() => crate::wrap::run(&options(&cli)?, &cli.wrap),
        None => outbox::session::run_stdin(&options(&cli)?),
    }
}

/// The store's settings from `--dir` and the environment (`OUTBOX_DIR`,
/// `XDG_CACHE_HOME`, `HOME`, `OUTBOX_TTL_SECONDS`, `OUTBOX_MAX_STORE_BYTES`).
fn store_env(dir: Option<&std::path::Path>) -> outbox::store::StoreEnv {
    let cwd = std::env::current_dir().ok();
    outbox::store::StoreEnv::from_vars(dir, |k| std::env::var_os(k), cwd.as_deref())
}
