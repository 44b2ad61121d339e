//! `outbox hook AGENT`: agent hook protocols. (Being implemented; issue 8.)

use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct HookArgs {
    /// Which agent's protocol, e.g. claude-code.
    pub agent: String,
}

pub fn run(_args: &HookArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("outbox hook is not available in this build yet")
}
