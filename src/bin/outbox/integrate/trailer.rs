//! The far end of an agent hook's rewritten line:
//! `{ CMD && printf '\nN:0\n' || printf '\nN:%s\n' $?; } | outbox --trailer N`.
//!
//! The command's exit status travels in the pipe itself, after its output,
//! as a trailer line (`\nNONCE:STATUS\n`, then `NONCE:p\n` when the shell
//! has `pipefail` on). Nothing is written anywhere else, so the line's
//! status is the command's whether the store is writable, read-only (a
//! sandbox) or full: the status file the rewrite used before could not be
//! written there, and the line then reported 1, 2 or 0 whatever the
//! command did.
//!
//! ```text
//!  fd 0 ──► relay thread: holds back the last MAX_TRAILER bytes ──► pipe ──► Session
//!           at the end: a trailer with this line's nonce is taken off,
//!           the rest goes on; the status and the pipefail flag come back
//! ```
//!
//! Invariants:
//! - The stored copy and the envelope hold the command's output exactly:
//!   the trailer is removed only when it is the very last bytes and carries
//!   this line's nonce (the hook derives it from the line, so the output
//!   cannot match it by accident); anything else is output.
//! - The exit status is the original line's: the command's own for a plain
//!   line; for `CMD | head`/`| tail` (`--cut`), `head`'s 0 unless the
//!   shell's `pipefail` was on, then the command's. A failure of outbox
//!   itself (no store, a full disk) never changes it; an interruption of
//!   outbox is 128+N as always.
//! - `--cut head:N` stops reading after [`HEAD_CAP`] bytes, as `head` would
//!   have stopped the command (it gets SIGPIPE): an endless producer cannot
//!   fill the store. The envelope says so.

use std::fs::File;
use std::io::{self, Read, Write};

use outbox::session::{CommandInfo, RunOptions, Session};
use outbox::stream::input::Reader;
use outbox::stream::interrupt;

use crate::integrate::hook::line::Cut;

/// The longest trailer: `\n` + nonce (at most 16) + `:` + a status + `\n`,
/// then the pipefail line.
const MAX_TRAILER: usize = 64;

/// With `--cut head:N`, bytes read before the input is ended as `head`
/// would end it.
pub const HEAD_CAP: u64 = 64 << 20;

/// What the relay found at the end of the input.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    /// The command's exit status, when the trailer arrived.
    pub status: Option<i32>,
    /// The shell had `pipefail` on.
    pub pipefail: bool,
    /// Reading stopped at the cap (`--cut head:N`) after this many bytes.
    pub capped: Option<u64>,
}

/// `CMD | outbox --trailer NONCE [--cut head:N|tail:N]`: envelope stdin
/// without the trailer, record the command's status, exit as the original
/// line would have.
pub fn run(args: &RunOptions, nonce: &str, cut: Option<Cut>) -> anyhow::Result<u8> {
    if nonce.is_empty() || nonce.len() > 16 || !nonce.bytes().all(|b| b.is_ascii_alphanumeric()) {
        anyhow::bail!("--trailer takes the nonce of the hook's line (1 to 16 letters or digits), got {nonce:?}");
    }
    interrupt::install();
    let mut session = Session::start(args, "stdin")?;
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| anyhow::anyhow!("cannot create a pipe for the command's output: {e}"))?;
    let cap = matches!(cut, Some(Cut::Head(_))).then_some(HEAD_CAP);
    let nonce = nonce.as_bytes().to_vec();
    let relay = interrupt::with_signals_blocked(|| {
        std::thread::Builder::new().name("outbox-relay".into()).spawn(move || {
            let stdin = io::stdin();
            let mut input = stdin.lock();
            relay(&mut input, File::from(write), &nonce, cap, end_stdin)
        })
    })
    .map_err(|e| anyhow::anyhow!("cannot start a thread to read the command's output: {e}"))?;
    let ingest = session.ingest(Reader::owned(File::from(read)));
    // The relay ends when stdin does (or at the cap); after an interruption
    // it may still be waiting on the command, which is not waited for.
    let found = if ingest.stop.is_none() {
        relay.join().unwrap_or_else(|p| std::panic::resume_unwind(p)).unwrap_or_else(|e| {
            outbox::say!("reading the command's output failed: {e}");
            Found::default()
        })
    } else {
        Found::default()
    };
    if let Some(bytes) = found.capped {
        session.note(format!(
            "stopped reading after {bytes} bytes, as `head` would have stopped the command (it got SIGPIPE); \
the envelope and the stored copy cover those bytes"
        ));
    }
    let label = session.label().to_string();
    if found.status.is_none() && found.capped.is_none() && ingest.stop.is_none() {
        outbox::say!(
            "the exit status of {label} did not arrive after its output (was it killed, or `set -e` in force?); \
exiting 1"
        );
    }
    let info = CommandInfo { command: label, exit_status: found.status, ..CommandInfo::default() };
    let outcome = session.finish(ingest, Some(info));
    if let Some(sig) = outcome.interrupted {
        return Ok(interrupt::exit_code(sig));
    }
    Ok(line_status(&found, cut))
}

/// The status the original line would have had.
pub fn line_status(found: &Found, cut: Option<Cut>) -> u8 {
    let status = match found.status {
        Some(s) => s.clamp(0, 255) as u8,
        None if found.capped.is_some() => 0,
        None => 1,
    };
    match cut {
        // `CMD | head`: head's status, unless pipefail makes a failing
        // command's the line's.
        Some(_) if !found.pipefail => 0,
        _ => status,
    }
}

/// Stops the producer as `head` does: fd 0 becomes /dev/null, so the
/// pipe's only reader is gone and the command's next write fails.
fn end_stdin() {
    if let Ok(null) = rustix::fs::open("/dev/null", rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty()) {
        let _ = rustix::stdio::dup2_stdin(&null);
    }
}

/// Copies `input` to `out` but for a trailer with `nonce` at its very end,
/// which is taken off and read. With `cap`, stops after that many bytes
/// and calls `stop` (which ends the producer).
pub fn relay(input: &mut dyn Read, out: File, nonce: &[u8], cap: Option<u64>, stop: fn()) -> io::Result<Found> {
    let mut out = out;
    let mut found = Found::default();
    let mut buf = vec![0u8; 256 << 10];
    // The last bytes read, not yet passed on: they may be the trailer.
    let mut hold: Vec<u8> = Vec::with_capacity(2 * MAX_TRAILER);
    let mut total = 0u64;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = out.write_all(&hold);
                return Err(e);
            }
        };
        total += n as u64;
        let data = &buf[..n];
        if data.len() >= MAX_TRAILER {
            pass(&mut out, &hold)?;
            hold.clear();
            pass(&mut out, &data[..n - MAX_TRAILER])?;
            hold.extend_from_slice(&data[n - MAX_TRAILER..]);
        } else {
            hold.extend_from_slice(data);
            if hold.len() > MAX_TRAILER {
                let extra = hold.len() - MAX_TRAILER;
                pass(&mut out, &hold[..extra])?;
                hold.drain(..extra);
            }
        }
        if cap.is_some_and(|c| total >= c) {
            stop();
            pass(&mut out, &hold)?;
            found.capped = Some(total);
            return Ok(found);
        }
    }
    let keep = strip(&hold, nonce, &mut found);
    pass(&mut out, &hold[..keep])?;
    Ok(found)
}

/// Writes to the session's pipe; a session that stopped reading (an
/// interruption) ends the relay.
fn pass(out: &mut File, bytes: &[u8]) -> io::Result<()> {
    out.write_all(bytes)
}

/// How much of `tail` (the input's last bytes) is output: everything but
/// a trailer with `nonce` at the very end, which is read into `found`.
fn strip(tail: &[u8], nonce: &[u8], found: &mut Found) -> usize {
    let mut end = tail.len();
    let line = |suffix: &[u8]| -> Vec<u8> { [nonce, b":", suffix, b"\n"].concat() };
    let mut pipefail = false;
    if tail[..end].ends_with(&line(b"p")) {
        end -= line(b"p").len();
        pipefail = true;
    }
    // `\nNONCE:DIGITS\n`
    let body = &tail[..end];
    let Some(stripped) = body.strip_suffix(b"\n") else { return tail.len() };
    let Some(colon) = stripped.iter().rposition(|&b| b == b':') else { return tail.len() };
    let digits = &stripped[colon + 1..];
    let before = &stripped[..colon];
    let status = std::str::from_utf8(digits)
        .ok()
        .filter(|d| (1..=3).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse().ok());
    match (status, before.strip_suffix(nonce).and_then(|b| b.strip_suffix(b"\n"))) {
        (Some(s), Some(rest)) => {
            found.status = Some(s);
            found.pipefail = pipefail;
            rest.len()
        }
        _ => tail.len(),
    }
}

/// The relay's pipe ends, for tests.
#[cfg(test)]
fn test_pipe() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the relay over `input` read in chunks of `chunk` bytes.
    fn through(input: &[u8], chunk: usize, cap: Option<u64>) -> (Vec<u8>, Found) {
        struct Chunks<'a>(&'a [u8], usize);
        impl Read for Chunks<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(self.1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let (r, w) = test_pipe();
        let reader = std::thread::spawn(move || {
            let mut v = Vec::new();
            File::from(r).read_to_end(&mut v).unwrap();
            v
        });
        let found = relay(&mut Chunks(input, chunk), File::from(w), b"ab12", cap, || {}).unwrap();
        (reader.join().unwrap(), found)
    }

    #[test]
    fn the_trailer_is_taken_off_at_every_chunk_size() {
        let body: Vec<u8> = (0..5000).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        let mut input = body.clone();
        input.extend_from_slice(b"\nab12:3\n");
        for chunk in [1, 2, 7, 63, 64, 65, 4096, 1 << 20] {
            let (out, found) = through(&input, chunk, None);
            assert_eq!(out, body, "chunk {chunk}");
            assert_eq!(found, Found { status: Some(3), pipefail: false, capped: None });
        }
    }

    #[test]
    fn unterminated_output_and_empty_output() {
        let (out, found) = through(b"no newline\nab12:0\n", 3, None);
        assert_eq!((out.as_slice(), found.status), (&b"no newline"[..], Some(0)));
        let (out, found) = through(b"\nab12:141\nab12:p\n", 5, None);
        assert_eq!((out.as_slice(), found.status, found.pipefail), (&b""[..], Some(141), true));
        let (out, found) = through(b"", 5, None);
        assert_eq!((out.as_slice(), found.status), (&b""[..], None));
    }

    #[test]
    fn anything_else_is_output() {
        for input in [
            &b"x\nzz99:1\n"[..],
            b"x\nab12:1",
            b"x\nab12:\n",
            b"x\nab12:1000\n",
            b"x\nab12:-1\n",
            b"xab12:1\n",
            b"ab12:p\n",
            b"x\nab12:1\nmore\n",
            b"\xff\nab12:x\n",
        ] {
            let (out, found) = through(input, 4, None);
            assert_eq!(out, input, "{:?}", String::from_utf8_lossy(input));
            assert_eq!(found.status, None);
            assert!(!found.pipefail);
        }
    }

    #[test]
    fn the_cap_stops_reading() {
        let input = vec![b'y'; 10_000];
        let (out, found) = through(&input, 1000, Some(4000));
        assert_eq!(out.len(), 4000);
        assert_eq!(found.capped, Some(4000));
    }

    #[test]
    fn line_status_follows_the_original_line() {
        let f = |status, pipefail| Found { status, pipefail, capped: None };
        assert_eq!(line_status(&f(Some(2), false), None), 2);
        assert_eq!(line_status(&f(Some(0), false), None), 0);
        assert_eq!(line_status(&f(None, false), None), 1);
        assert_eq!(line_status(&f(Some(2), false), Some(Cut::Head(5))), 0);
        assert_eq!(line_status(&f(Some(2), true), Some(Cut::Tail(5))), 2);
        assert_eq!(line_status(&f(Some(0), true), Some(Cut::Tail(5))), 0);
        let capped = Found { status: None, pipefail: false, capped: Some(9) };
        assert_eq!(line_status(&capped, Some(Cut::Head(5))), 0);
    }
}
