//! Input sources turned into owned blocks.
//!
//! A pipe, terminal or file is read with large `read(2)` calls into
//! recycled heap blocks (a pipe is enlarged to 1 MiB, which needs no
//! privilege and lifts throughput on two-CPU machines). With `--mmap`, a
//! regular file on stdin is mapped instead, in windows small enough, and
//! unmapped as soon as the scanner and the spill thread are done with them,
//! that peak RSS stays flat; anything appended after the map was taken is
//! read normally. Mapping is opt-in because, measured on 1 GiB, page faults
//! made it 1-5x slower than read(2) from the page cache (sys time 0.9-2.8 s
//! against 0.2 s), and less steady.
//!
//! Every blocking read is preceded by a one-second `poll`, so a silent
//! producer never keeps the reader from noticing an interruption or a
//! caller's stop condition (wrap mode: the command exited, but a background
//! grandchild still holds the pipe open).

use std::fs::File;
use std::io::{self, Read};
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::Arc;

use crossbeam_channel::Receiver;
use memmap2::{Mmap, MmapOptions};

/// Default size of a heap block and of a mapped window.
pub const BLOCK_SIZE: usize = 1 << 20;
const WINDOW_SIZE: usize = 4 << 20;

/// An owned piece of input. Shared by `Arc` between the scanner and the
/// spill thread; heap blocks come back through the recycle channel.
pub enum Block {
    Heap(Vec<u8>),
    Map(Mmap),
}

impl Deref for Block {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Block::Heap(v) => v,
            Block::Map(m) => m,
        }
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

enum Kind {
    Stream,
    Mapped { next: u64, end: u64 },
}

/// Reads one file descriptor into blocks.
pub struct Reader {
    file: ManuallyDrop<File>,
    owned: bool,
    kind: Kind,
    block_size: usize,
    recycle: Option<Receiver<Arc<Block>>>,
    stop: Option<Box<dyn FnMut() -> bool + Send>>,
    /// A read returned 0. On a terminal that is a one-time event (Ctrl-D):
    /// reading again would wait for more input, so it is remembered.
    eof: bool,
}

impl Drop for Reader {
    fn drop(&mut self) {
        if self.owned {
            // Safety: owned readers were built from a descriptor we own.
            unsafe { ManuallyDrop::drop(&mut self.file) };
        }
    }
}

impl Reader {
    /// Reads standard input without taking ownership of fd 0.
    pub fn stdin(use_mmap: bool) -> Reader {
        // Safety: fd 0 stays open for the life of the process; ManuallyDrop
        // keeps us from closing it.
        let file = ManuallyDrop::new(unsafe { File::from_raw_fd(0) });
        Reader::new(file, false, use_mmap)
    }

    /// Reads a descriptor we own (e.g. the read end of a child's pipe).
    pub fn owned(file: File) -> Reader {
        Reader::new(ManuallyDrop::new(file), true, false)
    }

    /// Reads a descriptor without closing it when done: wrap mode keeps the
    /// read end open until it has told the reaper thread that the reader is
    /// gone, so the reaper's `dup2` onto that number never hits a
    /// descriptor reused by someone else.
    ///
    /// # Safety
    /// `fd` must stay open for as long as the reader exists.
    pub unsafe fn borrowed(fd: RawFd) -> Reader {
        // Not owned, so ManuallyDrop never closes it.
        let file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
        Reader::new(file, false, false)
    }

    /// Bytes left to read when the input is a regular file (for a progress
    /// meter's percentage); None for pipes and terminals.
    pub fn remaining(&self) -> Option<u64> {
        match file_kind(self.file.as_raw_fd()) {
            FdKind::Regular { pos, size } => Some(size.saturating_sub(pos)),
            _ => None,
        }
    }

    fn new(file: ManuallyDrop<File>, owned: bool, use_mmap: bool) -> Reader {
        let fd = file.as_raw_fd();
        let kind = match file_kind(fd) {
            FdKind::Regular { pos, size } if use_mmap && size > pos => {
                let page = page_size();
                // Map from the current position rounded up to a page; the
                // few bytes before it are read normally first.
                let aligned = pos.div_ceil(page) * page;
                if aligned < size {
                    Kind::Mapped { next: pos, end: size }
                } else {
                    Kind::Stream
                }
            }
            FdKind::Fifo => {
                enlarge_pipe(fd);
                Kind::Stream
            }
            _ => Kind::Stream,
        };
        Reader { file, owned, kind, block_size: BLOCK_SIZE, recycle: None, stop: None, eof: false }
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

    pub fn next_block(&mut self) -> io::Result<Next> {
        if let Some(sig) = crate::stream::interrupt::received() {
            return Ok(Next::Stopped(Stop::Signal(sig)));
        }
        if let Kind::Mapped { next, end } = self.kind {
            let page = page_size();
            if next < end && next % page != 0 {
                // Read up to the page boundary so the windows can be mapped.
                let upto = (next.div_ceil(page) * page).min(end);
                let want = (upto - next) as usize;
                let mut v = self.buffer();
                v.truncate(want);
                self.file.read_exact(&mut v)?;
                self.kind = Kind::Mapped { next: upto, end };
                return Ok(Next::Block(Arc::new(Block::Heap(v))));
            }
            if next < end {
                let len = ((end - next) as usize).min(WINDOW_SIZE);
                // Safety: the map is read-only; a file truncated under us
                // would fault, which is one reason mapping is opt-in.
                let map = unsafe { MmapOptions::new().offset(next).len(len).map(&*self.file)? };
                let _ = map.advise(memmap2::Advice::Sequential);
                self.kind = Kind::Mapped { next: next + len as u64, end };
                return Ok(Next::Block(Arc::new(Block::Map(map))));
            }
            // Past the mapped size: carry on with read(2) from there, in
            // case the file grew.
            let fd = self.file.as_raw_fd();
            unsafe { libc::lseek(fd, end as libc::off_t, libc::SEEK_SET) };
            self.kind = Kind::Stream;
        }
        self.read_block()
    }

    fn read_block(&mut self) -> io::Result<Next> {
        if self.eof {
            return Ok(Next::Eof);
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
            match self.file.read(&mut buf[filled..]) {
                Ok(0) => {
                    self.eof = true;
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
            return Ok(Next::Eof);
        }
        buf.truncate(filled);
        Ok(Next::Block(Arc::new(Block::Heap(buf))))
    }

    /// A recycled heap block of `block_size` bytes, or a new one.
    fn buffer(&mut self) -> Vec<u8> {
        if let Some(rx) = &self.recycle {
            while let Ok(arc) = rx.try_recv() {
                if let Ok(Block::Heap(mut v)) = Arc::try_unwrap(arc) {
                    if v.capacity() >= self.block_size {
                        v.resize(self.block_size, 0);
                        return v;
                    }
                }
            }
        }
        vec![0; self.block_size]
    }

    fn is_ready_now(&self) -> bool {
        poll_readable(self.file.as_raw_fd(), 0).unwrap_or(false)
    }

    /// Waits until the descriptor is readable, checking once a second for
    /// a signal or the caller's stop condition.
    fn wait_readable(&mut self) -> io::Result<Option<Stop>> {
        loop {
            if let Some(sig) = crate::stream::interrupt::received() {
                return Ok(Some(Stop::Signal(sig)));
            }
            match poll_readable(self.file.as_raw_fd(), 1000) {
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

fn file_kind(fd: RawFd) -> FdKind {
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return FdKind::Other;
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => {
            let pos = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
            if pos < 0 {
                return FdKind::Other;
            }
            FdKind::Regular { pos: pos as u64, size: st.st_size as u64 }
        }
        libc::S_IFIFO => FdKind::Fifo,
        _ => FdKind::Other,
    }
}

fn enlarge_pipe(fd: RawFd) {
    // Best effort: unprivileged processes may raise a pipe up to
    // /proc/sys/fs/pipe-max-size (1 MiB by default).
    unsafe {
        libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20);
    }
}

fn page_size() -> u64 {
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// Ok(true) when `fd` is readable (or at EOF / hung up) within `ms`.
fn poll_readable(fd: RawFd, ms: i32) -> io::Result<bool> {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let r = unsafe { libc::poll(&mut pfd, 1, ms) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r > 0)
}
