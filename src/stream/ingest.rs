//! The ingest loop: one reader, one spill thread, one scanning thread.
//!
//! Each block is handed by `Arc` to the spill thread first (so writing and
//! hashing overlap with scanning), optionally copied to stdout (`--envelope
//! never`), then queued for the scanner, which runs on its own thread a
//! block or two behind the reader: with one signal line in ten the scanner
//! is the slowest stage, and reading (the pipe's copy, and the wait on the
//! pipe's lock while the producer writes, 26% of that thread's samples)
//! had been taking its time: 1 GiB through a pipe 1.30 -> 1.05 s (medians
//! of 7 alternating rounds), no change with few signal lines. Where no
//! thread can be had, the reader scans each block itself. Blocks are
//! dropped once scanned; the spill thread sends heap blocks back for
//! reuse. Nothing here stops early on an output problem: the producer must
//! never see SIGPIPE, so stdin is drained to its end.
//!
//! A regular file on stdin is copied into the spill by the kernel and read
//! back from the copy (see [`crate::stream::snapshot`]); the spill thread
//! then only hashes those blocks. `OUTBOX_DEBUG=1` names the path taken on
//! stderr (`spill: copy_file_range`, `spill: read+write (copy_file_range:
//! EXDEV)`).

use std::io::{self, Write};
use std::sync::Arc;

use crossbeam_channel::{bounded, Sender};

use crate::stream::input::{Block, Next, Reader, Stop};
use crate::stream::spill::{Spill, SpillResult, SpillTarget};

/// Blocks queued for the scanner thread (a MiB of memory each; see
/// `spill::CHANNEL_DEPTH` for the budget).
const SCAN_DEPTH: usize = 2;

/// Where blocks are scanned: queued for the scanner thread, or fed here.
enum Scan<'scope, 'sink> {
    Thread(Sender<Arc<Block>>, std::thread::ScopedJoinHandle<'scope, ()>),
    Here(&'sink mut (dyn BlockSink + Send)),
}

#[cfg(not(test))]
fn scan_thread_wanted() -> bool {
    true
}

// Tests take the path of a failed spawn by asking for no thread.
#[cfg(test)]
thread_local! {
    static NO_SCAN_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
fn scan_thread_wanted() -> bool {
    !NO_SCAN_THREAD.with(|c| c.get())
}

/// Something that consumes the input stream block by block, in order.
/// Blocks are borrowed: a sink copies only what it must keep.
pub trait BlockSink {
    fn feed(&mut self, block: &[u8]);
}

/// How the ingest ended.
pub struct Ingest {
    pub spill: SpillResult,
    /// Set when a signal or the caller's stop condition ended the input.
    pub stop: Option<Stop>,
    /// Reading the input failed (the envelope covers what arrived).
    pub read_error: Option<io::Error>,
    /// Copying to stdout failed (`--envelope never`); reading went on.
    pub tee_error: Option<io::Error>,
    /// How the spill got its bytes: `FICLONE`, `copy_file_range`,
    /// `read+write`, with the reason for a fallback in parentheses.
    pub spill_path: String,
}

/// Observes progress (for `--progress`); called once per block.
pub trait Progress {
    /// The input's size when it is known (a regular file), before reading.
    fn total(&mut self, _bytes: Option<u64>) {}
    fn update(&mut self, bytes: u64, lines: u64);
    fn done(&mut self) {}
}

/// Reads `reader` to its end, spilling to `target` and feeding `sink`.
pub fn ingest(
    mut reader: Reader,
    sink: &mut (dyn BlockSink + Send),
    mut target: Option<SpillTarget>,
    mut tee: Option<&mut dyn Write>,
    mut progress: Option<&mut dyn Progress>,
) -> Ingest {
    if let Some(p) = progress.as_deref_mut() {
        p.total(reader.remaining());
    }
    // The snapshot copier writes through its own descriptor of the spill
    // file (same open file, same offset as the spill thread's).
    let no_snapshot =
        if target.is_some() { "read+write (cannot open the spill file twice)" } else { "none (no store)" };
    // With direct spill writes a file on stdin that cannot be cloned is
    // read and written like a pipe; else it is copied by copy_file_range.
    let copy_range =
        crate::sys::COPY_RANGE && !target.as_ref().is_some_and(|t| t.direct && crate::stream::writer::direct_allowed());
    // Where a clone makes a new file (macOS), the spill file is replaced by
    // a clone of a file on stdin now, before the spill thread takes it.
    if let Some(t) = target.as_mut() {
        reader.clone_into(t);
    }
    let snapshot_dst = target.as_ref().and_then(|t| Some((t.file.try_clone().ok()?, t.path.clone())));
    let (spill, recycle) = Spill::start(target);
    reader = reader.with_recycle(recycle);
    let snapshot_started = snapshot_dst.is_some();
    if let Some((dst, path)) = snapshot_dst {
        reader.snapshot_into(dst, &path, copy_range);
    }
    let mut stop = None;
    let mut read_error = None;
    let mut tee_error = None;
    let mut bytes = 0u64;
    let mut lines = 0u64;
    // The scanner runs on its own thread, a couple of blocks behind the
    // reader: reading (the pipe's copy, and waiting on the pipe's lock
    // while the producer writes) no longer takes the scanner's time.
    let (to_scan, blocks) = bounded::<Arc<Block>>(SCAN_DEPTH);
    // The sink reaches the thread by channel, so that it is still ours
    // when no thread can be spawned.
    let (hand, take) = bounded::<&mut (dyn BlockSink + Send)>(1);
    std::thread::scope(|scope| {
        let spawn = || {
            crate::stream::interrupt::with_signals_blocked(|| {
                std::thread::Builder::new().name("outbox-scan".into()).spawn_scoped(scope, move || {
                    let Ok(sink) = take.recv() else { return };
                    for block in blocks {
                        sink.feed(&block);
                    }
                })
            })
        };
        let scanner = if scan_thread_wanted() { spawn() } else { Err(io::Error::other("no scan thread")) };
        // No thread to be had: scan here, in turn with reading.
        let mut scan = match scanner {
            Ok(join) => {
                let _ = hand.send(sink);
                Scan::Thread(to_scan, join)
            }
            Err(_) => Scan::Here(sink),
        };
        loop {
            match reader.next_block() {
                Ok(Next::Block(block)) => {
                    spill.send(block.clone());
                    if let Some(out) = tee.as_deref_mut() {
                        if let Err(e) = out.write_all(&block) {
                            tee_error = Some(e);
                            tee = None;
                        }
                    }
                    if let Some(p) = progress.as_deref_mut() {
                        bytes += block.len() as u64;
                        lines += memchr::memchr_iter(b'\n', &block).count() as u64;
                        p.update(bytes, lines);
                    }
                    match &mut scan {
                        Scan::Thread(tx, _) => drop(tx.send(block)),
                        Scan::Here(sink) => sink.feed(&block),
                    }
                }
                Ok(Next::Eof) => break,
                Ok(Next::Stopped(s)) => {
                    stop = Some(s);
                    break;
                }
                Err(e) => {
                    read_error = Some(e);
                    break;
                }
            }
        }
        if let Scan::Thread(tx, join) = scan {
            // The scanner finishes the queued blocks, then ends.
            drop(tx);
            if let Err(panic) = join.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
    if let Some(out) = tee {
        if let Err(e) = out.flush() {
            tee_error.get_or_insert(e);
        }
    }
    if let Some(p) = progress {
        p.done();
    }
    let spill_path = match (reader.spill_path(), snapshot_started) {
        (Some(p), _) => p.to_string(),
        (None, true) => "snapshot copy (input ended before the copy)".into(),
        (None, false) => no_snapshot.into(),
    };
    if crate::stream::spill::debug_enabled() {
        crate::text::stderr::say(format_args!("spill: {spill_path}"));
    }
    let copy_failure = reader.take_copy_failure();
    // Joins the copier: the spill file is final from here.
    drop(reader);
    let mut spill = spill.finish();
    if let Some(e) = copy_failure {
        if let Some(path) = spill.temp.take() {
            let _ = std::fs::remove_file(path);
        }
        spill.error.get_or_insert(e);
    }
    Ingest { spill, stop, read_error, tee_error, spill_path }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Keeps everything it is fed (the snapshot tests use it too).
    #[derive(Default)]
    pub(crate) struct Collect(pub(crate) Vec<u8>);
    impl BlockSink for Collect {
        fn feed(&mut self, block: &[u8]) {
            self.0.extend_from_slice(block);
        }
    }

    /// Several MiB through a pipe, scanned on the scanner thread and, as
    /// when no thread can be spawned, on the reader's: every byte once, in
    /// order, and the same bytes stored.
    #[test]
    fn every_byte_is_scanned_once_with_or_without_the_scanner_thread() {
        let input: Vec<u8> = (0..5_000_000u32).map(|i| (i % 251) as u8).collect();
        for threaded in [true, false] {
            NO_SCAN_THREAD.with(|c| c.set(!threaded));
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join(".tmp-spill");
            let file = std::fs::File::create_new(&path).expect("spill file");
            let (rx, mut tx) = std::io::pipe().expect("pipe");
            let data = input.clone();
            let writer = std::thread::spawn(move || tx.write_all(&data).expect("write"));
            let reader = Reader::owned(std::fs::File::from(std::os::fd::OwnedFd::from(rx)));
            let mut sink = Collect::default();
            let target = SpillTarget { file, path, guard: None, direct: true };
            let r = ingest(reader, &mut sink, Some(target), None, None);
            writer.join().expect("writer");
            assert!(r.read_error.is_none() && r.spill.error.is_none(), "threaded {threaded}");
            assert!(sink.0 == input, "scanned every byte once, in order (threaded {threaded})");
            let stored = std::fs::read(r.spill.temp.expect("stored")).expect("read");
            assert!(stored == input, "stored copy (threaded {threaded})");
        }
        NO_SCAN_THREAD.with(|c| c.set(false));
    }
}
