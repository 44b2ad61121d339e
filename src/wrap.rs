//! Wrap mode: `outbox -- CMD`. (Being implemented: issue 8.)

use std::ffi::OsString;

use crate::cli::EnvelopeArgs;

/// Runs the command and envelopes its output; returns the exit status.
pub fn run(_args: &EnvelopeArgs, _cmd: &[OsString]) -> anyhow::Result<u8> {
    anyhow::bail!("wrap mode is not available in this build yet")
}
