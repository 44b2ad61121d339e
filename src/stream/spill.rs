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
//! Write-behind: past the first [`WB_START`] bytes the thread starts the
//! writeback of each [`WB_STEP`] right behind the writer and, one step
//! later, waits for that range to be on disk and drops its pages, so the
//! spill's page cache stays near `WB_START` whatever the input's size.
//! Measured on this machine, fresh page-cache pages cost ~0.25 s/GiB up to
//! 1-2 GiB and 1.1-1.8 s/GiB beyond; starting at the first byte made small
//! runs wait for the disk instead. A failed `sync_file_range` or
//! `posix_fadvise` is not fatal: write-behind turns off, once, and plain
//! writes go on.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
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
    let (to_hash, blocks) = bounded::<Arc<Block>>(CHANNEL_DEPTH);
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
    let mut behind = target.as_ref().map(|t| WriteBehind::new(t.file.as_raw_fd()));
    let mut next_check = GUARD_EVERY;
    for block in rx {
        if bytes >= next_check {
            next_check = bytes + GUARD_EVERY;
            if let Some(Err(e)) = target.as_mut().and_then(|t| t.guard.as_mut()).map(|g| g.check(bytes, GUARD_EVERY)) {
                error = Some(e);
                discard(target.take());
                behind = None;
            }
        }
        bytes += block.len() as u64;
        // A stored block is in the file already (the snapshot copy).
        if let Some(t) = target.as_mut().filter(|_| !block.stored) {
            if let Err(e) = t.file.write_all(&block) {
                error = Some(e);
                discard(target.take());
                behind = None;
            }
        }
        if let Some(wb) = behind.as_mut() {
            wb.advance(bytes);
        }
        hasher.update(block);
    }
    if let Some(t) = target.as_mut() {
        // No fsync: like tee, durability is the page cache's; write errors
        // (ENOSPC, EFBIG) surface at write time.
        // A snapshot copier stopped early (an interruption) may have copied
        // past what was received: the stored copy is what was scanned.
        let over =
            t.file.metadata().map(|m| m.len() > bytes).and_then(|o| if o { t.file.set_len(bytes) } else { Ok(()) });
        if let Err(e) = t.file.flush().and(over) {
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

/// Spill bytes left to the kernel's own writeback (and kept in the page
/// cache) before write-behind starts: runs below it never wait for the disk.
pub const WB_START: u64 = 512 << 20;
/// Writeback is started, and pages dropped, in steps of this size.
pub const WB_STEP: u64 = 32 << 20;

/// Write-behind state for one spill file: `[WB_START, kicked)` has had its
/// writeback started, `[WB_START, dropped)` is on disk and out of the cache.
struct WriteBehind {
    fd: RawFd,
    kicked: u64,
    dropped: u64,
    step: u64,
    on: bool,
}

impl WriteBehind {
    fn new(fd: RawFd) -> WriteBehind {
        WriteBehind::starting_at(fd, WB_START, WB_STEP)
    }

    fn starting_at(fd: RawFd, start: u64, step: u64) -> WriteBehind {
        WriteBehind { fd, kicked: start, dropped: start, step, on: true }
    }

    /// The file now holds `written` bytes from offset 0.
    fn advance(&mut self, written: u64) {
        if !self.on || written < self.kicked + self.step {
            return;
        }
        let previous = self.kicked;
        // Start writing the newest step; do not wait for it.
        if let Err(e) = sync_range(self.fd, previous, written - previous, libc::SYNC_FILE_RANGE_WRITE) {
            return self.off("sync_file_range", e);
        }
        self.kicked = written;
        // The step started last time is usually on disk by now: wait for
        // whatever is left of it, then drop its clean pages.
        if previous > self.dropped {
            let (from, len) = (self.dropped, previous - self.dropped);
            let all =
                libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
            if let Err(e) = sync_range(self.fd, from, len, all) {
                return self.off("sync_file_range", e);
            }
            let r = unsafe {
                libc::posix_fadvise(self.fd, from as libc::off_t, len as libc::off_t, libc::POSIX_FADV_DONTNEED)
            };
            if r != 0 {
                return self.off("posix_fadvise", io::Error::from_raw_os_error(r));
            }
            self.dropped = previous;
        }
    }

    fn off(&mut self, call: &str, e: io::Error) {
        self.on = false;
        if debug_enabled() {
            crate::text::stderr::say(format_args!("spill: write-behind off ({call}: {e}); plain writes from here"));
        }
    }
}

fn sync_range(fd: RawFd, from: u64, len: u64, flags: libc::c_uint) -> io::Result<()> {
    let r = unsafe { libc::sync_file_range(fd, from as libc::off64_t, len as libc::off64_t, flags) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `OUTBOX_DEBUG=1`: one line on stderr for each choice the stream makes
/// that changes how it runs but not what it produces (copy path,
/// write-behind).
pub fn debug_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("OUTBOX_DEBUG").is_some_and(|v| v == "1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small thresholds on a real file: the ranges behind the writer are
    /// written back and dropped as it goes, and the content is intact.
    #[test]
    fn write_behind_drops_what_is_on_disk_and_keeps_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spill");
        let mut file = File::create(&path).unwrap();
        let mut wb = WriteBehind::starting_at(file.as_raw_fd(), 2 << 20, 1 << 20);
        let mut want = Vec::new();
        for i in 0..20u8 {
            let block = vec![b'a' + i; (1 << 20) + 7];
            file.write_all(&block).unwrap();
            want.extend_from_slice(&block);
            wb.advance(want.len() as u64);
        }
        assert!(wb.on, "no call failed");
        assert_eq!(wb.kicked, want.len() as u64, "every block is more than a step: each one kicked");
        assert!(wb.dropped > 17 << 20 && wb.dropped < wb.kicked, "one step behind: {} {}", wb.dropped, wb.kicked);
        drop(file);
        assert!(std::fs::read(&path).unwrap() == want);
    }

    /// A descriptor the calls refuse turns write-behind off, once, quietly.
    #[test]
    fn write_behind_errors_turn_it_off() {
        let mut wb = WriteBehind::starting_at(-1, 0, 1);
        wb.advance(10);
        assert!(!wb.on);
        wb.advance(20);
        assert_eq!(wb.kicked, 0);
    }
}
