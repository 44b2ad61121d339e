//! The one record of a run's facts: what every header prints (the text
//! envelope's, the JSON and NDJSON folds') and what the store's metadata
//! records. The session fills it once, after the strategy is settled; the
//! writers only read it.
//!
//! Invariants: `full_output` is the real path, never shortened by any
//! writer (a shortened path is a path that does not exist); the command text
//! is shortened by one rule, [`RunFacts::command_text`]; strategies and
//! streams are enums, compared as enums and spelled only by `as_str`.

use crate::text::sanitize::json_literal_chars;
use crate::text::shorten::shorten_text;

/// Characters the command's JSON string literal may take in a header.
pub const COMMAND_CHARS: usize = 200;

/// How the output of a run was made (the header's and the metadata's
/// `strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// The text envelope: head, signal lines, tail.
    #[default]
    TextEnvelope,
    /// One JSON document folded into a smaller one.
    JsonShape,
    /// NDJSON folded streaming.
    NdjsonShape,
    /// Small input printed itself (made safe to print).
    Passthrough,
    /// `--envelope never`: the input copied raw.
    Tee,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::TextEnvelope => "text-envelope",
            Strategy::JsonShape => "json-shape",
            Strategy::NdjsonShape => "ndjson-shape",
            Strategy::Passthrough => "passthrough",
            Strategy::Tee => "tee",
        }
    }
}

/// One of a wrapped command's two streams, read by its own session when
/// `--stderr separate` keeps them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// Facts about a wrapped command, recorded in the header and metadata.
#[derive(Debug, Clone, Default)]
pub struct CommandInfo {
    pub command: String,
    pub exit_status: Option<i32>,
    pub killed_by_signal: Option<i32>,
    pub duration_ms: Option<u64>,
    /// `--timeout` expired and outbox ended the command's process group.
    pub timed_out: bool,
    /// The `--timeout` limit, in milliseconds, when one was set.
    pub timeout_ms: Option<u64>,
}

impl CommandInfo {
    /// How the command ended, as the summary says it: `timed out after
    /// 2s`, `killed by SIGSEGV`, `exit status 3`; None when unknown.
    pub fn ending(&self) -> Option<String> {
        if self.timed_out {
            return Some(match self.timeout_ms.or(self.duration_ms) {
                Some(ms) => format!("timed out after {}", shown_ms(ms)),
                None => "timed out".into(),
            });
        }
        if let Some(sig) = self.killed_by_signal {
            return Some(format!("killed by {}", crate::stream::interrupt::name(sig)));
        }
        self.exit_status.map(|code| format!("exit status {code}"))
    }
}

/// A duration as people write it: `500ms`, `2s`, `1.5s`.
fn shown_ms(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms}ms"),
        _ if ms.is_multiple_of(1000) => format!("{}s", ms / 1000),
        _ => format!("{:.1}s", ms as f64 / 1000.0),
    }
}

/// Everything about a run that the scan does not know.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    pub label: String,
    pub id: String,
    /// Absolute path of the stored copy; None when it could not be kept.
    pub full_output: Option<String>,
    /// Why there is no stored copy.
    pub spill_error: Option<String>,
    pub strategy: Strategy,
    /// Which stream, with `--stderr separate`.
    pub stream: Option<Stream>,
    /// What `--format auto` detected (`"json"`, `"ndjson"`, `"text"`).
    pub detected: Option<&'static str>,
    /// Wrap mode: the command and how it ended.
    pub command: Option<CommandInfo>,
    /// The input was cut short by this signal.
    pub interrupted: Option<i32>,
    /// Statements printed before the head, e.g. why JSON was not folded.
    pub notes: Vec<String>,
    /// More header fields (e.g. a JSON parse error), placed last.
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// Signal shapes new since the previous run of the same command (run
    /// history): their lines are chosen first when not all fit.
    pub new_shapes: Vec<u64>,
}

impl RunFacts {
    /// The command as every header shows it: whole when its JSON string
    /// literal fits [`COMMAND_CHARS`], else cut in the middle (with the cut
    /// marker) until it does; a command full of control characters, which
    /// escape to six characters each, is cut further.
    /// Credentials in it are masked first (`--token ghp_…` in a command
    /// line would otherwise reach every header).
    pub fn command_text(&self) -> Option<String> {
        let c = self.command.as_ref()?;
        let command = crate::text::secrets::mask_str(&c.command);
        let mut cap = COMMAND_CHARS;
        loop {
            let t = shorten_text(&command, cap);
            if cap <= 24 || json_literal_chars(&t) <= COMMAND_CHARS + 2 {
                return Some(t);
            }
            cap /= 2;
        }
    }

    /// Name of the signal that cut the input short.
    pub fn interrupted_name(&self) -> Option<String> {
        self.interrupted.map(crate::stream::interrupt::name)
    }

    /// Name of the signal that killed the wrapped command.
    pub fn killed_by_signal_name(&self) -> Option<String> {
        self.command.as_ref().and_then(|c| c.killed_by_signal).map(crate::stream::interrupt::name)
    }

    pub fn exit_status(&self) -> Option<i32> {
        self.command.as_ref().and_then(|c| c.exit_status)
    }

    pub fn duration_ms(&self) -> Option<u64> {
        self.command.as_ref().and_then(|c| c.duration_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_is_cut_by_one_rule() {
        let facts = |command: &str| RunFacts {
            command: Some(CommandInfo { command: command.into(), ..CommandInfo::default() }),
            ..RunFacts::default()
        };
        assert_eq!(facts("make test").command_text().unwrap(), "make test");
        let long = facts(&format!("make {}", "x".repeat(500))).command_text().unwrap();
        assert_eq!(long.chars().count(), COMMAND_CHARS);
        assert!(long.starts_with("make x") && long.contains(" chars cut]…"));
        let controls = facts(&"\u{1}".repeat(500)).command_text().unwrap();
        assert!(json_literal_chars(&controls) <= COMMAND_CHARS + 2, "{}", json_literal_chars(&controls));
        assert!(RunFacts::default().command_text().is_none());
    }

    #[test]
    fn the_ending_says_how_the_command_ended() {
        let info = |f: fn(&mut CommandInfo)| {
            let mut c = CommandInfo::default();
            f(&mut c);
            c.ending()
        };
        assert_eq!(info(|_| {}), None);
        assert_eq!(info(|c| c.exit_status = Some(3)).as_deref(), Some("exit status 3"));
        assert_eq!(info(|c| c.exit_status = Some(0)).as_deref(), Some("exit status 0"));
        let segv = |c: &mut CommandInfo| (c.exit_status, c.killed_by_signal) = (Some(139), Some(libc::SIGSEGV));
        assert_eq!(info(segv).as_deref(), Some("killed by SIGSEGV"));
        let late = |c: &mut CommandInfo| {
            (c.exit_status, c.killed_by_signal, c.timed_out, c.timeout_ms) = (Some(143), Some(15), true, Some(2000))
        };
        assert_eq!(info(late).as_deref(), Some("timed out after 2s"));
        assert_eq!(shown_ms(1500), "1.5s");
        assert_eq!(shown_ms(250), "250ms");
    }
}
