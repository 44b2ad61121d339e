//! What an agent or a terminal reads: untrusted line bytes made safe to print.
//!
//! Input lines are decoded lossily, ANSI escape sequences (CSI, OSC, DCS and
//! the two-byte forms) are removed and counted, and every other control
//! character (tab excepted), C1 control and bidirectional override is shown
//! as a visible escape such as `\x07` or `\u{202e}`. The spill keeps the
//! original bytes; only what is printed is changed.
//!
//! The renderer budgets in displayed characters, but the marker of a line
//! shortened in the middle counts the *input* characters it cut, so the
//! display keeps, per input character, where its display starts.

/// One line (or part of one) as it will be printed, with a map back to the
/// input characters it came from.
#[derive(Debug, Default, Clone)]
pub struct Display {
    /// The printable text.
    pub text: String,
    /// For input character `i`: (byte offset in `text`, display chars before
    /// it). One extra entry at the end closes the last character.
    marks: Vec<(u32, u32)>,
    /// ANSI escape sequences removed.
    pub ansi_stripped: u32,
}

impl Display {
    /// Input characters covered.
    pub fn input_chars(&self) -> usize {
        self.marks.len().saturating_sub(1)
    }

    /// Displayed characters.
    pub fn chars(&self) -> usize {
        self.marks.last().map_or(0, |m| m.1 as usize)
    }

    /// The longest prefix whose display fits in `max` chars:
    /// (text, input chars used, display chars).
    pub fn prefix(&self, max: usize) -> (&str, usize, usize) {
        // Last mark whose display position is <= max.
        let k = self.marks.partition_point(|m| (m.1 as usize) <= max);
        let k = k.saturating_sub(1);
        let (off, disp) = self.marks.get(k).copied().unwrap_or((0, 0));
        (&self.text[..off as usize], k, disp as usize)
    }

    /// The longest suffix whose display fits in `max` chars:
    /// (text, input chars used, display chars).
    pub fn suffix(&self, max: usize) -> (&str, usize, usize) {
        let total = self.chars();
        let n = self.input_chars();
        // First mark whose display position is >= total - max.
        let need = total.saturating_sub(max);
        let k = self.marks.partition_point(|m| (m.1 as usize) < need);
        let (off, disp) = self.marks.get(k).copied().unwrap_or((self.text.len() as u32, total as u32));
        (&self.text[off as usize..], n.saturating_sub(k), total - disp as usize)
    }
}

impl Display {
    /// The display of input characters `from..` (all of it for 0, nothing
    /// past the end).
    pub fn text_from(&self, from: usize) -> &str {
        let off = self.marks.get(from).map_or(self.text.len(), |m| m.0 as usize);
        &self.text[off..]
    }

    /// Shows the first character as an escape (`\x2d` for `-`), used on
    /// input lines that imitate the envelope's own marker lines.
    pub fn escape_first(&mut self) {
        let Some(c) = self.text.chars().next() else { return };
        let rep = format!("\\x{:02x}", c as u32 & 0xff);
        let extra_bytes = rep.len() as u32 - c.len_utf8() as u32;
        let extra_chars = rep.len() as u32 - 1;
        self.text.replace_range(..c.len_utf8(), &rep);
        for m in self.marks.iter_mut().skip(1) {
            m.0 += extra_bytes;
            m.1 += extra_chars;
        }
    }
}

/// Decodes `raw` lossily and sanitises it for display.
pub fn display(raw: &[u8]) -> Display {
    let decoded = String::from_utf8_lossy(raw);
    display_str(&decoded)
}

/// Sanitises already-decoded text for display.
pub fn display_str(s: &str) -> Display {
    let chars: Vec<char> = s.chars().collect();
    let mut d =
        Display { text: String::with_capacity(s.len()), marks: Vec::with_capacity(chars.len() + 1), ansi_stripped: 0 };
    let mut shown: u32 = 0;
    let mut i = 0;
    while i < chars.len() {
        let len = escape_sequence_len(&chars[i..]);
        if len > 0 {
            for _ in 0..len {
                d.marks.push((d.text.len() as u32, shown));
            }
            d.ansi_stripped += 1;
            i += len;
            continue;
        }
        d.marks.push((d.text.len() as u32, shown));
        shown += push_char(&mut d.text, chars[i]);
        i += 1;
    }
    d.marks.push((d.text.len() as u32, shown));
    d
}

/// Display chars of `s` once sanitised, without building it.
pub fn display_len(raw: &[u8]) -> usize {
    display(raw).chars()
}

/// The one list of characters that must never reach a terminal or an
/// agent raw, wherever outbox prints (lines, headers, JSON folds): C0
/// controls, DEL, C1 controls (U+0080-009F, which include the one-byte CSI
/// U+009B), the bidirectional controls that reorder what is shown (U+061C,
/// U+200E/F, U+202A-202E, U+2066-2069) and the line and paragraph
/// separators U+2028/2029. Tab and newline are in it too: each printer says
/// how it shows them (a line keeps its tabs; JSON writes `\t`, `\n`).
pub fn is_unsafe_char(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// Characters of `s` written as a JSON string literal the way outbox writes
/// one (quotes included): short escapes for `"`, `\\` and the usual
/// controls, `\uXXXX` for every other unsafe character.
pub fn json_literal_chars(s: &str) -> usize {
    let escaped: usize = s
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if is_unsafe_char(c) => 6,
            _ => 1,
        })
        .sum();
    escaped + 2
}

/// serde_json escapes only C0 controls; every other unsafe character (DEL,
/// C1, bidirectional overrides, from a command line, a path, an error) is
/// escaped too, so JSON outbox prints is as safe on a terminal as its
/// lines. Such characters can only occur inside JSON strings, where
/// `\uXXXX` is valid: the document means the same. Newlines, tabs and
/// carriage returns are left alone: serde_json escapes them inside strings,
/// so any left are a pretty printer's whitespace.
pub fn terminal_safe_json(json: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if is_unsafe_char(c) && !matches!(c, '\n' | '\t' | '\r') {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

fn push_char(out: &mut String, c: char) -> u32 {
    use std::fmt::Write;
    let start = out.len();
    match c {
        '\t' => out.push('\t'),
        '\r' => out.push_str("\\r"),
        '\u{0}'..='\u{1f}' | '\u{7f}' => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if is_unsafe_char(c) => {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
        _ => out.push(c),
    }
    if out.len() - start == c.len_utf8() && !matches!(c, '\r') {
        1
    } else {
        (out.len() - start) as u32 // escapes are ASCII: bytes == chars
    }
}

/// Length in chars of the ANSI escape sequence starting at `s[0]`, or 0 when
/// `s` does not start one. An unterminated string sequence (OSC, DCS) runs to
/// the end of the line.
fn escape_sequence_len(s: &[char]) -> usize {
    let first = s[0];
    if first == '\u{9b}' {
        return csi_len(s, 1);
    }
    if first != '\u{1b}' || s.len() < 2 {
        return 0;
    }
    match s[1] {
        '[' => csi_len(s, 2),
        ']' | 'P' | 'X' | '^' | '_' => string_len(s),
        '\u{20}'..='\u{2f}' => {
            // ESC, intermediates, one final byte (e.g. ESC ( B).
            let mut j = 1;
            while j < s.len() && ('\u{20}'..='\u{2f}').contains(&s[j]) {
                j += 1;
            }
            if j < s.len() && ('\u{30}'..='\u{7e}').contains(&s[j]) {
                j + 1
            } else {
                0
            }
        }
        '\u{30}'..='\u{7e}' => 2,
        _ => 0,
    }
}

/// Longest escape sequence removed, in chars. Real ones are short; a longer
/// "sequence" is shown escaped instead. The bound also keeps the display of
/// a long line's kept ends the same as the display of the whole line: no
/// sequence can reach from outside a kept end into its last characters.
pub const MAX_SEQUENCE: usize = 200;

fn csi_len(s: &[char], start: usize) -> usize {
    let s = &s[..s.len().min(MAX_SEQUENCE)];
    let mut j = start;
    while j < s.len() && ('\u{30}'..='\u{3f}').contains(&s[j]) {
        j += 1;
    }
    while j < s.len() && ('\u{20}'..='\u{2f}').contains(&s[j]) {
        j += 1;
    }
    if j < s.len() && ('\u{40}'..='\u{7e}').contains(&s[j]) {
        j + 1
    } else {
        0
    }
}

/// OSC / DCS / SOS / PM / APC: ends with BEL or ESC \ (ST); one left open
/// at the end of the line runs to it, if that is within MAX_SEQUENCE.
fn string_len(s: &[char]) -> usize {
    let mut j = 2;
    while j < s.len().min(MAX_SEQUENCE) {
        match s[j] {
            '\u{7}' | '\u{9c}' => return j + 1,
            '\u{1b}' if s.get(j + 1) == Some(&'\\') => return j + 2,
            _ => j += 1,
        }
    }
    if s.len() <= MAX_SEQUENCE {
        s.len()
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_colour_and_escapes_controls() {
        let d = display(b"\x1b[31merror\x1b[0m: bad\x07 \xe2\x80\xae tab\there\r");
        assert_eq!(d.text, "error: bad\\x07 \\u{202e} tab\there\\r");
        assert_eq!(d.ansi_stripped, 2);
        assert_eq!(d.chars(), d.text.chars().count());
    }

    #[test]
    fn osc_title_and_clear_screen_are_removed() {
        let d = display(b"\x1b]0;title\x07\x1b[2J\x1b[Hok");
        assert_eq!(d.text, "ok");
        assert_eq!(d.ansi_stripped, 3);
    }

    #[test]
    fn overlong_sequences_are_shown_not_stripped() {
        let long = format!("a\x1b[{}m", "1".repeat(MAX_SEQUENCE));
        assert!(display(long.as_bytes()).text.starts_with("a\\x1b[111"));
        let open_osc = format!("a\x1b]0;{}", "t".repeat(MAX_SEQUENCE));
        assert!(display(open_osc.as_bytes()).text.starts_with("a\\x1b]0;ttt"));
        assert_eq!(display(b"a\x1b]0;short title").text, "a");
    }

    #[test]
    fn lone_escape_is_visible() {
        assert_eq!(display(b"a\x1b").text, "a\\x1b");
        assert_eq!(display(b"a\x1b[").text, "a\\x1b[");
    }

    #[test]
    fn prefix_and_suffix_respect_display_width() {
        let d = display("αβγ\x01δε".as_bytes());
        assert_eq!(d.text, "αβγ\\x01δε");
        assert_eq!(d.chars(), 9);
        let (p, n, w) = d.prefix(4);
        assert_eq!((p, n, w), ("αβγ", 3, 3));
        let (s, n, w) = d.suffix(6);
        assert_eq!((s, n, w), ("\\x01δε", 3, 6));
        let (s, n, w) = d.suffix(5);
        assert_eq!((s, n, w), ("δε", 2, 2));
    }
}
