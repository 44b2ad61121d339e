//! The one path for outbox's own messages to stderr.
//!
//! `eprintln!` panics when stderr is closed (`outbox 2>&-`); a tool whose job
//! is to never lose output must not die over a diagnostic. [`say`] writes the
//! whole message in one call and ignores a failed write: the exit status
//! still tells.
//!
//! Messages quote what outbox was given (paths, commands, family files,
//! configuration values, TOML errors that quote the file): every line is
//! made safe by the one sanitiser first, so no escape sequence, C1 control
//! or bidirectional override in them reaches a terminal raw.

use std::fmt;
use std::io::Write;

/// Writes `outbox: MESSAGE\n` to stderr; a closed or full stderr is ignored.
pub fn say(message: fmt::Arguments<'_>) {
    let line = format!("outbox: {}\n", safe(&message.to_string()));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Writes a line to stderr without the `outbox: ` prefix (made safe the
/// same way), ignoring errors.
pub fn say_raw(message: fmt::Arguments<'_>) {
    let line = format!("{}\n", safe(&message.to_string()));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// `text` with each line sanitised; its line breaks kept.
pub fn safe(text: &str) -> String {
    text.split('\n').map(|l| super::sanitize::display_str(l).text).collect::<Vec<_>>().join("\n")
}

/// `say!("could not {}", x)`: `outbox: could not …` on stderr, never a panic.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::text::stderr::say(format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn messages_reach_stderr_without_escapes() {
        let s = super::safe("bad \u{1b}]0;title\u{7}value \u{202e}gnp.exe\u{9b}2J\nnext\tline");
        assert_eq!(s, "bad value \\u{202e}gnp.exe\nnext\tline");
    }
}
