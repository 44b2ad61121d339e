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
            eprintln!("outbox: error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
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
        Some(Command::Show(a)) => crate::store::run_show(&a, cli.envelope.dir.as_deref()).map(code),
        Some(Command::Ls(a)) => crate::store::run_ls(&a, cli.envelope.dir.as_deref()).map(code),
        Some(Command::Gc(a)) => crate::store::run_gc(&a, cli.envelope.dir.as_deref()).map(code),
        Some(Command::Pack(a)) => crate::sections::run(&a).map(code),
        Some(Command::Check(a)) => crate::check::run(&a).map(code),
        Some(Command::Init(a)) => crate::shell::run(&a).map(code),
        Some(Command::Hook(a)) => crate::hook::run(&a).map(code),
        None if !cli.wrap.is_empty() => crate::wrap::run(&cli.envelope, &cli.wrap),
        None => crate::filter::run_stdin(&cli.envelope),
    }
}
