//! A streaming JSON tokenizer: fed blocks of any size, it checks the whole
//! grammar (structure, strings with their escapes and no raw control
//! characters, numbers, literals, nothing after the root value) and tells a
//! [`Sink`] where each value, key and container starts and ends, as byte
//! offsets in the document. It holds no part of the document: its state is
//! a few counters and a stack of open containers (at most [`MAX_DEPTH`]),
//! so a document of any size is read in constant memory (`big`).
//!
//! Invalid UTF-8 inside strings is not an error here (the folds read it as
//! U+FFFD and say so); the bytes outside strings are ASCII by the grammar.

use crate::json::parse::MAX_DEPTH;

/// What kind of value starts at an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Object,
    Array,
    String,
    Integer,
    Number,
    Bool,
    Null,
}

impl Kind {
    /// Index into `inventory::TYPE_NAMES`.
    pub(crate) fn type_index(self) -> usize {
        match self {
            Kind::Null => 0,
            Kind::Bool => 1,
            Kind::Integer => 2,
            Kind::Number => 3,
            Kind::String => 4,
            Kind::Array => 5,
            Kind::Object => 6,
        }
    }
}

/// Where things are. Depth: the number of containers around a value (the
/// root value is at depth 0, its members at 1).
pub(crate) trait Sink {
    /// A value starts at `at` (its first byte); containers and strings too.
    fn start(&mut self, _depth: usize, _kind: Kind, _at: u64) {}
    /// A value ends at `end` (exclusive); numbers learn here whether they
    /// are integers.
    fn end(&mut self, _depth: usize, _kind: Kind, _end: u64) {}
    /// An object member's key spans `at..end` (quotes included); `depth`
    /// is the member's.
    fn key(&mut self, _depth: usize, _at: u64, _end: u64) {}
}

/// Why the document is not JSON: the offset and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamError {
    Invalid(u64, String),
    TooDeep(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ESign,
    Exp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A value is expected (`]` too when `array_end`).
    Value {
        array_end: bool,
    },
    /// After `{`: a key or `}`.
    KeyOrEnd,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After a value: `,`, a closing bracket, or (at the root) the end.
    After,
    Str {
        key: bool,
    },
    Escape {
        key: bool,
    },
    Unicode {
        key: bool,
        left: u8,
    },
    Number(Num),
    Literal {
        word: &'static [u8],
        at: u8,
    },
}

/// The tokenizer's state between blocks.
#[derive(Debug)]
pub(crate) struct Tokenizer {
    state: State,
    /// Open containers: true for objects.
    stack: Vec<bool>,
    /// Offset of the next byte fed.
    pos: u64,
    /// Where the current string, number or literal started.
    token_at: u64,
    /// The deepest nesting seen (containers).
    pub max_depth: usize,
    root_done: bool,
}

impl Tokenizer {
    pub(crate) fn new() -> Tokenizer {
        Tokenizer {
            state: State::Value { array_end: false },
            stack: Vec::new(),
            pos: 0,
            token_at: 0,
            max_depth: 0,
            root_done: false,
        }
    }

    fn depth(&self) -> usize {
        self.stack.len()
    }

    /// Reads one block; `Err` at the first byte that breaks the grammar.
    pub(crate) fn feed(&mut self, block: &[u8], sink: &mut impl Sink) -> Result<(), StreamError> {
        let base = self.pos;
        let mut i = 0;
        let n = block.len();
        while i < n {
            let b = block[i];
            let at = base + i as u64;
            let bad = |what: &str| Err(StreamError::Invalid(at, what.to_string()));
            match self.state {
                State::Str { key } => {
                    // The bulk of a document: jump to the next quote or
                    // backslash; what is skipped must hold no control byte.
                    let rest = &block[i..];
                    let k = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
                    if let Some(c) = rest[..k].iter().position(|&c| c < 0x20) {
                        return Err(StreamError::Invalid(
                            at + c as u64,
                            "control character inside a string (it must be escaped)".into(),
                        ));
                    }
                    i += k;
                    if i == n {
                        break;
                    }
                    if block[i] == b'\\' {
                        self.state = State::Escape { key };
                    } else {
                        let end = base + i as u64 + 1;
                        self.end_string(key, end, sink);
                    }
                    i += 1;
                    continue;
                }
                State::Escape { key } => {
                    self.state = match b {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => State::Str { key },
                        b'u' => State::Unicode { key, left: 4 },
                        _ => return bad("invalid escape in a string"),
                    };
                }
                State::Unicode { key, left } => {
                    if !b.is_ascii_hexdigit() {
                        return bad("invalid \\u escape in a string");
                    }
                    self.state = if left == 1 { State::Str { key } } else { State::Unicode { key, left: left - 1 } };
                }
                State::Number(num) => {
                    let next = match (num, b) {
                        (Num::Minus, b'0') => Some(Num::Zero),
                        (Num::Minus, b'1'..=b'9') => Some(Num::Int),
                        (Num::Minus, _) => return bad("a number needs digits after '-'"),
                        (Num::Int, b'0'..=b'9') => Some(Num::Int),
                        (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
                        (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::E),
                        (Num::Dot, b'0'..=b'9') | (Num::Frac, b'0'..=b'9') => Some(Num::Frac),
                        (Num::Dot, _) => return bad("a number needs digits after '.'"),
                        (Num::E, b'+' | b'-') => Some(Num::ESign),
                        (Num::E | Num::ESign | Num::Exp, b'0'..=b'9') => Some(Num::Exp),
                        (Num::E | Num::ESign, _) => return bad("a number needs digits in its exponent"),
                        (Num::Zero | Num::Int | Num::Frac | Num::Exp, _) => None,
                    };
                    match next {
                        Some(s) => self.state = State::Number(s),
                        None => {
                            // The number ended before this byte: read it again.
                            self.end_number(num, at, sink);
                            continue;
                        }
                    }
                }
                State::Literal { word, at: k } => {
                    if b != word[k as usize] {
                        return bad("invalid literal (true, false or null)");
                    }
                    if k as usize + 1 == word.len() {
                        let kind = if word[0] == b'n' { Kind::Null } else { Kind::Bool };
                        sink.end(self.depth(), kind, at + 1);
                        self.after_value();
                    } else {
                        self.state = State::Literal { word, at: k + 1 };
                    }
                }
                _ if matches!(b, b' ' | b'\t' | b'\n' | b'\r') => {}
                State::Value { array_end } => {
                    if array_end && b == b']' {
                        self.close(false, at, sink)?;
                    } else {
                        self.value(b, at, sink)?;
                    }
                }
                State::KeyOrEnd | State::Key => {
                    if b == b'"' {
                        self.token_at = at;
                        self.state = State::Str { key: true };
                    } else if b == b'}' && self.state == State::KeyOrEnd {
                        self.close(true, at, sink)?;
                    } else {
                        return bad("expected a key (a string in double quotes)");
                    }
                }
                State::Colon => {
                    if b != b':' {
                        return bad("expected ':' after a key");
                    }
                    self.state = State::Value { array_end: false };
                }
                State::After => {
                    if self.root_done {
                        return bad("trailing characters after the JSON value");
                    }
                    match (b, self.stack.last()) {
                        (b',', Some(true)) => self.state = State::Key,
                        (b',', Some(false)) => self.state = State::Value { array_end: false },
                        (b'}', Some(true)) => self.close(true, at, sink)?,
                        (b']', Some(false)) => self.close(false, at, sink)?,
                        _ => return bad("expected ',' or a closing bracket"),
                    }
                }
            }
            i += 1;
        }
        self.pos = base + n as u64;
        Ok(())
    }

    /// The document ended: `Err` when it is not one whole value.
    pub(crate) fn finish(&mut self, sink: &mut impl Sink) -> Result<(), StreamError> {
        let at = self.pos;
        if let State::Number(num) = self.state {
            if matches!(num, Num::Zero | Num::Int | Num::Frac | Num::Exp) {
                self.end_number(num, at, sink);
            }
        }
        if self.root_done {
            Ok(())
        } else if self.pos == 0 {
            Err(StreamError::Invalid(0, "the input is empty".into()))
        } else {
            Err(StreamError::Invalid(at, "the document ends early (EOF while parsing a value)".into()))
        }
    }

    fn value(&mut self, b: u8, at: u64, sink: &mut impl Sink) -> Result<(), StreamError> {
        let depth = self.depth();
        self.token_at = at;
        match b {
            b'{' | b'[' => {
                let object = b == b'{';
                sink.start(depth, if object { Kind::Object } else { Kind::Array }, at);
                if depth >= MAX_DEPTH {
                    return Err(StreamError::TooDeep(at));
                }
                self.stack.push(object);
                self.max_depth = self.max_depth.max(self.stack.len());
                self.state = if object { State::KeyOrEnd } else { State::Value { array_end: true } };
            }
            b'"' => {
                sink.start(depth, Kind::String, at);
                self.state = State::Str { key: false };
            }
            b'-' | b'0'..=b'9' => {
                sink.start(depth, Kind::Integer, at);
                self.state = State::Number(match b {
                    b'-' => Num::Minus,
                    b'0' => Num::Zero,
                    _ => Num::Int,
                });
            }
            b't' | b'f' | b'n' => {
                let word: &'static [u8] = match b {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                sink.start(depth, if b == b'n' { Kind::Null } else { Kind::Bool }, at);
                self.state = State::Literal { word, at: 1 };
            }
            _ => return Err(StreamError::Invalid(at, "expected a value".into())),
        }
        Ok(())
    }

    fn close(&mut self, object: bool, at: u64, sink: &mut impl Sink) -> Result<(), StreamError> {
        self.stack.pop();
        sink.end(self.depth(), if object { Kind::Object } else { Kind::Array }, at + 1);
        self.after_value();
        Ok(())
    }

    fn end_string(&mut self, key: bool, end: u64, sink: &mut impl Sink) {
        if key {
            sink.key(self.depth(), self.token_at, end);
            self.state = State::Colon;
        } else {
            sink.end(self.depth(), Kind::String, end);
            self.after_value();
        }
    }

    fn end_number(&mut self, num: Num, end: u64, sink: &mut impl Sink) {
        let kind = if matches!(num, Num::Frac | Num::Exp) { Kind::Number } else { Kind::Integer };
        sink.end(self.depth(), kind, end);
        self.after_value();
    }

    fn after_value(&mut self) {
        self.state = State::After;
        if self.stack.is_empty() {
            self.root_done = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Log(Vec<String>);

    impl Sink for Log {
        fn start(&mut self, depth: usize, kind: Kind, at: u64) {
            self.0.push(format!("s{depth}{kind:?}@{at}"));
        }
        fn end(&mut self, depth: usize, kind: Kind, end: u64) {
            self.0.push(format!("e{depth}{kind:?}@{end}"));
        }
        fn key(&mut self, depth: usize, at: u64, end: u64) {
            self.0.push(format!("k{depth}@{at}..{end}"));
        }
    }

    fn run(doc: &[u8], chunk: usize) -> Result<Vec<String>, StreamError> {
        let mut t = Tokenizer::new();
        let mut log = Log::default();
        for c in doc.chunks(chunk.max(1)) {
            t.feed(c, &mut log)?;
        }
        t.finish(&mut log)?;
        Ok(log.0)
    }

    #[test]
    fn offsets_do_not_depend_on_block_boundaries() {
        let doc = br#" {"a": [1, -2.5e3, "x\"\u00e9"], "b": {"c": null, "d": true}} "#;
        let whole = run(doc, doc.len()).unwrap();
        for chunk in 1..8 {
            assert_eq!(run(doc, chunk).unwrap(), whole, "chunk {chunk}");
        }
        assert_eq!(whole[0], "s0Object@1");
        assert_eq!(whole[1], "k1@2..5");
        assert!(whole.contains(&"e2Number@17".to_string()), "{whole:?}");
        assert_eq!(whole.last().unwrap(), "e0Object@61");
    }

    #[test]
    fn the_grammar_agrees_with_serde_json() {
        let cases: &[&[u8]] = &[
            b"[1,2]",
            b"[1,]",
            b"{\"a\":1,}",
            b"[01]",
            b"[1.]",
            b"[-]",
            b"[1e]",
            b"[1e+5]",
            b"[tru]",
            b"[nul]",
            b"\"a\x01b\"",
            b"\"\\x\"",
            b"\"\\u12g4\"",
            b"[1] [2]",
            b"{\"a\" 1}",
            b"{1:2}",
            b"[}",
            b"{]",
            b"",
            b"   ",
            b"0",
            b"-0.0e-0",
            b"[\"\xff\"]",
            b"{\"a\":{\"b\":[[]]}}",
            b"[",
            b"\"open",
        ];
        for &c in cases {
            let ours = run(c, 3).is_ok();
            let theirs = serde_json::from_slice::<serde::de::IgnoredAny>(c).is_ok()
                // serde_json refuses invalid UTF-8; the folds read it as U+FFFD.
                || c == b"[\"\xff\"]";
            assert_eq!(ours, theirs, "{}", String::from_utf8_lossy(c));
        }
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert!(matches!(run(deep.as_bytes(), 100), Err(StreamError::TooDeep(_))));
    }
}
