//! Dispatch: parse the command line once, run one mode, map the result to
//! an exit status. Errors are printed here, once, as `outbox: error: …`
//! with their causes.

use std::process::ExitCode;

use std::io::Write;

use clap::{CommandFactory, FromArgMatches};

use crate::cli::{Cli, Command};
use crate::config::Config;

pub fn main() -> ExitCode {
    // args_os: arguments that are not UTF-8 must not panic.
    let parsed = Cli::command().try_get_matches_from(std::env::args_os()).and_then(|m| {
        let cli = Cli::from_arg_matches(&m)?;
        Ok((cli, m))
    });
    let (mut cli, matches) = match parsed {
        Ok(p) => p,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    // A bad configuration file is a usage error, like a bad flag: say
    // which file and which key, and run nothing.
    let config = match Config::load() {
        Ok(c) => c,
        Err(e) => {
            outbox::say!("error: {e}");
            return ExitCode::from(2);
        }
    };
    config.apply(&mut cli, &matches);
    if matches!(cli.command, Some(Command::Config)) {
        return print(&config.report(&matches, &cli));
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

fn run(cli: Cli) -> anyhow::Result<u8> {
    let code = |c: ExitCode| -> u8 {
        if c == ExitCode::SUCCESS {
            0
        } else {
            1
        }
    };
    match cli.command {
        Some(Command::Show(a)) => outbox::store::run_show(&a.into(), cli.envelope.dir.as_deref()).map(code),
        Some(Command::Ls(a)) => outbox::store::run_ls(&a.into(), cli.envelope.dir.as_deref()).map(code),
        Some(Command::Gc(a)) => {
            let dry_run = a.dry_run;
            let status = outbox::store::run_gc(&a.into(), cli.envelope.dir.as_deref()).map(code)?;
            if !dry_run {
                // Series outlive the entries they describe; only long-idle
                // ones go.
                let dir = outbox::store::resolve_dir(cli.envelope.dir.as_deref())?;
                let removed = outbox::history::series::collect(&dir, outbox::store::now_secs())?;
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
        Some(Command::Trend(a)) => crate::trend::run(&a, &cli.envelope),
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
        None if !cli.wrap.is_empty() => crate::wrap::run(&cli.envelope.options()?, &cli.wrap),
        None => outbox::session::run_stdin(&cli.envelope.options()?),
    }
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
