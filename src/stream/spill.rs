//! The spill thread: writes every block to the temporary file in the store,
//! concurrently with the scanner, and hands it on to a hash thread.
//!
//! The BLAKE3 digest is needed only once input ends, so it is computed on
//! its own thread, after the write, off the spill thread's path: measured
//! on 1 GiB (5 alternating rounds, medians, load average ~10 on 2 CPUs)
//! through a pipe 5.14 s against 6.15 s with the hash in the spill thread,
//! file on stdin 3.42 s against 4.48 s. The hash thread sends the block
//! back for reuse.
//!
//! Blocks arrive by `Arc` over a bounded channel (so a slow disk applies
//! back-pressure instead of buffering the input in memory) and go back to
//! the reader through the recycle channel once written. A write error ends
//! writing, not hashing: the digest still names the content, the temporary
//! file is removed, and the error is reported in the envelope.
//!
//! How the bytes reach the file (page cache first, then `O_DIRECT`, with
//! write-behind as the fallback) is [`crate::stream::writer`]'s business.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use crate::stream::input::Block;
use crate::stream::writer::SpillWriter;

/// Blocks in flight between the reader and the spill thread. Every block
/// in flight is a MiB of memory: with the scanner's own queue
/// (`ingest::SCAN_DEPTH`) and the three staging buffers, 4 here and 4 for
/// the hash thread peaked at 33 MiB on 1 GiB through a pipe, 3 and 2 at
/// 30-31 MiB, with no difference in speed (5 alternating rounds).
const CHANNEL_DEPTH: usize = 3;
/// Blocks waiting for the hash thread (which keeps up at ~4 GB/s).
const HASH_DEPTH: usize = 2;

/// Where the spill writes.
pub struct SpillTarget {
    pub file: File,
    pub path: PathBuf,
    /// Asked before every further [`GUARD_EVERY`] bytes (after the first
    /// ones) whether writing may go on.
    pub guard: Option<Box<dyn SpaceGuard>>,
    /// Nobody else writes through this open file (no snapshot copy), so
    /// the spill may switch it to direct writes.
    pub direct: bool,
}

/// How often the spill asks its [`SpaceGuard`], in bytes written.
pub const GUARD_EVERY: u64 = 64 << 20;

/// A check the owner of the target (the store) makes while the spill
/// grows, such as keeping free space on the disk. An error ends the spill
/// exactly as a failed write does: the temporary file is removed and the
/// error is reported.
pub trait SpaceGuard: Send {
    /// `written` bytes are in the file; may `next` more be written?
    fn check(&mut self, written: u64, next: u64) -> io::Result<()>;
}

/// What the spill thread reports once input ends.
pub struct SpillResult {
    /// The complete temporary file, when every write succeeded.
    pub temp: Option<PathBuf>,
    /// BLAKE3 of every byte received, whether written or not.
    pub digest: [u8; 32],
    pub bytes: u64,
    /// Why the spill failed (the temporary file is gone then).
    pub error: Option<io::Error>,
}

pub struct Spill {
    tx: Sender<Arc<Block>>,
    join: JoinHandle<SpillResult>,
}

impl Spill {
    /// Starts the thread; returns it and the channel on which written heap
    /// blocks come back for reuse.
    pub fn start(target: Option<SpillTarget>) -> (Spill, Receiver<Arc<Block>>) {
        let (tx, rx) = bounded::<Arc<Block>>(CHANNEL_DEPTH);
        let (recycle_tx, recycle_rx) = unbounded();
        let join = crate::stream::interrupt::with_signals_blocked(|| {
            std::thread::Builder::new()
                .name("outbox-spill".into())
                .spawn(move || spill_loop(rx, recycle_tx, target))
                .expect("spawn spill thread")
        });
        (Spill { tx, join }, recycle_rx)
    }

    /// Hands a block to the spill thread (blocks when it is behind).
    pub fn send(&self, block: Arc<Block>) {
        // The thread only exits after the channel closes, so a send cannot
        // fail unless it panicked; finish() reports that.
        let _ = self.tx.send(block);
    }

    /// Closes the channel and waits for the file to be flushed.
    pub fn finish(self) -> SpillResult {
        drop(self.tx);
        match self.join.join() {
            Ok(r) => r,
            Err(_) => SpillResult {
                temp: None,
                digest: [0; 32],
                bytes: 0,
                error: Some(io::Error::other("the spill thread panicked")),
            },
        }
    }
}

fn spill_loop(rx: Receiver<Arc<Block>>, recycle: Sender<Arc<Block>>, target: Option<SpillTarget>) -> SpillResult {
    let (to_hash, blocks) = bounded::<Arc<Block>>(HASH_DEPTH);
    let recycled = recycle.clone();
    let hash = std::thread::Builder::new().name("outbox-hash".into()).spawn(move || {
        let mut hasher = blake3::Hasher::new();
        for block in blocks {
            hasher.update(&block);
            let _ = recycled.send(block);
        }
        *hasher.finalize().as_bytes()
    });
    let mut hasher = match hash {
        Ok(join) => Hash::Thread(to_hash, join),
        // No thread to be had: hash here.
        Err(_) => Hash::Here(Box::default(), recycle),
    };
    let mut bytes = 0u64;
    let mut error = None;
    let mut target = target;
    // Made at the first block to write: direct writes need a file written
    // from offset 0 by this writer alone, which a snapshot copy's blocks
    // (already in the file, through an open file that shares our flags)
    // rule out.
    let mut writer: Option<SpillWriter> = None;
    let mut next_check = GUARD_EVERY;
    for block in rx {
        if bytes >= next_check {
            next_check = bytes + GUARD_EVERY;
            if let Some(Err(e)) = target.as_mut().and_then(|t| t.guard.as_mut()).map(|g| g.check(bytes, GUARD_EVERY)) {
                error = Some(e);
                // The writer's device thread first: it writes through the
                // file's descriptor.
                writer = None;
                discard(target.take());
            }
        }
        let start = bytes;
        bytes += block.len() as u64;
        // A stored block is in the file already (the snapshot copy).
        if let Some(t) = target.as_ref().filter(|_| !block.stored) {
            let w = match writer.as_mut() {
                Some(w) => Ok(w),
                None => SpillWriter::new(&t.file, t.direct && start == 0).map(|w| writer.insert(w)),
            };
            if let Err(e) = w.and_then(|w| w.write(&block)) {
                error = Some(e);
                writer = None;
                discard(target.take());
            }
        }
        hasher.update(block);
    }
    if let Some(t) = target.as_mut() {
        // No fsync: like tee, durability is the page cache's (or the
        // device's, for direct writes); write errors (ENOSPC, EFBIG)
        // surface at write time.
        // A snapshot copier stopped early (an interruption) may have copied
        // past what was received: the stored copy is what was scanned.
        let written = writer.as_mut().map_or(Ok(()), SpillWriter::finish).and_then(|()| t.file.flush());
        let over =
            || t.file.metadata().map(|m| m.len() > bytes).and_then(|o| if o { t.file.set_len(bytes) } else { Ok(()) });
        if let Err(e) = written.and_then(|()| over()) {
            error = Some(e);
            discard(target.take());
        }
    }
    match hasher.finish() {
        Some(digest) => SpillResult { temp: target.map(|t| t.path), digest, bytes, error },
        None => {
            discard(target.take());
            SpillResult {
                temp: None,
                digest: [0; 32],
                bytes,
                error: Some(io::Error::other("the hash thread panicked")),
            }
        }
    }
}

/// Where blocks are hashed (and then recycled).
enum Hash {
    Thread(Sender<Arc<Block>>, JoinHandle<[u8; 32]>),
    Here(Box<blake3::Hasher>, Sender<Arc<Block>>),
}

impl Hash {
    fn update(&mut self, block: Arc<Block>) {
        match self {
            // The hash thread lives until this sender is dropped.
            Hash::Thread(tx, _) => drop(tx.send(block)),
            Hash::Here(h, recycle) => {
                h.update(&block);
                let _ = recycle.send(block);
            }
        }
    }

    fn finish(self) -> Option<[u8; 32]> {
        match self {
            Hash::Thread(tx, join) => {
                drop(tx);
                join.join().ok()
            }
            Hash::Here(h, _) => Some(*h.finalize().as_bytes()),
        }
    }
}

fn discard(target: Option<SpillTarget>) {
    if let Some(t) = target {
        drop(t.file);
        let _ = std::fs::remove_file(&t.path);
    }
}

/// `OUTBOX_DEBUG=1`: one line on stderr for each choice the stream makes
/// that changes how it runs but not what it produces (copy path,
/// write-behind).
pub fn debug_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("OUTBOX_DEBUG").is_some_and(|v| v == "1"))
}
