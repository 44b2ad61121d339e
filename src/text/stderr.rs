//! The one path for outbox's own messages to stderr.
//!
//! `eprintln!` panics when stderr is closed (`outbox 2>&-`); a tool whose job
//! is to never lose output must not die over a diagnostic. [`say`] writes the
//! whole message in one call and ignores a failed write: the exit status
//! still tells.

use std::fmt;
use std::io::Write;

/// Writes `outbox: MESSAGE\n` to stderr; a closed or full stderr is ignored.
pub fn say(message: fmt::Arguments<'_>) {
    let line = format!("outbox: {message}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Writes a line to stderr as is (no `outbox: ` prefix), ignoring errors.
pub fn say_raw(message: fmt::Arguments<'_>) {
    let line = format!("{message}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// `say!("could not {}", x)`: `outbox: could not …` on stderr, never a panic.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::text::stderr::say(format_args!($($arg)*))
    };
}
