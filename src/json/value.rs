//! The small JSON model the folds write their output with: `J` (an ordered
//! value for header fields), `Field` with its `Class` (how readily it is
//! dropped when the budget is tight), the fields every fold starts with,
//! and strict string escaping and middle-shortening.
//!
//! Invariants: strings are escaped strictly (control characters, DEL, C1
//! and bidirectional controls as `\uXXXX`, so the envelope is also safe on
//! a terminal); a shortened string is at most the characters asked for,
//! marker included.

use crate::text::utf8::count_lead_bytes;

/// Characters (Unicode scalar values) of a `str`.
#[inline]
pub(crate) fn str_chars(s: &str) -> usize {
    count_lead_bytes(s.as_bytes()) as usize
}

// One shortening rule and one cut marker for all of outbox (text::shorten).
pub(crate) use crate::text::shorten::{shorten_text, split_keep};

pub(crate) fn cut_marker(cut: usize) -> String {
    crate::text::shorten::cut_marker(cut as u64)
}

/// JSON-escapes `s`, handing the pieces to `sink`. Control characters
/// (C0, DEL and C1, which include terminal escapes such as U+009B) are
/// written as `\u00XX` so the envelope is safe to print to a terminal.
pub(crate) fn escape_into<E>(s: &str, mut sink: impl FnMut(&str) -> Result<(), E>) -> Result<(), E> {
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    let mut ubuf = [0u8; 6];
    while i < bytes.len() {
        let b = bytes[i];
        let (esc, width): (&str, usize) = match b {
            b'"' => ("\\\"", 1),
            b'\\' => ("\\\\", 1),
            b'\n' => ("\\n", 1),
            b'\r' => ("\\r", 1),
            b'\t' => ("\\t", 1),
            0x08 => ("\\b", 1),
            0x0c => ("\\f", 1),
            0x00..=0x1f | 0x7f => (u_escape(&mut ubuf, u32::from(b)), 1),
            0xc2 if matches!(bytes.get(i + 1), Some(0x80..=0x9f)) => {
                let c = u32::from(bytes[i + 1]);
                (u_escape(&mut ubuf, c), 2)
            }
            // Bidirectional controls and line separators (U+061C, U+200E/F,
            // U+2028-202E, U+2066-2069) can reorder or break what a
            // terminal shows: escaped like the text envelope does.
            0xd8 if bytes.get(i + 1) == Some(&0x9c) => (u_escape(&mut ubuf, 0x061c), 2),
            0xe2 if matches!(
                (bytes.get(i + 1), bytes.get(i + 2)),
                (Some(0x80), Some(0x8e | 0x8f | 0xa8..=0xae)) | (Some(0x81), Some(0xa6..=0xa9))
            ) =>
            {
                let c = 0x2000 | (u32::from(bytes[i + 1] & 0x3f) << 6) | u32::from(bytes[i + 2] & 0x3f);
                (u_escape(&mut ubuf, c), 3)
            }
            _ => {
                i += 1;
                continue;
            }
        };
        sink(&s[start..i])?;
        sink(esc)?;
        i += width;
        start = i;
    }
    sink(&s[start..])
}

fn u_escape(buf: &mut [u8; 6], c: u32) -> &str {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let h = |shift: u32| HEX[((c >> shift) & 0xf) as usize];
    *buf = [b'\\', b'u', h(12), h(8), h(4), h(0)];
    // All bytes are ASCII.
    std::str::from_utf8(buf).unwrap_or("\\u0000")
}

/// `s` as a JSON string literal.
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    let _ = escape_into::<()>(s, |p| {
        out.push_str(p);
        Ok(())
    });
    out.push('"');
    out
}

/// A tiny ordered JSON value for building the header.
#[derive(Debug, Clone)]
pub(crate) enum J {
    Null,
    Bool(bool),
    Int(i128),
    Str(String),
    /// Already valid JSON text.
    Raw(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    pub(crate) fn str(s: impl Into<String>) -> J {
        J::Str(s.into())
    }
    pub(crate) fn int(n: impl Into<i128>) -> J {
        J::Int(n.into())
    }
}

pub(crate) fn write_j(out: &mut String, j: &J) {
    match j {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Int(n) => out.push_str(&n.to_string()),
        J::Str(s) => out.push_str(&json_string(s)),
        J::Raw(r) => out.push_str(r),
        J::Arr(v) => {
            out.push('[');
            for (k, x) in v.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                write_j(out, x);
            }
            out.push(']');
        }
        J::Obj(v) => {
            out.push('{');
            for (k, (name, x)) in v.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(name));
                out.push(':');
                write_j(out, x);
            }
            out.push('}');
        }
    }
}

/// How readily a header field is dropped when the budget is tight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    /// Always printed.
    Essential,
    /// Dropped only at the last resort.
    Important,
    /// Dropped as soon as the key inventory has to be cut.
    Optional,
}

pub(crate) struct Field {
    pub key: &'static str,
    pub value: J,
    pub class: Class,
}

impl Field {
    pub(crate) fn new(key: &'static str, value: J, class: Class) -> Field {
        Field { key, value, class }
    }
}

/// The header fields every fold starts with (label, id, sizes, store).
pub(crate) fn common_fields(ctx: &crate::json::FoldContext<'_>, strategy: &str) -> Vec<Field> {
    use Class::Essential as E;
    let facts = ctx.facts;
    let mut f = vec![
        Field::new("label", J::str(shorten_text(&facts.label, 64)), E),
        Field::new("id", J::str(shorten_text(&facts.id, 100)), E),
        Field::new("strategy", J::str(strategy), E),
    ];
    if let Some(d) = facts.detected {
        f.push(Field::new("detected", J::str(d), E));
    }
    f.push(Field::new("bytes", J::int(ctx.bytes), E));
    f.push(Field::new("chars", J::int(ctx.chars), E));
    match &facts.full_output {
        // Whole: a shortened path is a path that does not exist.
        Some(p) => f.push(Field::new("full_output", J::str(p), E)),
        None => {
            f.push(Field::new("full_output", J::Null, E));
            let why = facts.spill_error.as_deref().unwrap_or("the full output could not be stored");
            f.push(Field::new("spill_error", J::str(shorten_text(why, 200)), E));
        }
    }
    f.push(Field::new("budget", J::int(ctx.budget as u64), E));
    if let Some(c) = &facts.command {
        f.push(Field::new("command", J::str(facts.command_text().unwrap_or_default()), E));
        f.push(Field::new("exit_status", c.exit_status.map_or(J::Null, J::int), E));
        if let Some(sig) = facts.killed_by_signal_name() {
            f.push(Field::new("killed_by_signal", J::str(sig), E));
        }
        if let Some(ms) = c.duration_ms {
            f.push(Field::new("duration_ms", J::int(ms), E));
        }
        if c.timed_out {
            f.push(Field::new("timed_out", J::Bool(true), E));
        }
    }
    if let Some(s) = facts.stream {
        f.push(Field::new("stream", J::str(s.as_str()), E));
    }
    // Extras that outbox writes itself from figures (never input text, so
    // serde's JSON needs no further escaping): the token estimate and the
    // run history.
    if let Some(n) = facts.extra.get("tokens_est").and_then(serde_json::Value::as_u64) {
        f.push(Field::new("tokens_est", J::int(n), E));
        f.push(Field::new("tokens_method", J::str("bytes/4"), E));
    }
    if let Some(h) = facts.extra.get("history") {
        f.push(Field::new("history", J::Raw(h.to_string()), Class::Important));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_is_strict_and_terminal_safe() {
        assert_eq!(json_string("a\"b\\c\n\u{1b}[31m\u{9b}\u{7f}é"), r#""a\"b\\c\n\u001b[31m\u009b\u007fé""#);
        let s = json_string("\u{0}\u{1f}");
        assert_eq!(s, r#""\u0000\u001f""#);
    }

    #[test]
    fn shorten_text_fits_and_marks() {
        let s = "x".repeat(1000);
        let t = shorten_text(&s, 50);
        assert!(str_chars(&t) <= 50, "{t}");
        assert!(t.contains("chars cut]"));
        let j = "日本語".repeat(100);
        let t = shorten_text(&j, 40);
        assert!(str_chars(&t) <= 40);
        assert_eq!(shorten_text("short", 40), "short");
    }
}
