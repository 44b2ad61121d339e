//! Shared pieces of the fuzz targets: structured input built with
//! `arbitrary` (whose `Debug` prints a reproduction that can be pasted into
//! `tests/it/fuzz_regressions.rs`), the naive reference model of the text
//! contract (the same one as `tests/it/props.rs`), and helpers that drive the
//! scanner and the renderer.

use std::fmt::{self, Write as _};
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use outbox::render::envelope::{self, Budgets};
use outbox::render::facts::{RunFacts, Stream};
use outbox::stream::line::LineBody;
use outbox::stream::scan::{ScanConfig, Scanner};
use outbox::stream::signal;
use regex::bytes::Regex;

/// Generated inputs are capped so one execution stays fast.
pub const MAX_INPUT: usize = 3 << 20;
/// Bytes from pieces other than `Huge` runs: many lines make an execution
/// slow, and a few hundred KiB already cross every buffer but `LINE_CAP`.
pub const MAX_SMALL: usize = 256 << 10;
/// The scanner's `LINE_CAP` (an open line is kept whole up to here).
pub const LINE_CAP: usize = 1 << 20;

/// A short literal the input is built from.
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lit {
    Error,
    ErrorUpper,
    Failed,
    Panic,
    Exception,
    Terror,
    Errors,
    Colon,
    Space,
    Tab,
    Japanese,
    Emoji,
    EAcute,
    Bidi,
    C1Csi,
    Fffd,
    BrokenE2,
    BrokenF0,
    LoneFf,
    LoneC3,
    Surrogate,
    Overlong,
    AnsiRed,
    AnsiReset,
    Osc,
    OscOpen,
    Charset,
    LoneEsc,
    Bel,
    Nul,
    Del,
    MarkerTail,
    MarkerLike,
    HeaderOpen,
    HeaderClose,
    CutMarker,
    Digits,
}

impl Lit {
    pub fn bytes(self) -> &'static [u8] {
        match self {
            Lit::Error => b"error",
            Lit::ErrorUpper => b"ERROR:",
            Lit::Failed => b" FAILED ",
            Lit::Panic => b"panic",
            Lit::Exception => b"Exception",
            Lit::Terror => b"terror",
            Lit::Errors => b"errors",
            Lit::Colon => b": ",
            Lit::Space => b" ",
            Lit::Tab => b"\t",
            Lit::Japanese => "日本語エラー".as_bytes(),
            Lit::Emoji => "😀".as_bytes(),
            Lit::EAcute => "é".as_bytes(),
            Lit::Bidi => "\u{202e}".as_bytes(),
            Lit::C1Csi => "\u{9b}31m".as_bytes(),
            Lit::Fffd => "\u{fffd}".as_bytes(),
            Lit::BrokenE2 => b"\xe2\x82",
            Lit::BrokenF0 => b"\xf0\x9f\x98",
            Lit::LoneFf => b"\xff",
            Lit::LoneC3 => b"\xc3",
            Lit::Surrogate => b"\xed\xa0\x80",
            Lit::Overlong => b"\xc0\xaf",
            Lit::AnsiRed => b"\x1b[31m",
            Lit::AnsiReset => b"\x1b[0m",
            Lit::Osc => b"\x1b]0;title\x07",
            Lit::OscOpen => b"\x1b]8;;",
            Lit::Charset => b"\x1b(B",
            Lit::LoneEsc => b"\x1b",
            Lit::Bel => b"\x07",
            Lit::Nul => b"\x00",
            Lit::Del => b"\x7f",
            Lit::MarkerTail => b"--- tail 1/1 lines ---",
            Lit::MarkerLike => b"--- a ---",
            Lit::HeaderOpen => b"<<<OUTBOX-HEADER",
            Lit::HeaderClose => b"OUTBOX-HEADER",
            Lit::CutMarker => "…[3 chars cut]…".as_bytes(),
            Lit::Digits => b"12345",
        }
    }
}

/// What a repeated run is made of.
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    X,
    Space,
    Newline,
    ErrorLine,
    CrlfLine,
    Japanese,
    Invalid,
    Ansi,
    Lit(Lit),
}

impl Unit {
    pub fn bytes(self) -> &'static [u8] {
        match self {
            Unit::X => b"x",
            Unit::Space => b" ",
            Unit::Newline => b"\n",
            Unit::ErrorLine => b"error\n",
            Unit::CrlfLine => b"ab\r\n",
            Unit::Japanese => "日".as_bytes(),
            Unit::Invalid => b"\xff",
            Unit::Ansi => b"\x1b[0m",
            Unit::Lit(l) => l.bytes(),
        }
    }
}

/// A fragment of generated input.
#[derive(Arbitrary, Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Any bytes.
    Bytes(Vec<u8>),
    /// ASCII letters and spaces, mapped from any bytes.
    Text(Vec<u8>),
    Lit(Lit),
    Newline,
    Crlf,
    Cr,
    /// A run of up to 255 units.
    Repeat(Unit, u8),
    /// A run of up to 8191 units.
    Long(Unit, u16),
    /// A run of about `LINE_CAP` bytes, on either side of it.
    Huge(Unit, u16),
    /// Forces a block boundary here (in the targets that split).
    Boundary,
}

impl Piece {
    /// Bytes this piece adds to an input (before the `MAX_INPUT` cap).
    pub fn len(&self) -> usize {
        match self {
            Piece::Bytes(b) | Piece::Text(b) => b.len(),
            Piece::Lit(l) => l.bytes().len(),
            Piece::Newline | Piece::Cr => 1,
            Piece::Crlf => 2,
            Piece::Repeat(u, n) => u.bytes().len() * *n as usize,
            Piece::Long(u, n) => u.bytes().len() * long_count(*n),
            Piece::Huge(u, n) => huge_unit(*u).len() * huge_count(*u, *n),
            Piece::Boundary => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends this piece's bytes to `out` (never past `MAX_INPUT`).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let room = MAX_INPUT.saturating_sub(out.len());
        match self {
            Piece::Bytes(b) => out.extend_from_slice(&b[..b.len().min(room)]),
            Piece::Text(b) => out.extend(b.iter().take(room).map(|&c| text_byte(c))),
            Piece::Lit(l) => push_capped(out, l.bytes(), room),
            Piece::Newline => push_capped(out, b"\n", room),
            Piece::Crlf => push_capped(out, b"\r\n", room),
            Piece::Cr => push_capped(out, b"\r", room),
            Piece::Repeat(u, n) => repeat_into(out, u.bytes(), *n as usize, room),
            Piece::Long(u, n) => repeat_into(out, u.bytes(), long_count(*n), room),
            Piece::Huge(u, n) => repeat_into(out, huge_unit(*u), huge_count(*u, *n), room),
            Piece::Boundary => {}
        }
    }
}

fn push_capped(out: &mut Vec<u8>, b: &[u8], room: usize) {
    if b.len() <= room {
        out.extend_from_slice(b);
    }
}

/// Appends `n` copies of `unit` (as many as fit in `room`), by doubling.
fn repeat_into(out: &mut Vec<u8>, unit: &[u8], n: usize, room: usize) {
    let n = n.min(room / unit.len().max(1));
    if n == 0 {
        return;
    }
    let start = out.len();
    let total = n * unit.len();
    out.reserve(total);
    out.extend_from_slice(unit);
    while out.len() - start < total {
        let have = out.len() - start;
        out.extend_from_within(start..start + have.min(total - have));
    }
}

/// Units in a `Long` run (many lines make an execution slow).
pub fn long_count(n: u16) -> usize {
    n as usize % 8192
}

/// A `Huge` run is one long line: units with a newline become `x`.
pub fn huge_unit(u: Unit) -> &'static [u8] {
    let b = u.bytes();
    if b.contains(&b'\n') {
        b"x"
    } else {
        b
    }
}

/// Units in a `Huge` run: from `LINE_CAP - 4096` to `LINE_CAP + 4095` bytes.
pub fn huge_count(u: Unit, n: u16) -> usize {
    (LINE_CAP - 4096 + (n as usize % 8192)) / huge_unit(u).len()
}

fn text_byte(c: u8) -> u8 {
    const SET: &[u8] = b"abcdefghijklmnopqrstuvwxyz    ";
    SET[c as usize % SET.len()]
}

/// A generated input: its pieces, and where the block boundaries fall.
#[derive(Clone, PartialEq, Eq)]
pub struct Input {
    pub pieces: Vec<Piece>,
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut pieces = Vec::new();
        let mut huge = 0;
        let mut len = 0usize;
        let mut small = 0usize;
        u.arbitrary_loop(Some(0), Some(256), |u| {
            let p: Piece = u.arbitrary()?;
            if matches!(p, Piece::Huge(..)) {
                huge += 1;
                if huge > 2 {
                    return Ok(std::ops::ControlFlow::Continue(()));
                }
            } else if small + p.len() > MAX_SMALL {
                return Ok(std::ops::ControlFlow::Continue(()));
            } else {
                small += p.len();
            }
            len += p.len();
            pieces.push(p);
            Ok(if len >= MAX_INPUT { std::ops::ControlFlow::Break(()) } else { std::ops::ControlFlow::Continue(()) })
        })?;
        Ok(Input { pieces })
    }
}

impl Input {
    /// The input's bytes and the offsets of its `Boundary` pieces.
    pub fn build(&self) -> (Vec<u8>, Vec<usize>) {
        let mut out = Vec::new();
        let mut cuts = Vec::new();
        for p in &self.pieces {
            if matches!(p, Piece::Boundary) {
                cuts.push(out.len());
            }
            p.emit(&mut out);
        }
        (out, cuts)
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.build().0
    }
}

impl fmt::Debug for Input {
    /// A Rust expression that builds the same bytes (long runs as
    /// `.repeat`), plus the boundary offsets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (data, cuts) = self.build();
        write!(f, "{} /* {} bytes; boundaries at {:?} */", bytes_expr(&data), data.len(), cuts)
    }
}

/// A Rust expression for `data`: a byte string literal, with runs of one
/// repeated unit (1-6 bytes, repeated at least 64 times) as `.repeat(n)`.
pub fn bytes_expr(data: &[u8]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut lit = Vec::new();
    let mut i = 0;
    'outer: while i < data.len() {
        for ulen in 1..=6 {
            if i + ulen * 64 > data.len() {
                break;
            }
            let unit = &data[i..i + ulen];
            let mut n = 1;
            while i + (n + 1) * ulen <= data.len() && &data[i + n * ulen..i + (n + 1) * ulen] == unit {
                n += 1;
            }
            if n >= 64 {
                if !lit.is_empty() {
                    parts.push(format!("b\"{}\".to_vec()", escape(&lit)));
                    lit.clear();
                }
                parts.push(format!("b\"{}\".repeat({n})", escape(unit)));
                i += n * ulen;
                continue 'outer;
            }
        }
        lit.push(data[i]);
        i += 1;
    }
    if !lit.is_empty() || parts.is_empty() {
        parts.push(format!("b\"{}\".to_vec()", escape(&lit)));
    }
    if parts.len() == 1 {
        parts.pop().unwrap()
    } else {
        format!("[{}].concat()", parts.join(", "))
    }
}

/// Escapes bytes for a Rust byte string literal.
pub fn escape(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        match c {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0x20..=0x7e => s.push(c as char),
            _ => {
                let _ = write!(s, "\\x{c:02x}");
            }
        }
    }
    s
}

/// The signal pattern: the default, or one of a few user patterns that
/// exercise anchors, empty matches and multi-line matches.
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalChoice {
    Default,
    Plain,
    StartAnchor,
    EndAnchor,
    Empty,
    EmptyLine,
    Digits,
    CaseInsensitive,
    AcrossNewline,
    Alternation,
    WordBoundary,
    NonAscii,
    Whitespace,
}

impl SignalChoice {
    pub fn pattern(self) -> Option<&'static str> {
        match self {
            SignalChoice::Default => None,
            SignalChoice::Plain => Some("x"),
            SignalChoice::StartAnchor => Some("^e"),
            SignalChoice::EndAnchor => Some("r$"),
            SignalChoice::Empty => Some(""),
            SignalChoice::EmptyLine => Some("^$"),
            SignalChoice::Digits => Some(r"\d{3}"),
            SignalChoice::CaseInsensitive => Some("(?i)fail"),
            SignalChoice::AcrossNewline => Some(r"r\ne"),
            SignalChoice::Alternation => Some("error|x{3}"),
            SignalChoice::WordBoundary => Some(r"\bx\b"),
            SignalChoice::NonAscii => Some("日本|\u{fffd}"),
            SignalChoice::Whitespace => Some(r"r\s"),
        }
    }

    pub const ALL: [SignalChoice; 13] = [
        SignalChoice::Default,
        SignalChoice::Plain,
        SignalChoice::StartAnchor,
        SignalChoice::EndAnchor,
        SignalChoice::Empty,
        SignalChoice::EmptyLine,
        SignalChoice::Digits,
        SignalChoice::CaseInsensitive,
        SignalChoice::AcrossNewline,
        SignalChoice::Alternation,
        SignalChoice::WordBoundary,
        SignalChoice::NonAscii,
        SignalChoice::Whitespace,
    ];

    /// The compiled matcher, built once per process (compiling costs far
    /// more than an execution).
    pub fn regex(self) -> Regex {
        static CACHE: OnceLock<Vec<Regex>> = OnceLock::new();
        let all = CACHE.get_or_init(|| {
            SignalChoice::ALL.iter().map(|c| signal::matcher(c.pattern()).expect("fixed patterns compile")).collect()
        });
        let i = SignalChoice::ALL.iter().position(|&c| c == self).expect("listed");
        all[i].clone()
    }
}

/// Budgets as the command line allows them (budget >= 1000, tail >= 1).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct FuzzBudgets {
    pub budget: usize,
    pub tail_budget: usize,
    pub head_budget: usize,
    pub tail_lines: usize,
    pub spill_limit: u64,
}

impl<'a> Arbitrary<'a> for FuzzBudgets {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let budget = 1000 + u.arbitrary::<u16>()? as usize;
        let tail_budget = u.arbitrary::<u16>()? as usize;
        let head_budget = u.arbitrary::<u16>()? as usize;
        let tail_lines = 1 + (u.arbitrary::<u8>()? as usize);
        let spill_limit = u.arbitrary::<u32>()? as u64;
        Ok(FuzzBudgets { budget, tail_budget, head_budget, tail_lines, spill_limit })
    }
}

impl fmt::Debug for FuzzBudgets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Budgets {{ budget: {}, tail_budget: {}, head_budget: {}, tail_lines: {}, spill_limit: {} }}",
            self.budget, self.tail_budget, self.head_budget, self.tail_lines, self.spill_limit
        )
    }
}

impl FuzzBudgets {
    pub fn budgets(&self) -> Budgets {
        Budgets {
            budget: self.budget,
            tail_budget: self.tail_budget,
            head_budget: self.head_budget,
            tail_lines: self.tail_lines,
            spill_limit: self.spill_limit,
        }
    }

    pub fn scan_config(&self, re: &Regex) -> ScanConfig {
        ScanConfig {
            budget: self.budget,
            tail_lines: self.tail_lines,
            tail_budget: self.tail_budget,
            signal: re.clone(),
        }
    }
}

pub use outbox::reference::{lossy_chars, model, Model};

/// Wrap mode's facts in a JSON or NDJSON fold's header: any command text
/// (the application passes it whole), status, signal, duration, stream.
#[derive(Arbitrary, Debug, Clone)]
pub struct WrapFacts {
    pub command: String,
    pub exit_status: Option<i32>,
    pub killed_by_signal: Option<u8>,
    pub duration_ms: Option<u64>,
    pub stderr_apart: bool,
}

impl WrapFacts {
    pub fn info(&self) -> outbox::render::facts::CommandInfo {
        outbox::render::facts::CommandInfo {
            command: self.command.clone(),
            exit_status: self.exit_status,
            killed_by_signal: self.killed_by_signal.map(i32::from),
            duration_ms: self.duration_ms,
            timed_out: false,
            timeout_ms: None,
        }
    }

    pub fn stream(&self) -> Option<Stream> {
        self.stderr_apart.then_some(Stream::Stdout)
    }

    /// The run facts of a fold: label `t`, the stored copy kept or not,
    /// and these command facts when there are any.
    pub fn facts(wrap: Option<&WrapFacts>, kept: bool) -> RunFacts {
        RunFacts {
            label: "t".into(),
            id: "t-0123456789ab".into(),
            full_output: kept.then(|| "/home/u/.cache/outbox/t-0123456789ab".into()),
            spill_error: (!kept).then(|| "No space left on device (os error 28)".into()),
            command: wrap.map(WrapFacts::info),
            stream: wrap.and_then(WrapFacts::stream),
            ..RunFacts::default()
        }
    }
}

/// Block boundaries: the running sums of `sizes` (each at least 1), the
/// forced `cuts`, and the end of the input; sorted, deduplicated.
pub fn boundaries(len: usize, sizes: &[u16], cuts: &[usize]) -> Vec<usize> {
    let mut v: Vec<usize> = Vec::new();
    let mut at = 0usize;
    for &s in sizes {
        at += (s as usize).max(1);
        if at >= len {
            break;
        }
        v.push(at);
    }
    v.extend(cuts.iter().copied().filter(|&c| c > 0 && c < len));
    v.push(len);
    v.sort_unstable();
    v.dedup();
    v
}

/// Feeds `data` to a fresh scanner, one block per boundary, and finishes.
pub fn scan(data: &[u8], ends: &[usize], cfg: ScanConfig) -> Scanner {
    outbox::reference::scan_blocks(cfg, outbox::reference::blocks_at(data, ends))
}

pub fn run_info() -> RunFacts {
    RunFacts {
        label: "t".into(),
        id: "t-000000000000".into(),
        full_output: Some("/store/t-000000000000".into()),
        ..RunFacts::default()
    }
}

pub fn render(sc: &Scanner, b: &Budgets, info: &RunFacts, re: &Regex) -> String {
    envelope::render(&sc.result(), b, info, re)
}

/// An owned copy of a line body, to compare two scans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Whole(Vec<u8>),
    Cut { prefix: Vec<u8>, suffix: Vec<u8>, bytes: u64, chars: u64 },
}

impl From<LineBody<'_>> for Body {
    fn from(b: LineBody<'_>) -> Body {
        match b {
            LineBody::Whole(w) => Body::Whole(w.to_vec()),
            LineBody::Cut { prefix, suffix, bytes, chars, .. } => {
                Body::Cut { prefix: prefix.to_vec(), suffix: suffix.to_vec(), bytes, chars }
            }
        }
    }
}

impl Body {
    /// Whether this body is a faithful view of `line`: equal when whole;
    /// when cut, its ends are the line's ends and its counts the line's.
    pub fn represents(&self, line: &[u8]) -> bool {
        match self {
            Body::Whole(w) => w == line,
            Body::Cut { prefix, suffix, bytes, chars } => {
                line.starts_with(prefix)
                    && line.ends_with(suffix)
                    && *bytes == line.len() as u64
                    && *chars == lossy_chars(line)
            }
        }
    }
}

/// The first three lines of an envelope must be the header; returns the
/// parsed JSON object.
pub fn header(out: &str) -> serde_json::Value {
    let mut it = out.split('\n');
    assert_eq!(it.next(), Some(envelope::HEADER_OPEN), "envelope must open with the header marker");
    let json = it.next().expect("header JSON line");
    let v: serde_json::Value = serde_json::from_str(json).expect("header line is JSON");
    assert!(v.is_object(), "header is a JSON object");
    assert_eq!(it.next(), Some(envelope::HEADER_CLOSE), "header close marker");
    v
}

/// The last `n` chars of `s`.
pub fn last_chars(s: &str, n: usize) -> String {
    let k = s.chars().count();
    s.chars().skip(k.saturating_sub(n)).collect()
}

/// The displayed end of a line too long to keep whole, as far as its kept
/// end (at least `4 x 512` bytes) can tell: the last 10 chars of what the
/// line's last 1 KiB displays as, parsed from the line's start (so an
/// escape sequence across that point is seen whole). Fewer, down to none,
/// when those bytes are mostly escape sequences (which display as nothing),
/// because then the visible end lies in the part of the line not kept. The
/// kept end starts at least 1 KiB earlier, more than an escape sequence
/// (`sanitize::MAX_SEQUENCE` chars) needs to come back in step.
pub fn displayed_end(line: &[u8]) -> String {
    let mut s = line.len().saturating_sub(1024);
    while s < line.len() && (line[s] as i8) < -64 {
        s += 1;
    }
    let from = String::from_utf8_lossy(&line[..s]).chars().count();
    last_chars(outbox::text::sanitize::display(line).text_from(from), 10)
}

/// Whether a displayed line would be taken for one of the envelope's own
/// markers (the renderer then escapes its first char).
pub fn imitates_marker(text: &str) -> bool {
    (text.starts_with("--- ") && text.trim_end().ends_with(" ---"))
        || text.starts_with(envelope::HEADER_OPEN)
        || text.starts_with(envelope::HEADER_CLOSE)
}

/// A char that must never reach a terminal raw: the library's one list,
/// tab and newline excepted (each printer shows those as they are).
pub fn is_forbidden_char(c: char) -> bool {
    c != '\t' && c != '\n' && outbox::text::sanitize::is_unsafe_char(c)
}

/// A JSON value to generate documents from; written by [`JVal::write`]
/// with the quirks real producers have (duplicate keys, odd numbers, raw
/// non-ASCII, escapes, long strings).
#[derive(Arbitrary, Debug, Clone)]
pub enum JVal {
    Null,
    Bool(bool),
    Int(i64),
    BigInt(u64, u64),
    Float(f64),
    Exp(i32, i16),
    Str(String),
    Escaped(Vec<u8>),
    Long(u16, char),
    Arr(Vec<JVal>),
    Obj(Vec<(JKey, JVal)>),
    Deep(u16),
}

/// Object keys from a small set, so records share keys and duplicates occur.
#[derive(Arbitrary, Debug, Clone)]
pub enum JKey {
    Id,
    Name,
    Items,
    Data,
    Nested,
    Any(String),
}

impl JKey {
    fn name(&self) -> &str {
        match self {
            JKey::Id => "id",
            JKey::Name => "name",
            JKey::Items => "items",
            JKey::Data => "data",
            JKey::Nested => "nested",
            JKey::Any(s) => s,
        }
    }
}

impl JVal {
    /// Appends this value as JSON text (valid unless a float is not finite,
    /// which is written as `null`).
    pub fn write(&self, out: &mut String) {
        match self {
            JVal::Null => out.push_str("null"),
            JVal::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            JVal::Int(i) => {
                let _ = write!(out, "{i}");
            }
            JVal::BigInt(a, b) => {
                let _ = write!(out, "{a}{b:020}");
            }
            JVal::Float(f) if f.is_finite() => {
                let _ = write!(out, "{f:?}");
            }
            JVal::Float(_) => out.push_str("null"),
            JVal::Exp(m, e) => {
                let _ = write!(out, "{m}e{e}");
            }
            JVal::Str(s) => json_str(s, out),
            JVal::Escaped(b) => {
                out.push('"');
                for &c in b {
                    let _ = match c % 8 {
                        0 => write!(out, "\\u{:04x}", 0xd800 + (c as u32) * 3),
                        1 => write!(out, "\\u{:04x}", 0xdc00 + (c as u32)),
                        2 => write!(out, "\\n"),
                        3 => write!(out, "\\u001b[31m"),
                        4 => write!(out, "\\u202e"),
                        5 => write!(out, "\\\\"),
                        6 => write!(out, "\\/"),
                        _ => write!(out, "\\u{:04x}", c),
                    };
                }
                out.push('"');
            }
            JVal::Long(n, c) => {
                let s: String = std::iter::repeat_n(*c, *n as usize % 20_000).collect();
                json_str(&s, out);
            }
            JVal::Arr(v) => {
                out.push('[');
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    x.write(out);
                }
                out.push(']');
            }
            JVal::Obj(v) => {
                out.push('{');
                for (i, (k, x)) in v.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    json_str(k.name(), out);
                    out.push(':');
                    x.write(out);
                }
                out.push('}');
            }
            JVal::Deep(n) => {
                let n = *n as usize % 1100;
                out.push_str(&"[".repeat(n));
                out.push('1');
                out.push_str(&"]".repeat(n));
            }
        }
    }

    pub fn to_json(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }
}

/// A JSON string literal, escaped as serde_json does.
pub fn json_str(s: &str, out: &mut String) {
    out.push_str(&serde_json::to_string(s).expect("a string serialises"));
}

/// Strict JSON: serde_json's parser (no NaN, no comments, no trailing
/// commas; lone surrogate escapes rejected).
/// Nesting is not limited here (the folds allow 1,024 levels).
pub fn strict_json(s: &str) -> Result<serde_json::Value, serde_json::Error> {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_str(s);
    de.disable_recursion_limit();
    let v = serde_json::Value::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// The nesting depth of a JSON text (brackets outside strings).
pub fn json_depth(b: &[u8]) -> usize {
    let (mut depth, mut max, mut in_str, mut esc) = (0usize, 0usize, false, false);
    for &c in b {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Whether `s` is one JSON value by RFC 8259's grammar (whitespace around
/// it allowed), whatever the size of its numbers.
pub fn json_grammar_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = ws(b, 0);
    match value(b, i, 0) {
        Some(j) => {
            i = ws(b, j);
            i == b.len()
        }
        None => false,
    }
}

fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

fn value(b: &[u8], i: usize, depth: usize) -> Option<usize> {
    if depth > 4096 {
        return None;
    }
    match *b.get(i)? {
        b'{' => {
            let mut j = ws(b, i + 1);
            if b.get(j) == Some(&b'}') {
                return Some(j + 1);
            }
            loop {
                j = string(b, j)?;
                j = ws(b, j);
                if b.get(j) != Some(&b':') {
                    return None;
                }
                j = ws(b, value(b, ws(b, j + 1), depth + 1)?);
                match b.get(j)? {
                    b',' => j = ws(b, j + 1),
                    b'}' => return Some(j + 1),
                    _ => return None,
                }
            }
        }
        b'[' => {
            let mut j = ws(b, i + 1);
            if b.get(j) == Some(&b']') {
                return Some(j + 1);
            }
            loop {
                j = ws(b, value(b, j, depth + 1)?);
                match b.get(j)? {
                    b',' => j = ws(b, j + 1),
                    b']' => return Some(j + 1),
                    _ => return None,
                }
            }
        }
        b'"' => string(b, i),
        b't' => b[i..].starts_with(b"true").then_some(i + 4),
        b'f' => b[i..].starts_with(b"false").then_some(i + 5),
        b'n' => b[i..].starts_with(b"null").then_some(i + 4),
        _ => number(b, i),
    }
}

fn string(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        match *b.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => match *b.get(j + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
                b'u' if b.get(j + 2..j + 6)?.iter().all(u8::is_ascii_hexdigit) => j += 6,
                _ => return None,
            },
            0x00..=0x1f => return None,
            _ => j += 1,
        }
    }
}

fn number(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |b: &[u8], mut i: usize| {
        let s = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i > s).then_some(i)
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match b.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(b, i)?,
        _ => return None,
    };
    if b.get(i) == Some(&b'.') {
        i = digits(b, i + 1)?;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        i = digits(b, i)?;
    }
    Some(i)
}

/// Checks a fold's output: JSON by the grammar, and parsed by serde_json
/// (which, like Go's encoding/json, rejects a number past f64's range).
pub fn check_fold_json(out: &str) -> serde_json::Value {
    assert!(json_grammar_ok(out), "fold output is not JSON: {out}");
    strict_json(out).unwrap_or_else(|e| panic!("fold output does not parse with serde_json ({e}): {out}"))
}
