//! Facts about a run that every header and the metadata record.

/// Facts about a wrapped command, recorded in the header and metadata.
#[derive(Debug, Clone, Default)]
pub struct CommandInfo {
    pub command: String,
    pub exit_status: Option<i32>,
    pub killed_by_signal: Option<i32>,
    pub duration_ms: Option<u64>,
    /// `--timeout` expired and outbox ended the command's process group.
    pub timed_out: bool,
}
