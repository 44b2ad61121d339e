//! The block of a signal line: the lines after it that belong to it by its
//! family's rule (indented continuation, up to a blank line, up to a line
//! with a location, a Python traceback), always bounded in lines and
//! characters, so a kept signal line costs a bounded amount of memory.

use crate::family::classify::{strip_ansi, Until};
use crate::family::{Classifier, LineClass};
use crate::text::utf8::count_chars;

/// Bytes kept of one signal line, to find its location when the block
/// closes.
const LINE_KEEP: usize = 2048;
/// A `location` block that is full keeps looking this many more lines for
/// its location line (jest prints it after a long code frame); only that
/// line is kept.
const SEEK_LINES: usize = 24;
/// Bytes kept of a location line found that way.
const SEEK_KEEP: usize = 400;

#[derive(Debug)]
pub struct OpenBlock {
    pub lineno: u64,
    pub class: LineClass,
    line: Vec<u8>,
    lines: Vec<u8>,
    linenos: Vec<u64>,
    count: usize,
    chars: usize,
    /// Lines looked at past the block's bounds (see `SEEK_LINES`).
    seeking: Option<usize>,
    /// The family's lead line that belongs to the signal line (gcc's `In
    /// function 'f':`, a file header), with its line number.
    pub lead: Option<(u64, Vec<u8>)>,
    /// The file named by that lead line (or an earlier one), for a
    /// location that names none.
    pub file: Option<String>,
}

impl OpenBlock {
    pub fn new(lineno: u64, line: &[u8], class: LineClass) -> OpenBlock {
        let line = line[..line.len().min(LINE_KEEP)].to_vec();
        OpenBlock {
            lineno,
            class,
            line,
            lines: Vec::new(),
            linenos: Vec::new(),
            count: 0,
            chars: 0,
            seeking: None,
            lead: None,
            file: None,
        }
    }

    /// Starts a new block in this one's buffers (a block per signal line
    /// allocated three buffers a line).
    pub fn reset(&mut self, lineno: u64, line: &[u8], class: LineClass) {
        self.lineno = lineno;
        self.class = class;
        self.line.clear();
        self.line.extend_from_slice(&line[..line.len().min(LINE_KEEP)]);
        self.lines.clear();
        self.linenos.clear();
        self.count = 0;
        self.chars = 0;
        self.seeking = None;
        self.lead = None;
        self.file = None;
    }

    /// Offers the next line (number `lineno`); false when the block is
    /// closed (the line may or may not have been taken).
    pub fn take(&mut self, c: &Classifier, lineno: u64, line: &[u8]) -> bool {
        let rule = c.block_rule(self.class.block);
        if let Some(n) = self.seeking.as_mut() {
            if c.has_location(rule, line) {
                let mut cut = line.len().min(SEEK_KEEP);
                while cut > 0 && cut < line.len() && (line[cut] as i8) < -64 {
                    cut -= 1;
                }
                self.push(lineno, &line[..cut], 0);
                return false;
            }
            *n += 1;
            return *n < SEEK_LINES;
        }
        if self.count >= rule.max_lines {
            return self.seek(rule.until);
        }
        let plain = strip_ansi(line);
        let blank = plain.iter().all(u8::is_ascii_whitespace);
        let indented = matches!(plain.first(), Some(b' ' | b'\t'));
        let (take, more) = match rule.until {
            Until::None => (false, false),
            Until::Indent => (indented && !blank, true),
            Until::Deeper => (!blank && depth(&plain) > depth(&strip_ansi(&self.line)), true),
            Until::Blank => (!blank, true),
            Until::Location => (true, !c.has_location(rule, line)),
            Until::Traceback if blank => (false, false),
            Until::Traceback => (true, indented),
            // The next signal line closes the block (see `Scanner::visit`).
            Until::Next => (true, true),
            // Only lines of the same pattern continue it (`continues`).
            Until::Same => (false, false),
        };
        if !take {
            return false;
        }
        let chars = count_chars(line) as usize;
        let left = rule.max_chars.saturating_sub(self.chars);
        if chars > left {
            // Keep what fits of this last line, whole characters only.
            if left >= 16 {
                let mut cut = line.len().min(left);
                while cut > 0 && (line[cut] as i8) < -64 {
                    cut -= 1;
                }
                self.push(lineno, &line[..cut], left);
            }
            return more && self.seek(rule.until);
        }
        self.push(lineno, line, chars);
        more && (self.count < rule.max_lines || self.seek(rule.until))
    }

    /// A signal line of the same pattern after a `same` block's signal
    /// line: taken into the block while it has room (true), else it is a
    /// signal line of its own.
    pub fn continues(&mut self, c: &Classifier, lineno: u64, line: &[u8], class: &LineClass) -> bool {
        let rule = c.block_rule(self.class.block);
        if rule.until != Until::Same || class.block != self.class.block || self.count >= rule.max_lines {
            return false;
        }
        let chars = count_chars(line) as usize;
        if self.chars + chars > rule.max_chars {
            return false;
        }
        self.push(lineno, line, chars);
        true
    }

    /// The block is full: a `location` block keeps looking for its
    /// location line.
    fn seek(&mut self, until: Until) -> bool {
        if until != Until::Location {
            return false;
        }
        self.seeking = Some(0);
        true
    }

    fn push(&mut self, lineno: u64, line: &[u8], chars: usize) {
        self.lines.extend_from_slice(line);
        self.lines.push(b'\n');
        self.linenos.push(lineno);
        self.count += 1;
        self.chars += chars;
    }

    /// The block's lines, each ending with `\n`.
    pub fn lines(&self) -> &[u8] {
        &self.lines
    }

    /// Their line numbers.
    pub fn linenos(&self) -> &[u64] {
        &self.linenos
    }

    /// The location in the signal line or its block.
    pub fn location(&self, c: &Classifier) -> Option<String> {
        let rule = c.block_rule(self.class.block);
        let texts = std::iter::once(&self.line[..]).chain(self.lines.split(|&b| b == b'\n'));
        c.location(rule, texts, self.file.as_deref())
    }
}

/// How many blanks a line starts with.
fn depth(line: &[u8]) -> usize {
    line.iter().take_while(|&&b| b == b' ' || b == b'\t').count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::{spec, FamilyOptions};

    /// A mocha-like family whose numbered line takes only deeper lines.
    fn classifier() -> Classifier {
        let toml = r#"
name = "deep"
detect = ['^  \d+ passing']
[[signal]]
severity = "error"
pattern = '^  \d\) \S'
block = { until = "deeper" }
"#;
        let f: spec::FamilySpec = toml::from_str(toml).unwrap();
        Classifier::new(&[f], &FamilyOptions::default()).unwrap()
    }

    #[test]
    fn deeper_takes_only_lines_indented_more_than_the_signal_line() {
        let c = classifier();
        let line = b"  2) coupons";
        let mut tally = c.tally();
        let class = c.classify(1, line, &mut tally).expect("a signal line");
        let mut b = OpenBlock::new(1, line, class);
        assert!(b.take(&c, 2, b"       ignores a missing coupon:"));
        assert!(b.take(&c, 3, b"     TypeError: Cannot read properties of undefined"));
        // Back at the signal line's depth: a passing test's name.
        assert!(!b.take(&c, 4, b"  \xe2\x9c\x94 subtracts an amount"));
        assert_eq!(
            b.lines(),
            b"       ignores a missing coupon:\n     TypeError: Cannot read properties of undefined\n"
        );
        // A blank line ends it too.
        let mut b = OpenBlock::new(1, line, class);
        assert!(!b.take(&c, 2, b""));
        assert!(b.lines().is_empty());
    }
}
