//! `outbox show`: prints a stored original, or some of its lines
//! (`--lines`), or the lines that match a pattern (`--grep`), with
//! credentials masked as the envelope masks them (`text::secrets`; the
//! lines of a private key block, followed in order, masked whole);
//! `--raw` prints the exact bytes and says so on stderr. Reading commands
//! never create the store.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, bail};
use regex::bytes::Regex;

use super::lookup::{self, candidates, Accept, Miss};
use super::meta::{read_meta_at, MetaState};
use super::sys::StoreDir;
use super::{
    digest_hex, format_age, hash_file, now_secs, path_text, plural, shown, split_id, StoreEnv, COPY_BUF,
    DEFAULT_TTL_SECONDS,
};
use crate::text::secrets::{self, KeyBlocks};
use crate::text::utf8::count_chars;

/// Lines `first..=last` (1-based); `last: None` runs to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRange {
    pub first: u64,
    pub last: Option<u64>,
}

impl std::fmt::Display for LineRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.last {
            Some(l) => write!(f, "{}:{l}", self.first),
            None => write!(f, "{}:", self.first),
        }
    }
}

/// Parses `A:B`, `A:` (to the end), `:B` (from the start) or `N` (one line).
pub fn parse_line_range(s: &str) -> Result<LineRange, String> {
    let usage = "use A:B (1-based, both included), A: to the end, :B from the start, or N for one line";
    let num = |t: &str, default: Option<u64>| -> Result<Option<u64>, String> {
        let t = t.trim();
        if t.is_empty() {
            return Ok(default);
        }
        match t.parse::<u64>() {
            Ok(0) => Err(format!("'{s}': lines are numbered from 1; {usage}")),
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(format!("'{s}' is not a line range: {usage}")),
        }
    };
    let (first, last) = match s.split_once(':') {
        Some((a, b)) => (num(a, Some(1))?.unwrap_or(1), num(b, None)?),
        None => {
            let n = num(s, None)?.ok_or_else(|| format!("'{s}' is not a line range: {usage}"))?;
            (n, Some(n))
        }
    };
    if let Some(l) = last {
        if l < first {
            return Err(format!("'{s}' is empty: its first line comes after its last; {usage}"));
        }
    }
    Ok(LineRange { first, last })
}

/// `outbox show` options.
#[derive(Debug, Clone, Default)]
pub struct ShowOptions {
    /// Which entry: its id (the envelope header's `id`, or from `outbox
    /// ls`), a unique prefix of one, `last` (the newest entry), or a label
    /// (its newest entry). An id or a prefix wins over a label.
    pub id: String,

    /// Print only lines A to B, 1-based and both included, exactly as
    /// stored (terminators too). `A:` runs to the end, `:B` starts at the
    /// first line, `N` is one line.
    pub lines: Option<LineRange>,

    /// Print the lines that match REGEX (Rust regex syntax; `(?i)` for any
    /// case) as `LINENO: TEXT`, control characters escaped. With --lines,
    /// only lines in that range are searched. Compiled by the caller, so a
    /// bad pattern is a usage error.
    pub grep: Option<Regex>,

    /// Print the exact bytes, credentials included (said on stderr).
    pub raw: bool,
}

/// How a `--lines` / `--grep` pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LinesDone {
    /// Lines in the entry, when it was read to its end.
    total: Option<u64>,
    /// Lines printed (`--grep`: matching lines).
    printed: u64,
}

/// Copies lines `range` of `r` to `out`, exact bytes and terminators, in
/// chunks of `buf_size`; stops reading after the last line asked for.
fn copy_lines(r: &mut impl Read, out: &mut impl Write, range: LineRange, buf_size: usize) -> io::Result<LinesDone> {
    let last = range.last.unwrap_or(u64::MAX);
    let mut buf = vec![0u8; buf_size.max(1)];
    // Number of the line the next byte belongs to.
    let mut line = 1u64;
    let mut ends_in_newline = true;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        ends_in_newline = chunk[n - 1] == b'\n';
        let mut pos = 0;
        while line < range.first && pos < n {
            match memchr::memchr(b'\n', &chunk[pos..]) {
                Some(i) => {
                    pos += i + 1;
                    line += 1;
                }
                None => pos = n,
            }
        }
        if pos == n {
            continue;
        }
        // In range from `pos`: find where line `last` ends, if here.
        let start = pos;
        let mut end = n;
        let mut done = false;
        while pos < n {
            match memchr::memchr(b'\n', &chunk[pos..]) {
                Some(i) => {
                    pos += i + 1;
                    line += 1;
                    if line > last {
                        end = pos;
                        done = true;
                        break;
                    }
                }
                None => pos = n,
            }
        }
        out.write_all(&chunk[start..end])?;
        if done {
            return Ok(LinesDone { total: None, printed: last - range.first + 1 });
        }
    }
    let total = line - 1 + u64::from(!ends_in_newline);
    let printed = total.min(last).saturating_sub(range.first - 1);
    Ok(LinesDone { total: Some(total), printed })
}

/// Copies lines `range` of `r` to `out` as stored, but with credentials
/// masked: each line through the masker, a line inside a private key
/// block (followed from the first line, also before the range) replaced
/// whole. A line is masked whole, so memory grows with the longest line,
/// as with `--grep`. Returns how it ended and the bytes read.
fn copy_masked(r: impl Read, out: &mut impl Write, range: LineRange) -> io::Result<(LinesDone, u64)> {
    let last = range.last.unwrap_or(u64::MAX);
    let mut reader = BufReader::with_capacity(COPY_BUF, r);
    let mut keys = KeyBlocks::default();
    let mut line = Vec::new();
    let (mut lineno, mut printed, mut read) = (0u64, 0u64, 0u64);
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        read += n as u64;
        lineno += 1;
        if lineno > last {
            return Ok((LinesDone { total: None, printed }, read));
        }
        let body = line.strip_suffix(b"\n").map_or(&line[..], |b| b.strip_suffix(b"\r").unwrap_or(b));
        let inside = keys.line(body);
        if lineno < range.first {
            continue;
        }
        if inside {
            out.write_all(secrets::key_line_marker(count_chars(body)).as_bytes())?;
        } else {
            out.write_all(&secrets::mask_bytes(body))?;
        }
        out.write_all(&line[body.len()..])?;
        printed += 1;
    }
    Ok((LinesDone { total: Some(lineno), printed }, read))
}

/// Prints `LINENO: TEXT` for each line in `range` that `re` matches (the
/// terminator and a `\r` before it are not matched), as the envelope shows
/// a line (credentials masked). A line is matched whole, so memory grows
/// with the longest line, as in grep.
fn grep_lines(r: impl Read, out: &mut impl Write, re: &Regex, range: LineRange) -> io::Result<LinesDone> {
    let last = range.last.unwrap_or(u64::MAX);
    let mut reader = BufReader::with_capacity(COPY_BUF, r);
    let mut keys = KeyBlocks::default();
    let mut line = Vec::new();
    let mut lineno = 0u64;
    let mut printed = 0u64;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        lineno += 1;
        if lineno < range.first {
            continue;
        }
        if lineno > last {
            return Ok(LinesDone { total: None, printed });
        }
        let mut body = line.as_slice();
        if let Some(b) = body.strip_suffix(b"\n") {
            body = b.strip_suffix(b"\r").unwrap_or(b);
        }
        let inside = secrets::enabled() && keys.line(body);
        if re.is_match(body) {
            if inside {
                writeln!(out, "{lineno}: {}", secrets::key_line_marker(count_chars(body)))?;
            } else {
                let shown = crate::text::sanitize::display(body);
                writeln!(out, "{lineno}: {}", shown.text)?;
            }
            printed += 1;
        }
    }
    Ok(LinesDone { total: Some(lineno), printed })
}

/// The message for an id that is not (or no longer) in the store.
fn gone(id: &str) -> String {
    format!(
        "entry {id} is gone or expired: stored outputs are removed after their TTL (OUTBOX_TTL_SECONDS, \
         default 7 days), by outbox gc, or to keep the store under OUTBOX_MAX_STORE_BYTES; \
         re-run the source command to get its output again"
    )
}

/// The message for a name that picks no entry, or more than one.
pub(crate) fn miss_message(q: &str, miss: Miss, store: &Path) -> anyhow::Error {
    match miss {
        Miss::Malformed | Miss::NotFound { id_like: false } => anyhow!(
            "'{}' is not an entry id, an id prefix or a label in the store: ids look like stdin-3f2a9c1b7d4e \
             (the \"id\" of the envelope header; outbox ls lists them); if it was one, it is gone or expired: \
             re-run the source command to get its output again",
            shown(q)
        ),
        Miss::NotFound { id_like: true } => anyhow!(gone(q)),
        Miss::Ambiguous(names) => anyhow!(
            "'{q}' is ambiguous: {} ids start with it: {}; give more of the id",
            names.len(),
            candidates(&names)
        ),
        Miss::Io(e) => anyhow!(e).context(format!("cannot read the store {}", path_text(store))),
    }
}

/// `outbox show`: the original exactly, or some of its lines, after
/// checking that its bytes still hash to its id (see `verify`).
pub fn run_show(args: &ShowOptions, env: &StoreEnv) -> anyhow::Result<ExitCode> {
    let q = args.id.as_str();
    let path = env.dir()?.to_path_buf();
    let Some(store) = StoreDir::open_existing(&path)? else {
        return Err(miss_message(q, lookup::resolve_without_store(q), &path));
    };
    let id = lookup::resolve(&store, q, Accept::IdsLastLabels).map_err(|m| miss_message(q, m, &path))?;
    let id = id.as_str();

    // Metadata first: an entry is renamed into place after its metadata,
    // so an entry seen below without metadata lost it later.
    let meta = read_meta_at(&store, id);
    let (mut file, md) = match store.open_read(id) {
        Ok(x) => x,
        Err(e) if e.kind() == io::ErrorKind::NotFound => bail!(gone(id)),
        // A symlink, a FIFO, a file of another user: never read.
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            bail!("refusing to show {id} from {}: {e}; remove that name from the store", path_text(&path))
        }
        Err(e) => return Err(anyhow!(e).context(format!("cannot open entry {id} in {}", path_text(&path)))),
    };
    let now = now_secs();
    let expires_at = match &meta {
        MetaState::Ok(m) => m.expires_at(),
        _ => (md.mtime().max(0) as u64).saturating_add(DEFAULT_TTL_SECONDS),
    };
    if expires_at < now {
        bail!(
            "entry {id} is expired (its TTL ended {} ago) and will be removed by the next gc; \
             re-run the source command to get its output again",
            format_age(now - expires_at)
        );
    }
    if let MetaState::Ok(m) = &meta {
        if m.bytes != md.len() {
            bail!(
                "entry {id} does not match its metadata ({} bytes stored, {} recorded): it was changed or \
                 damaged; re-run the source command to get its output again",
                md.len(),
                m.bytes
            );
        }
    }
    verify(id, &mut file, &meta)?;
    match &meta {
        MetaState::Ok(m) if !m.complete => {
            let by = m.interrupted_by.as_deref().map(|s| format!(" by {}", shown(s))).unwrap_or_default();
            crate::say!(
                "warning: entry {id} is incomplete: it holds only what arrived before the run was \
                 interrupted{by}; re-run the source command for the whole output"
            );
        }
        MetaState::Ok(_) => {}
        MetaState::Missing => {
            crate::say!("warning: entry {id} has no metadata, so it is unknown whether it is complete")
        }
        MetaState::Invalid(why) => crate::say!(
            "warning: the metadata of entry {id} is unusable ({}), so it is unknown whether it is complete",
            shown(why)
        ),
    }

    let size = md.len();
    let stdout = io::stdout();
    if args.raw {
        secrets::set_enabled(false);
        crate::say!("note: --raw: entry {id} is printed exactly as stored, credentials included");
    }
    let masking = secrets::enabled();
    let result = match (args.lines, &args.grep) {
        (range, None) if masking => {
            let range = range.unwrap_or(LineRange { first: 1, last: None });
            let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
            let done = copy_masked(file.take(size), &mut out, range);
            done.and_then(|d| out.flush().map(|_| d)).map(|(d, read)| match args.lines {
                None if read < size => {
                    Some(format!("entry {id} shrank while it was read: only {read} of {size} bytes were printed"))
                }
                None => None,
                Some(range) => lines_problem(id, args, range, d),
            })
        }
        (None, None) => {
            // One descriptor, read to the size it had when opened: a gc that
            // unlinks the entry meanwhile cannot cut this short. io::copy
            // uses sendfile/copy_file_range when stdout allows it, a buffer
            // otherwise.
            let mut out = stdout.lock();
            io::copy(&mut file.take(size), &mut out).and_then(|n| out.flush().map(|_| n)).map(|n| {
                if n < size {
                    Some(format!("entry {id} shrank while it was read: only {n} of {size} bytes were printed"))
                } else {
                    None
                }
            })
        }
        (range, grep) => {
            let range = range.unwrap_or(LineRange { first: 1, last: None });
            let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
            let mut file = file;
            let done = match grep {
                Some(re) => grep_lines(file, &mut out, re, range),
                None => copy_lines(&mut file, &mut out, range, COPY_BUF),
            };
            done.and_then(|d| out.flush().map(|_| d)).map(|d| lines_problem(id, args, range, d))
        }
    };
    match result {
        Ok(None) => Ok(ExitCode::SUCCESS),
        Ok(Some(problem)) => bail!(problem),
        // The reader went away (`| head`): what it read was exact.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(anyhow!(e).context(format!("showing entry {id} failed; what was printed is incomplete"))),
    }
}

/// Re-hashes the whole entry before anything is printed, and leaves `file`
/// at its start. Printing cannot be taken back, so the check comes first,
/// at the cost of reading the entry twice. The digest expected is the
/// metadata's (all 256 bits); without usable metadata, the digits in the
/// id. A mismatch means the bytes were edited or damaged after they were
/// stored: an error, and nothing on stdout.
fn verify(id: &str, file: &mut File, meta: &MetaState) -> anyhow::Result<()> {
    let expected = match meta {
        MetaState::Ok(m) => m.digest.as_str(),
        _ => split_id(id).map_or("", |(_, hex)| hex),
    };
    let actual = hash_file(file).map_err(|e| anyhow!(e).context(format!("cannot read entry {id}")))?;
    if expected.is_empty() || !digest_hex(&actual).starts_with(expected) {
        bail!(
            "entry {id} was altered after it was stored: its bytes no longer hash to its recorded digest; \
             nothing was printed; remove it (outbox rm {id}) and re-run the source command"
        );
    }
    file.seek(SeekFrom::Start(0)).map_err(|e| anyhow!(e).context(format!("cannot read entry {id}")))?;
    Ok(())
}

/// Notes and errors about a `--lines` / `--grep` pass: an error (returned)
/// when nothing could be printed because the range starts past the end.
fn lines_problem(id: &str, args: &ShowOptions, range: LineRange, d: LinesDone) -> Option<String> {
    let total = d.total?;
    if total == 0 && range.first == 1 {
        crate::say!("note: entry {id} is empty");
        return None;
    }
    if range.first > total {
        return Some(format!(
            "--lines {range}: entry {id} has only {total} line{}; nothing was printed",
            plural(total)
        ));
    }
    if range.last.is_some_and(|l| l > total) {
        crate::say!("note: entry {id} has {total} line{}; showing lines {}:{total}", plural(total), range.first);
    }
    if args.grep.is_some() && d.printed == 0 {
        crate::say!("note: no line of entry {id} matches the --grep pattern");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    /// The contract of `--lines`, naively: split after each `\n`.
    fn naive_lines(data: &[u8]) -> Vec<&[u8]> {
        let mut v: Vec<&[u8]> = data.split_inclusive(|&b| b == b'\n').collect();
        if data.is_empty() {
            v.clear();
        }
        v
    }

    proptest! {
        #[test]
        fn copy_lines_matches_a_naive_split(
            data in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'\n'), Just(b'\r'), Just(0xff)], 0..200),
            first in 1u64..30,
            span in proptest::option::of(0u64..30),
            buf in 1usize..9,
        ) {
            let range = LineRange { first, last: span.map(|s| first + s) };
            let lines = naive_lines(&data);
            let lo = (first - 1) as usize;
            let hi = range.last.map_or(lines.len(), |l| (l as usize).min(lines.len()));
            let want: Vec<u8> = if lo < hi { lines[lo..hi].concat() } else { Vec::new() };
            let mut out = Vec::new();
            let done = copy_lines(&mut &data[..], &mut out, range, buf).unwrap();
            prop_assert_eq!(&out, &want);
            match done.total {
                Some(t) => prop_assert_eq!(t, lines.len() as u64),
                // Stopped early: only once the last line asked for was out.
                None => prop_assert!(range.last.is_some_and(|l| l as usize <= lines.len())),
            }
            prop_assert_eq!(done.printed, hi.saturating_sub(lo) as u64);
        }

        #[test]
        fn masked_copy_of_text_without_credentials_is_the_exact_copy(
            data in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'\n'), Just(b'\r'), Just(0xff), Just(b' ')], 0..200),
            first in 1u64..30,
            span in proptest::option::of(0u64..30),
        ) {
            let range = LineRange { first, last: span.map(|s| first + s) };
            let mut want = Vec::new();
            let exact = copy_lines(&mut &data[..], &mut want, range, 7).unwrap();
            let mut out = Vec::new();
            let (masked, _) = copy_masked(&data[..], &mut out, range).unwrap();
            prop_assert_eq!(&out, &want);
            prop_assert_eq!(masked.printed, exact.printed);
            if let (Some(a), Some(b)) = (masked.total, exact.total) {
                prop_assert_eq!(a, b);
            }
        }

        #[test]
        fn grep_lines_numbers_match_a_naive_split(
            data in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'\n'), Just(b'\r')], 0..200),
        ) {
            let re = Regex::new("ab").unwrap();
            let mut want = String::new();
            for (i, l) in naive_lines(&data).iter().enumerate() {
                let body = l.strip_suffix(b"\n").map_or(*l, |b| b.strip_suffix(b"\r").unwrap_or(b));
                if re.is_match(body) {
                    want.push_str(&format!("{}: {}\n", i + 1, crate::text::sanitize::display(body).text));
                }
            }
            let mut out = Vec::new();
            grep_lines(&data[..], &mut out, &re, LineRange { first: 1, last: None }).unwrap();
            prop_assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }

    #[test]
    fn masked_copy_hides_credentials_and_key_blocks_and_keeps_the_lines() {
        use crate::text::secrets::samples::{credentials, pem_block};
        let creds = credentials(9);
        let mut text: Vec<String> = creds.iter().map(|c| c.line.clone()).collect();
        text.extend(pem_block(9, 6));
        text.push("done".into());
        let data = text.join("\r\n");
        let mut out = Vec::new();
        let (d, read) = copy_masked(data.as_bytes(), &mut out, LineRange { first: 1, last: None }).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(read, data.len() as u64);
        assert_eq!(d.printed, text.len() as u64);
        assert_eq!(out.matches("\r\n").count(), text.len() - 1, "every line and terminator kept");
        for c in &creds {
            assert!(!out.contains(&c.secret), "{}: {out}", c.rule);
        }
        for l in &pem_block(9, 6)[1..8] {
            assert!(!out.contains(l.as_str()), "{l}");
        }
        assert!(out.contains("-----BEGIN RSA PRIVATE KEY-----\r\n…[masked private-key, 64 chars]\r\n"), "{out}");
        assert!(out.ends_with("-----END RSA PRIVATE KEY-----\r\ndone"), "{out}");
    }

    #[test]
    fn line_ranges_parse_and_explain_mistakes() {
        let r = |first, last| Ok(LineRange { first, last });
        assert_eq!(parse_line_range("3:7"), r(3, Some(7)));
        assert_eq!(parse_line_range("3:"), r(3, None));
        assert_eq!(parse_line_range(":7"), r(1, Some(7)));
        assert_eq!(parse_line_range("4"), r(4, Some(4)));
        assert_eq!(parse_line_range(":"), r(1, None));
        assert!(parse_line_range("0:3").unwrap_err().contains("numbered from 1"));
        assert!(parse_line_range("7:3").unwrap_err().contains("is empty"));
        assert!(parse_line_range("x").unwrap_err().contains("A:B"));
        assert!(parse_line_range("-1:3").unwrap_err().contains("A:B"));
        assert_eq!(LineRange { first: 2, last: None }.to_string(), "2:");
    }
}
