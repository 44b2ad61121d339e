//! Input sources turned into owned blocks.
//!
//! A pipe, terminal or file is read with large `read(2)` calls into
//! recycled heap blocks (a pipe is enlarged to 1 MiB, which needs no
//! privilege and lifts throughput on two-CPU machines).
//!
//! A regular file on stdin at offset 0 is not read directly when there is a
//! spill file: [`crate::stream::snapshot`] copies it into the spill
//! (FICLONE, else `copy_file_range`), and the reader scans the copy, a few
//! steps behind the copier, so what is stored is exactly what was scanned
//! even when the live file changes. When the copy ends (the file's end, or
//! a fallback) the reader carries on from the live file with `read(2)`, so
//! bytes appended meanwhile are read and spilled as from a pipe. A file
//! that is shorter at the end of input than what was read (truncated, e.g.
//! by logrotate's copytruncate) ends the input with an error that says so:
//! the envelope and the stored copy cover what was read, and the exit
//! status is 1. (Mapping the file, the old `--mmap`, died of SIGBUS in that
//! case and was slower than reading: 1.6-3.3 s against 0.6 s on 1 GiB.)
//!
//! Every blocking read is preceded by a one-second `poll`, so a silent
//! producer never keeps the reader from noticing an interruption or a
//! caller's stop condition (wrap mode: the command exited, but a background
//! grandchild still holds the pipe open).

use std::fs::File;
use std::io::{self, Read};
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, RawFd};
use std::path::Path;
use std::sync::Arc;

use crossbeam_channel::Receiver;
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::FileType;

use crate::stream::snapshot::{self, CopyOps, Snapshot};
use crate::stream::spill::SpillTarget;
use crate::sys;

/// Default size of a heap block.
pub const BLOCK_SIZE: usize = 1 << 20;

/// An owned piece of input. Shared by `Arc` between the scanner and the
/// spill thread, and handed back through the recycle channel for reuse.
pub struct Block {
    /// The whole buffer; the block is its first `len` bytes. Keeping the
    /// buffer's full length means a reused block is not zero-filled again
    /// after every short read (a 1 MiB memset per pipe read of 128 KiB).
    data: Vec<u8>,
    len: usize,
    /// Already in the spill file (put there by the snapshot copy): the spill
    /// thread hashes it but does not write it.
    pub stored: bool,
}

impl Block {
    /// The first `len` bytes of `buffer`, which is kept whole for reuse.
    fn filled(buffer: Vec<u8>, len: usize, stored: bool) -> Block {
        debug_assert!(len <= buffer.len());
        Block { data: buffer, len, stored }
    }
}

impl Deref for Block {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.data[..self.len]
    }
}

/// Why the reader stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT / SIGTERM: the signal number.
    Signal(i32),
    /// The caller's stop condition said so.
    Requested,
}

/// The outcome of asking for the next block.
pub enum Next {
    Block(Arc<Block>),
    Eof,
    Stopped(Stop),
}

/// The descriptor a reader reads: closed with the reader, or not.
enum Source {
    Owned(File),
    /// Wrap mode's read end, closed by its owner (see [`Reader::borrowed`]).
    Borrowed(ManuallyDrop<File>),
}

impl Deref for Source {
    type Target = File;
    fn deref(&self) -> &File {
        match self {
            Source::Owned(f) => f,
            Source::Borrowed(f) => f,
        }
    }
}

/// Reads one file descriptor into blocks.
pub struct Reader {
    file: Source,
    /// A regular file: its size is checked at the end of input.
    regular: bool,
    /// A regular file at offset 0 with something in it: a snapshot
    /// candidate.
    snapshot_from_start: bool,
    /// Reading the copy while the copier fills it.
    snapshot: Option<Snapshot>,
    /// The copy strategy (the kernel's; tests inject failures).
    copy_ops: Option<Box<dyn CopyOps>>,
    /// Set when the snapshot copy failed in a way that fails the spill.
    copy_failure: Option<io::Error>,
    /// How the spill got its bytes, for `OUTBOX_DEBUG=1` and tests.
    spill_path: Option<String>,
    block_size: usize,
    recycle: Option<Receiver<Arc<Block>>>,
    stop: Option<Box<dyn FnMut() -> bool + Send>>,
    /// A read returned 0. On a terminal that is a one-time event (Ctrl-D):
    /// reading again would wait for more input, so it is remembered.
    eof: bool,
    /// The file shrank under us: reported in place of the end of input.
    shrunk: Option<io::Error>,
}

impl Drop for Reader {
    fn drop(&mut self) {
        // Stop and join the copier first (before the descriptor goes): the
        // spill file must not change once the reader is gone.
        self.snapshot = None;
    }
}

impl Reader {
    /// Reads standard input through a descriptor of its own (a duplicate:
    /// same open file, same offset), so fd 0 itself is never closed.
    pub fn stdin() -> io::Result<Reader> {
        let fd = io::stdin().as_fd().try_clone_to_owned()?;
        Ok(Reader::owned(File::from(fd)))
    }

    /// Reads a descriptor we own (e.g. the read end of a child's pipe, or a
    /// file in a test).
    pub fn owned(file: File) -> Reader {
        Reader::new(Source::Owned(file))
    }

    /// Reads a descriptor without closing it when done: wrap mode keeps the
    /// read end open until it has told the reaper thread that the reader is
    /// gone, so the reaper's `dup2` onto that number never hits a
    /// descriptor reused by someone else.
    ///
    /// # Safety
    /// `fd` must stay open for as long as the reader exists.
    pub unsafe fn borrowed(fd: RawFd) -> Reader {
        // SAFETY: open for the reader's life (the caller's promise);
        // ManuallyDrop never closes it.
        Reader::new(Source::Borrowed(ManuallyDrop::new(unsafe { File::from_raw_fd(fd) })))
    }

    /// Bytes left to read when the input is a regular file (for a progress
    /// meter's percentage); None for pipes and terminals.
    pub fn remaining(&self) -> Option<u64> {
        match file_kind(self.file.as_fd()) {
            FdKind::Regular { pos, size } => Some(size.saturating_sub(pos)),
            _ => None,
        }
    }

    fn new(file: Source) -> Reader {
        let (regular, snapshot_from_start) = match file_kind(file.as_fd()) {
            FdKind::Regular { pos, size } => (true, pos == 0 && size > 0),
            FdKind::Fifo => {
                sys::enlarge_pipe(file.as_fd());
                (false, false)
            }
            FdKind::Other => (false, false),
        };
        Reader {
            file,
            regular,
            snapshot_from_start,
            snapshot: None,
            copy_ops: None,
            copy_failure: None,
            spill_path: None,
            block_size: BLOCK_SIZE,
            recycle: None,
            stop: None,
            eof: false,
            shrunk: None,
        }
    }

    /// Heap blocks handed back by the spill thread are reused from here.
    pub fn with_recycle(mut self, rx: Receiver<Arc<Block>>) -> Reader {
        self.recycle = Some(rx);
        self
    }

    /// A condition checked whenever the input has been silent for a second.
    pub fn with_stop(mut self, stop: Box<dyn FnMut() -> bool + Send>) -> Reader {
        self.stop = Some(stop);
        self
    }

    /// Copies with `ops` instead of the kernel's calls (tests inject
    /// errors and short transfers here; the platforms with a kernel copy).
    #[cfg(all(test, target_os = "linux", not(feature = "portable")))]
    pub(crate) fn with_copy_ops(mut self, ops: Box<dyn CopyOps>) -> Reader {
        self.copy_ops = Some(ops);
        self
    }

    /// When the input is a regular file from offset 0, starts copying it
    /// into the spill file `dst` (open for writing at offset 0, at `path`)
    /// and reads the copy from then on. Otherwise, or when the copy cannot
    /// be opened for reading, the spill thread writes what is read.
    pub(crate) fn snapshot_into(&mut self, dst: File, path: &Path, copy_range: bool) {
        if !self.snapshot_from_start {
            self.spill_path = Some("read+write".into());
            return;
        }
        if self.copy_ops.is_none() && sys::CLONE_NAME.is_none() && !sys::COPY_RANGE {
            self.spill_path = Some("read+write (no clone or kernel copy on this platform)".into());
            return;
        }
        let ops = self.copy_ops.take().unwrap_or_else(snapshot::kernel);
        // The copier's own descriptor of the input shares its offset with
        // ours: where the copy ends, read(2) goes on.
        let started = self.file.try_clone().and_then(|src| Snapshot::start(src, dst, path, ops, copy_range));
        match started {
            Ok(s) => self.snapshot = Some(s),
            Err(e) => self.spill_path = Some(format!("read+write (cannot open the copy: {e})")),
        }
    }

    /// Where a clone makes a new file (macOS `clonefile`), replaces the
    /// spill file of `target` by a clone of the input, before the spill
    /// starts; the snapshot then finds the copy done. The clone is made
    /// under a name of its own (`clonefile` never replaces one) and renamed
    /// over the spill file. A failed clone is reported by the snapshot as a
    /// failed FICLONE is, and the input is read and written.
    pub(crate) fn clone_into(&mut self, target: &mut SpillTarget) {
        if !sys::CLONE_CREATES || !self.snapshot_from_start || self.copy_ops.is_some() {
            return;
        }
        let mut name = target.path.clone().into_os_string();
        name.push("-clone");
        let sibling = std::path::PathBuf::from(name);
        let cloned = sys::clone_new(self.file.as_fd(), &sibling).and_then(|file| {
            std::fs::rename(&sibling, &target.path).inspect_err(|_| drop(std::fs::remove_file(&sibling)))?;
            Ok(file)
        });
        match cloned {
            Ok(file) => {
                // The store's gc tells a spill in use by its lock.
                let _ = rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive);
                target.file = file;
                // Not written from offset 0 by the spill alone any more.
                target.direct = false;
                self.copy_ops = Some(snapshot::cloned(None));
            }
            Err(e) => self.copy_ops = Some(snapshot::cloned(Some(e))),
        }
    }

    /// How the spill got its bytes, once known: `FICLONE`,
    /// `copy_file_range`, or `read+write` with the reason in parentheses.
    pub fn spill_path(&self) -> Option<&str> {
        self.spill_path.as_deref()
    }

    /// The snapshot copy failed in a way that fails the spill (disk full,
    /// file too large): the caller reports it in place of the stored copy.
    pub fn take_copy_failure(&mut self) -> Option<io::Error> {
        self.copy_failure.take()
    }

    pub fn next_block(&mut self) -> io::Result<Next> {
        if let Some(sig) = crate::stream::interrupt::received() {
            return Ok(Next::Stopped(Stop::Signal(sig)));
        }
        if self.snapshot.is_some() {
            let mut buf = self.buffer();
            let snap = self.snapshot.as_mut().expect("a snapshot");
            match snap.read(&mut buf)? {
                snapshot::Read::Block(n) => {
                    return Ok(Next::Block(Arc::new(Block::filled(buf, n, true))));
                }
                snapshot::Read::Stopped(sig) => return Ok(Next::Stopped(Stop::Signal(sig))),
                snapshot::Read::Done(end) => {
                    // The live file's offset is where the copy ended: carry
                    // on with read(2) from there.
                    self.spill_path = Some(end.describe());
                    self.copy_failure = end.failure;
                    self.snapshot = None;
                }
            }
        }
        self.read_block()
    }

    fn read_block(&mut self) -> io::Result<Next> {
        if self.eof {
            return self.end();
        }
        let mut buf = self.buffer();
        let mut filled = 0;
        while filled < buf.len() {
            if filled == 0 || !self.is_ready_now() {
                // Only wait (and watch for stop conditions) when nothing is
                // buffered yet; otherwise hand over what we have.
                if filled > 0 {
                    break;
                }
                match self.wait_readable()? {
                    None => {}
                    Some(stop) => return Ok(Next::Stopped(stop)),
                }
            }
            match (&*self.file).read(&mut buf[filled..]) {
                Ok(0) => {
                    self.eof = true;
                    self.shrunk = self.shrank();
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    if let Some(sig) = crate::stream::interrupt::received() {
                        if filled == 0 {
                            return Ok(Next::Stopped(Stop::Signal(sig)));
                        }
                        break;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        if filled == 0 {
            return self.end();
        }
        Ok(Next::Block(Arc::new(Block::filled(buf, filled, false))))
    }

    /// End of input, or the error that stands for it when the file shrank.
    fn end(&mut self) -> io::Result<Next> {
        match self.shrunk.take() {
            Some(e) => Err(e),
            None => Ok(Next::Eof),
        }
    }

    /// A regular file now shorter than what was read from it: the error
    /// that ends the input (what was read is kept and enveloped).
    fn shrank(&self) -> Option<io::Error> {
        if !self.regular {
            return None;
        }
        let pos = rustix::fs::tell(&*self.file).ok()?;
        let size = self.file.metadata().ok()?.len();
        (size < pos).then(|| {
            io::Error::other(format!(
                "the input file shrank to {size} bytes while outbox read it (truncated?); \
the envelope and the stored copy hold the {pos} bytes read before"
            ))
        })
    }

    /// A recycled heap block of `block_size` bytes, or a new one.
    fn buffer(&mut self) -> Vec<u8> {
        self.recycle.as_ref().and_then(|rx| reuse(rx, self.block_size)).unwrap_or_else(|| vec![0; self.block_size])
    }

    fn is_ready_now(&self) -> bool {
        poll_readable(self.file.as_fd(), 0).unwrap_or(false)
    }

    /// Waits until the descriptor is readable, checking once a second for
    /// a signal or the caller's stop condition.
    fn wait_readable(&mut self) -> io::Result<Option<Stop>> {
        loop {
            if let Some(sig) = crate::stream::interrupt::received() {
                return Ok(Some(Stop::Signal(sig)));
            }
            match poll_readable(self.file.as_fd(), 1000) {
                Ok(true) => return Ok(None),
                Ok(false) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            if let Some(stop) = self.stop.as_mut() {
                if stop() {
                    return Ok(Some(Stop::Requested));
                }
            }
        }
    }
}

enum FdKind {
    Regular { pos: u64, size: u64 },
    Fifo,
    Other,
}

fn file_kind(fd: BorrowedFd<'_>) -> FdKind {
    let Ok(st) = rustix::fs::fstat(fd) else { return FdKind::Other };
    #[allow(clippy::unnecessary_cast)] // a 16-bit mode on macOS
    match FileType::from_raw_mode(st.st_mode as _) {
        FileType::RegularFile => match rustix::fs::tell(fd) {
            Ok(pos) => FdKind::Regular { pos, size: st.st_size.max(0) as u64 },
            Err(_) => FdKind::Other,
        },
        FileType::Fifo => FdKind::Fifo,
        _ => FdKind::Other,
    }
}

/// The buffer of a block the spill thread is done with, `size` bytes
/// long (its old bytes are left in it: every read overwrites what it
/// hands on).
fn reuse(rx: &Receiver<Arc<Block>>, size: usize) -> Option<Vec<u8>> {
    while let Ok(arc) = rx.try_recv() {
        if let Ok(Block { mut data, .. }) = Arc::try_unwrap(arc) {
            if data.capacity() >= size {
                // Only a buffer shorter than asked is extended (zeroed).
                data.resize(size, 0);
                return Some(data);
            }
        }
    }
    None
}

/// Ok(true) when `fd` is readable (or at EOF / hung up) within `ms`.
fn poll_readable(fd: BorrowedFd<'_>, ms: i64) -> io::Result<bool> {
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
    let timeout = Timespec { tv_sec: ms / 1000, tv_nsec: (ms % 1000) * 1_000_000 };
    Ok(rustix::event::poll(&mut fds, Some(&timeout))? > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A reused buffer keeps its old bytes past the new block's end; the
    /// block must show only what the read put there.
    #[test]
    fn a_reused_buffer_shows_only_the_new_bytes() {
        let (rx, mut tx) = std::io::pipe().expect("pipe");
        let (give_back, recycled) = crossbeam_channel::unbounded();
        let file = File::from(std::os::fd::OwnedFd::from(rx));
        let mut reader = Reader::owned(file).with_recycle(recycled);
        let writer = std::thread::spawn(move || {
            tx.write_all(&vec![b'a'; 300_000]).expect("write");
            tx
        });
        let mut first = Vec::new();
        while first.len() < 300_000 {
            match reader.next_block().expect("read") {
                Next::Block(b) => {
                    first.extend_from_slice(&b);
                    give_back.send(b).expect("recycle");
                }
                _ => panic!("input ended early"),
            }
        }
        let mut tx = writer.join().expect("writer");
        tx.write_all(b"bb\n").expect("write");
        drop(tx);
        let Next::Block(b) = reader.next_block().expect("read") else { panic!("no block") };
        assert_eq!(&b[..], b"bb\n");
        assert!(matches!(reader.next_block().expect("read"), Next::Eof));
    }
}
