//! The `outbox` command: clap, dispatch, wrap mode, shell and agent
//! integration. The engine is the `outbox` library; this binary turns the
//! command line into its options and runs one mode.

mod app;
mod cli;
mod config;
mod follow;
mod integrate;
mod stats;
mod trend;
mod wrap;

use std::process::ExitCode;

fn main() -> ExitCode {
    app::main()
}
