//! The spill thread: writes every block to the temporary file in the store
//! and hashes it, concurrently with the scanner.
//!
//! Blocks arrive by `Arc` over a bounded channel (so a slow disk applies
//! back-pressure instead of buffering the input in memory) and go back to
//! the reader through the recycle channel once written. A write error ends
//! writing, not hashing: the digest still names the content, the temporary
//! file is removed, and the error is reported in the envelope.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use crate::stream::input::Block;

/// Blocks in flight between the reader and the spill thread.
const CHANNEL_DEPTH: usize = 4;

/// Where the spill writes.
pub struct SpillTarget {
    pub file: File,
    pub path: PathBuf,
    /// Asked before every further [`GUARD_EVERY`] bytes (after the first
    /// ones) whether writing may go on.
    pub guard: Option<Box<dyn SpaceGuard>>,
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
    let mut hasher = blake3::Hasher::new();
    let mut bytes = 0u64;
    let mut error = None;
    let mut target = target;
    let mut next_check = GUARD_EVERY;
    for block in rx {
        hasher.update(&block);
        if bytes >= next_check {
            next_check = bytes + GUARD_EVERY;
            if let Some(Err(e)) = target.as_mut().and_then(|t| t.guard.as_mut()).map(|g| g.check(bytes, GUARD_EVERY)) {
                error = Some(e);
                discard(target.take());
            }
        }
        bytes += block.len() as u64;
        if let Some(t) = target.as_mut() {
            if let Err(e) = t.file.write_all(&block) {
                error = Some(e);
                discard(target.take());
            }
        }
        // Only heap blocks are reused; a mapped window is released as soon
        // as the scanner is done with it too, which keeps RSS flat.
        if matches!(*block, Block::Heap(_)) {
            let _ = recycle.send(block);
        }
    }
    if let Some(t) = target.as_mut() {
        // No fsync: like tee, durability is the page cache's; write errors
        // (ENOSPC, EFBIG) surface at write time.
        if let Err(e) = t.file.flush() {
            error = Some(e);
            discard(target.take());
        }
    }
    SpillResult { temp: target.map(|t| t.path), digest: *hasher.finalize().as_bytes(), bytes, error }
}

fn discard(target: Option<SpillTarget>) {
    if let Some(t) = target {
        drop(t.file);
        let _ = std::fs::remove_file(&t.path);
    }
}
