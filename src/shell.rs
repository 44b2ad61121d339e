//! `outbox init SHELL`: shell wrappers. (Being implemented; issue 8.)

use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    /// bash, zsh or fish.
    pub shell: String,
}

pub fn run(_args: &InitArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("outbox init is not available in this build yet")
}
