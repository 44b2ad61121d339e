//! Dispatch: parse the command line once, run one mode, map the result to
//! an exit status. Errors are printed here, once, as `outbox: error: …`
//! with their causes.

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

pub fn main() -> ExitCode {
    // args_os: arguments that are not UTF-8 must not panic.
    let cli = match Cli::try_parse_from(std::env::args_os()) {
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
        Some(Command::Gc(a)) => outbox::store::run_gc(&a.into(), cli.envelope.dir.as_deref()).map(code),
        Some(Command::Pack(a)) => outbox::notes::pack::run(&a.into()).map(code),
        Some(Command::Check(a)) => outbox::notes::check::run(&a.into()).map(code),
        Some(Command::Init(a)) => crate::integrate::shell::run(&a).map(code),
        Some(Command::Hook(a)) => crate::integrate::hook::run(&a).map(code),
        None if !cli.wrap.is_empty() => crate::wrap::run(&cli.envelope.options()?, &cli.wrap),
        None => outbox::session::run_stdin(&cli.envelope.options()?),
    }
}
