//! The snapshot of a regular file on stdin: copied into the spill file by
//! the kernel, then scanned by reading the copy.
//!
//! A copier thread tries FICLONE (a reflink on XFS and btrfs: nothing is
//! copied), else `copy_file_range(2)` in [`CHUNK`] steps (a page-cache copy
//! on ext4), at most [`LEAD`] bytes ahead of the reader so the copy's
//! unread pages stay few. The reader reads the copy behind it, so the
//! stored copy is byte for byte what was scanned even when the live file
//! changes during the run. Both calls advance the descriptors' offsets
//! (FICLONE by an explicit seek), so when the copy ends the live file's
//! offset is the snapshot's length and reading goes on from there with
//! `read(2)`: bytes appended meanwhile are read and spilled as usual.
//!
//! Fallbacks are chosen once per run, in order, and never retried: FICLONE
//! fails (EOPNOTSUPP on ext4, EXDEV across file systems, EINVAL...) →
//! `read(2)` of the live file with the spill's direct writes, when the
//! spill may write directly (see [`crate::stream::writer`]): a page-cache
//! copy takes fresh pages, which cost more than the read (a 4 GiB file on
//! stdin took 45.7 s with `copy_file_range` where `cp` took 13.9 s and
//! the read path 5-6 s); otherwise → `copy_file_range`; that fails with anything but a full disk (ENOSYS,
//! EXDEV, EINVAL, EOPNOTSUPP, EIO, or EINTR/EAGAIN eight times in a row) →
//! `read(2)` + `write(2)` from where the copy stopped. A short transfer is
//! only progress. ENOSPC, EDQUOT and EFBIG fail the spill as a failed
//! `write` would (the scan goes on from the live file; the envelope says
//! the full output was not kept). The copy strategy is a [`CopyOps`] so
//! tests can inject each of these.
//!
//! macOS clones with `clonefile`, which makes a new file rather than
//! filling an open one: the spill file is replaced by a clone before the
//! spill starts (`Reader::clone_into`), and the
//! copier finds it done ([`cloned`]). Where there is neither a clone nor a
//! kernel copy (other Unixes, the `portable` feature) there is no snapshot:
//! a file on stdin is read and written like a pipe.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::fs::SeekFrom;
use rustix::io::Errno;

use crate::sys;

/// Bytes asked of one `copy_file_range` call.
pub const CHUNK: usize = 8 << 20;
/// How far the copier may run ahead of the reader.
pub const LEAD: u64 = 64 << 20;
/// EINTR/EAGAIN in a row before `copy_file_range` is given up.
const RETRIES: u32 = 8;

/// How the clone is named in [`End::describe`]: `FICLONE`, `clonefile`.
const CLONE: &str = match sys::CLONE_NAME {
    Some(name) => name,
    None => "clone",
};

/// The two kernel calls a snapshot uses; both advance the descriptors'
/// offsets like `read`/`write` (tests replace them to inject failures).
pub trait CopyOps: Send {
    /// FICLONE: makes `dst` share `src`'s whole content.
    fn clone_file(&mut self, src: BorrowedFd<'_>, dst: BorrowedFd<'_>) -> io::Result<()>;
    /// `copy_file_range` of at most `len` bytes at both offsets; Ok(0) at
    /// the end of `src`.
    fn copy_range(&mut self, src: BorrowedFd<'_>, dst: BorrowedFd<'_>, len: usize) -> io::Result<usize>;
}

struct Kernel;

impl CopyOps for Kernel {
    fn clone_file(&mut self, src: BorrowedFd<'_>, dst: BorrowedFd<'_>) -> io::Result<()> {
        sys::clone_file(src, dst)
    }

    fn copy_range(&mut self, src: BorrowedFd<'_>, dst: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
        sys::copy_range(src, dst, len)
    }
}

/// The kernel's calls.
pub fn kernel() -> Box<dyn CopyOps> {
    Box::new(Kernel)
}

/// The spill file is a clone of the input already (macOS), or the clone
/// failed with `error`: the copier's clone reports that, and it copies
/// with the kernel's calls otherwise.
pub fn cloned(error: Option<io::Error>) -> Box<dyn CopyOps> {
    Box::new(Cloned(error))
}

struct Cloned(Option<io::Error>);

impl CopyOps for Cloned {
    fn clone_file(&mut self, _src: BorrowedFd<'_>, _dst: BorrowedFd<'_>) -> io::Result<()> {
        self.0.take().map_or(Ok(()), Err)
    }

    fn copy_range(&mut self, src: BorrowedFd<'_>, dst: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
        sys::copy_range(src, dst, len)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Clone,
    CopyRange,
    /// Nothing copied: the reader reads the live file (direct spill writes).
    ReadWrite,
}

/// How the copy ended.
#[derive(Debug)]
pub struct End {
    pub method: Method,
    /// Bytes in the spill file from the copy.
    pub copied: u64,
    /// Why FICLONE was not used.
    pub clone_error: Option<io::Error>,
    /// Why the rest is read and written instead (the call and its error).
    pub fallback: Option<(&'static str, io::Error)>,
    /// A failure that fails the spill.
    pub failure: Option<io::Error>,
}

impl End {
    /// `FICLONE`, `copy_file_range (FICLONE: EOPNOTSUPP)`, `read+write
    /// (copy_file_range: EXDEV)`, ... for `OUTBOX_DEBUG=1`.
    pub fn describe(&self) -> String {
        let why = || self.clone_error.as_ref().map(|e| format!(" ({CLONE}: {})", errno_name(e))).unwrap_or_default();
        let mut s = match self.method {
            Method::Clone => CLONE.to_string(),
            Method::CopyRange => format!("copy_file_range{}", why()),
            Method::ReadWrite => format!("read+write{}", why()),
        };
        if let Some((call, e)) = &self.fallback {
            s = if self.copied == 0 {
                format!("read+write ({call}: {})", errno_name(e))
            } else {
                format!("{s} for {} bytes, then read+write ({call}: {})", self.copied, errno_name(e))
            };
        }
        if let Some(e) = &self.failure {
            s = format!("{s} failed after {} bytes ({}): the spill fails", self.copied, errno_name(e));
        }
        s
    }
}

/// What the reader got from the copy.
pub enum Read {
    /// This many bytes at the front of the buffer.
    Block(usize),
    /// A signal arrived while waiting for the copier.
    Stopped(i32),
    /// Nothing more in the copy: read the live file from here.
    Done(End),
}

#[derive(Default)]
struct State {
    copied: u64,
    consumed: u64,
    done: bool,
    cancel: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    cond: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A copy in progress and the reader's position in it.
pub struct Snapshot {
    copy: File,
    pos: u64,
    shared: Arc<Shared>,
    copier: Option<JoinHandle<End>>,
}

impl Snapshot {
    /// Starts copying `src` (a regular file at offset 0; a descriptor that
    /// shares its offset with the reader's) into `dst` (the empty spill file
    /// at `path`, which is opened again for reading).
    /// `copy_range`: after a failed FICLONE, copy with `copy_file_range`
    /// (else leave the file to `read(2)` and the spill's writes).
    pub fn start(src: File, dst: File, path: &Path, ops: Box<dyn CopyOps>, copy_range: bool) -> io::Result<Snapshot> {
        let copy = File::open(path)?;
        let shared = Arc::new(Shared::default());
        let theirs = shared.clone();
        let copier = crate::stream::interrupt::with_signals_blocked(|| {
            std::thread::Builder::new()
                .name("outbox-copy".into())
                .spawn(move || copier(src, dst, ops, copy_range, &theirs))
        })?;
        Ok(Snapshot { copy, pos: 0, shared, copier: Some(copier) })
    }

    /// The next piece of the copy into `buf`, waiting for the copier.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<Read> {
        let mut st = self.shared.lock();
        loop {
            if st.copied > self.pos {
                let want = ((st.copied - self.pos) as usize).min(buf.len());
                drop(st);
                let buf = &mut buf[..want];
                self.copy.read_exact_at(buf, self.pos).map_err(|e| {
                    io::Error::new(e.kind(), format!("reading back the copy of the input in the store: {e}"))
                })?;
                self.pos += want as u64;
                self.shared.lock().consumed = self.pos;
                self.shared.cond.notify_all();
                return Ok(Read::Block(want));
            }
            if st.done {
                drop(st);
                let end = self.join().expect("a finished copier has not been joined yet");
                return Ok(Read::Done(end));
            }
            if let Some(sig) = crate::stream::interrupt::received() {
                return Ok(Read::Stopped(sig));
            }
            st = self.shared.cond.wait_timeout(st, Duration::from_secs(1)).map_or_else(|e| e.into_inner().0, |r| r.0);
        }
    }

    fn join(&mut self) -> Option<End> {
        let end = self.copier.take()?.join();
        Some(end.unwrap_or_else(|_| End {
            method: Method::CopyRange,
            copied: self.pos,
            clone_error: None,
            fallback: None,
            failure: Some(io::Error::other("the copy thread panicked")),
        }))
    }
}

impl Drop for Snapshot {
    /// Stops the copier (an interrupted run) and waits for it, so the spill
    /// file no longer changes once the reader is gone.
    fn drop(&mut self) {
        self.shared.lock().cancel = true;
        self.shared.cond.notify_all();
        let _ = self.join();
    }
}

fn copier(src: File, dst: File, mut ops: Box<dyn CopyOps>, copy_range: bool, shared: &Shared) -> End {
    let publish = |copied: u64, done: bool| {
        let mut st = shared.lock();
        st.copied = copied;
        st.done |= done;
        drop(st);
        shared.cond.notify_all();
    };
    let (s, d) = (src.as_fd(), dst.as_fd());
    let clone_error = match ops.clone_file(s, d) {
        Ok(()) => {
            let len = dst.metadata().map(|m| m.len()).unwrap_or(0);
            // FICLONE moves neither offset: put both where read(2) and the
            // spill's write(2) would have left them.
            let _ = rustix::fs::seek(s, SeekFrom::Start(len));
            let _ = rustix::fs::seek(d, SeekFrom::Start(len));
            publish(len, true);
            return End { method: Method::Clone, copied: len, clone_error: None, fallback: None, failure: None };
        }
        Err(e) => {
            // A failed clone leaves the target as it was; be sure of it.
            let _ = dst.set_len(0);
            e
        }
    };
    if !copy_range {
        publish(0, true);
        return End {
            method: Method::ReadWrite,
            copied: 0,
            clone_error: Some(clone_error),
            fallback: None,
            failure: None,
        };
    }
    let mut end =
        End { method: Method::CopyRange, copied: 0, clone_error: Some(clone_error), fallback: None, failure: None };
    let mut retries = 0;
    loop {
        {
            let mut st = shared.lock();
            while !st.cancel && end.copied - st.consumed >= LEAD {
                st = shared.cond.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            if st.cancel {
                break;
            }
        }
        match ops.copy_range(s, d, CHUNK) {
            Ok(0) => break,
            Ok(n) => {
                retries = 0;
                end.copied += n as u64;
                publish(end.copied, false);
            }
            Err(e) if is_transient(&e) && retries < RETRIES => {
                retries += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) if fails_the_spill(&e) => {
                end.failure = Some(e);
                break;
            }
            Err(e) => {
                end.fallback = Some(("copy_file_range", e));
                break;
            }
        }
    }
    publish(end.copied, true);
    end
}

fn is_transient(e: &io::Error) -> bool {
    matches!(Errno::from_io_error(e), Some(Errno::INTR | Errno::AGAIN))
}

/// Errors that a `write(2)` of the same bytes would hit too.
fn fails_the_spill(e: &io::Error) -> bool {
    matches!(Errno::from_io_error(e), Some(Errno::NOSPC | Errno::DQUOT | Errno::FBIG))
}

/// `EXDEV`, `EOPNOTSUPP`, ... (the error's text when it has no errno).
pub fn errno_name(e: &io::Error) -> String {
    let Some(errno) = Errno::from_io_error(e) else { return e.to_string() };
    let name = match errno {
        Errno::INVAL => "EINVAL",
        Errno::NOSYS => "ENOSYS",
        Errno::XDEV => "EXDEV",
        Errno::OPNOTSUPP => "EOPNOTSUPP",
        Errno::NOTTY => "ENOTTY",
        Errno::BADF => "EBADF",
        Errno::PERM => "EPERM",
        Errno::IO => "EIO",
        Errno::INTR => "EINTR",
        Errno::AGAIN => "EAGAIN",
        Errno::NOSPC => "ENOSPC",
        Errno::DQUOT => "EDQUOT",
        Errno::FBIG => "EFBIG",
        Errno::TXTBSY => "ETXTBSY",
        other => return format!("errno {}", other.raw_os_error()),
    };
    name.into()
}

// The kernel copy's fallbacks: Linux only (the portable build makes no
// snapshot; macOS has no copy_file_range and is not tested yet).
#[cfg(all(test, target_os = "linux", not(feature = "portable")))]
mod tests {
    //! Each fallback injected through [`CopyOps`]: the run picks the next
    //! path once, the scan sees every byte, and the stored copy is
    //! byte-identical (or, when the copy fails the spill, there is none).

    use super::*;
    use crate::stream::ingest::tests::Collect;
    use crate::stream::ingest::{ingest, Ingest};
    use crate::stream::input::Reader;
    use crate::stream::spill::SpillTarget;

    /// What each call does, in order; the last one repeats. `Real(n)` is the
    /// kernel's call asked for at most `n` bytes (a short transfer when `n`
    /// is smaller than what was asked).
    #[derive(Clone, Copy, Debug)]
    enum Step {
        Real(usize),
        Fail(Errno),
        /// The kernel's call, then the source is truncated to this length.
        RealThenTruncate(usize, u64),
        /// These bytes are appended to the source, then Ok(0): the snapshot
        /// ends there although the file goes on.
        EndThenAppend(&'static [u8]),
    }

    struct Fake {
        clone: Option<Errno>,
        steps: Vec<Step>,
        calls: usize,
        /// A clone that succeeds (by copying, where the file system has no
        /// FICLONE), after which these bytes are appended to the source.
        cloned_then: Option<&'static [u8]>,
    }

    impl CopyOps for Fake {
        fn clone_file(&mut self, src: BorrowedFd<'_>, dst: BorrowedFd<'_>) -> io::Result<()> {
            if let Some(more) = self.cloned_then {
                // Like FICLONE: the content, and neither offset moved.
                let mut buf = vec![0u8; 1 << 16];
                let mut at = 0;
                loop {
                    let n = rustix::io::pread(src, &mut buf[..], at).unwrap();
                    if n == 0 {
                        break;
                    }
                    assert_eq!(rustix::io::pwrite(dst, &buf[..n], at).unwrap(), n);
                    at += n as u64;
                }
                assert_eq!(rustix::io::pwrite(src, more, at).unwrap(), more.len());
                return Ok(());
            }
            match self.clone {
                Some(errno) => Err(errno.into()),
                None => Kernel.clone_file(src, dst),
            }
        }
        fn copy_range(&mut self, src: BorrowedFd<'_>, dst: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
            let step = self.steps[self.calls.min(self.steps.len() - 1)];
            self.calls += 1;
            match step {
                Step::Real(n) => Kernel.copy_range(src, dst, len.min(n)),
                Step::Fail(errno) => Err(errno.into()),
                Step::RealThenTruncate(n, to) => {
                    let r = Kernel.copy_range(src, dst, len.min(n));
                    rustix::fs::ftruncate(src, to).unwrap();
                    r
                }
                Step::EndThenAppend(more) => {
                    let size = rustix::fs::fstat(src).unwrap().st_size as u64;
                    assert_eq!(rustix::io::pwrite(src, more, size).unwrap(), more.len());
                    Ok(0)
                }
            }
        }
    }

    fn data(len: usize) -> Vec<u8> {
        (0..).flat_map(|i: u64| format!("line {i} of the input\n").into_bytes()).take(len).collect()
    }

    struct Run {
        ingest: Ingest,
        scanned: Vec<u8>,
        stored: Option<Vec<u8>>,
    }

    fn run(input: &[u8], clone: Option<Errno>, steps: &[Step]) -> Run {
        run_with(input, clone, steps, false)
    }

    /// `direct`: the spill may write directly (the store's default).
    fn run_with(input: &[u8], clone: Option<Errno>, steps: &[Step], direct: bool) -> Run {
        run_fake(input, Fake { clone, steps: steps.to_vec(), calls: 0, cloned_then: None }, direct)
    }

    fn run_fake(input: &[u8], fake: Fake, direct: bool) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("input.log");
        std::fs::write(&src, input).unwrap();
        let path = dir.path().join(".tmp-spill");
        let file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path).unwrap();
        let reader = Reader::owned(std::fs::OpenOptions::new().read(true).write(true).open(&src).unwrap())
            .with_copy_ops(Box::new(fake));
        let mut sink = Collect::default();
        let ingest = ingest(reader, &mut sink, Some(SpillTarget { file, path, guard: None, direct }), None, None);
        let stored = ingest.spill.temp.as_ref().map(|p| std::fs::read(p).unwrap());
        Run { ingest, scanned: sink.0, stored }
    }

    fn assert_whole(r: &Run, input: &[u8]) {
        assert!(r.ingest.read_error.is_none(), "{:?}", r.ingest.read_error);
        assert!(r.ingest.spill.error.is_none(), "{:?}", r.ingest.spill.error);
        assert!(r.scanned == input, "the scan saw every byte once");
        assert!(r.stored.as_deref() == Some(input), "the stored copy is byte-identical");
        assert_eq!(r.ingest.spill.digest, *blake3::hash(input).as_bytes());
    }

    const SIZE: usize = 3 * CHUNK + 12_345;

    #[test]
    fn clone_unsupported_uses_copy_file_range() {
        let input = data(SIZE);
        let r = run(&input, Some(Errno::OPNOTSUPP), &[Step::Real(usize::MAX)]);
        assert_whole(&r, &input);
        assert_eq!(r.ingest.spill_path, "copy_file_range (FICLONE: EOPNOTSUPP)");
    }

    /// With direct spill writes (the default) a file that cannot be cloned
    /// is not copied through the page cache: it is read and written like a
    /// pipe, and copy_file_range is never called.
    #[test]
    fn clone_unsupported_with_direct_writes_reads_the_file() {
        let input = data(SIZE);
        let r = run_with(&input, Some(Errno::OPNOTSUPP), &[Step::Fail(Errno::BADF)], true);
        assert_whole(&r, &input);
        assert_eq!(r.ingest.spill_path, "read+write (FICLONE: EOPNOTSUPP)");
    }

    #[test]
    fn each_unsupported_errno_falls_back_to_read_and_write() {
        let input = data(SIZE);
        for errno in [Errno::INVAL, Errno::NOSYS, Errno::XDEV, Errno::OPNOTSUPP, Errno::IO] {
            let r = run(&input, Some(Errno::XDEV), &[Step::Fail(errno)]);
            assert_whole(&r, &input);
            let want = format!("read+write (copy_file_range: {})", errno_name(&errno.into()));
            assert_eq!(r.ingest.spill_path, want);
        }
    }

    #[test]
    fn a_failure_midway_continues_with_read_and_write_from_there() {
        let input = data(SIZE);
        let r = run(&input, Some(Errno::INVAL), &[Step::Real(usize::MAX), Step::Real(1000), Step::Fail(Errno::XDEV)]);
        assert_whole(&r, &input);
        let want = format!("copy_file_range (FICLONE: EINVAL) for {} bytes, then read+write", CHUNK + 1000);
        assert!(r.ingest.spill_path.starts_with(&want), "{}", r.ingest.spill_path);
    }

    #[test]
    fn short_transfers_and_transient_errors_are_only_progress() {
        let input = data(SIZE);
        let steps =
            [Step::Real(1), Step::Fail(Errno::INTR), Step::Real(4095), Step::Fail(Errno::AGAIN), Step::Real(777_777)];
        let r = run(&input, Some(Errno::OPNOTSUPP), &steps);
        assert_whole(&r, &input);
        assert_eq!(r.ingest.spill_path, "copy_file_range (FICLONE: EOPNOTSUPP)");
    }

    #[test]
    fn endless_eintr_gives_up_once() {
        let input = data(100_000);
        let r = run(&input, Some(Errno::OPNOTSUPP), &[Step::Fail(Errno::INTR)]);
        assert_whole(&r, &input);
        assert_eq!(r.ingest.spill_path, "read+write (copy_file_range: EINTR)");
    }

    #[test]
    fn disk_full_fails_the_spill_but_not_the_scan() {
        let input = data(SIZE);
        for errno in [Errno::NOSPC, Errno::DQUOT, Errno::FBIG] {
            let r = run(&input, Some(Errno::OPNOTSUPP), &[Step::Real(CHUNK), Step::Fail(errno)]);
            assert!(r.scanned == input, "the scan saw every byte once");
            assert!(r.stored.is_none(), "no stored copy");
            assert_eq!(r.ingest.spill.error.as_ref().and_then(|e| e.raw_os_error()), Some(errno.raw_os_error()));
            assert!(r.ingest.read_error.is_none());
            assert_eq!(r.ingest.spill.digest, *blake3::hash(&input).as_bytes());
        }
    }

    #[test]
    fn a_file_truncated_while_copied_is_reported_and_the_copy_is_what_was_scanned() {
        let input = data(SIZE);
        let r = run(&input, Some(Errno::OPNOTSUPP), &[Step::RealThenTruncate(CHUNK, 1000)]);
        let e = r.ingest.read_error.as_ref().expect("the shrink is reported");
        assert!(e.to_string().contains("shrank to 1000 bytes"), "{e}");
        assert_eq!(r.scanned.len(), CHUNK);
        assert!(r.scanned == input[..CHUNK], "what was scanned is the file as it was");
        assert!(r.stored.as_deref() == Some(&r.scanned[..]), "the stored copy is what was scanned");
    }

    #[test]
    fn bytes_appended_after_the_snapshot_are_read_and_stored() {
        let input = data(SIZE);
        let more: &'static [u8] = b"appended while outbox was reading\nno newline at the end";
        let r = run(&input, Some(Errno::OPNOTSUPP), &[Step::Real(CHUNK), Step::EndThenAppend(more)]);
        // The snapshot stops after one chunk; the rest, appended bytes
        // included, comes from the live file.
        let whole = [&input[..], more].concat();
        assert!(r.ingest.read_error.is_none(), "{:?}", r.ingest.read_error);
        assert!(r.scanned == whole && r.stored.as_deref() == Some(&whole[..]));
        assert_eq!(r.ingest.spill_path, "copy_file_range (FICLONE: EOPNOTSUPP)");
    }

    /// A cloned file that grows, with direct spill writes allowed: more
    /// than a staging buffer follows the clone, at an unaligned offset.
    /// The spill writes it through the cache (a direct write there would be
    /// refused and fall back); either way every byte must be stored.
    #[test]
    fn bytes_appended_after_a_clone_are_stored_with_direct_writes_allowed() {
        let input = data(SIZE);
        let more: &'static [u8] = data(3 * crate::stream::writer::STAGE + 17).leak();
        let fake = Fake { clone: None, steps: vec![Step::Fail(Errno::BADF)], calls: 0, cloned_then: Some(more) };
        let r = run_fake(&input, fake, true);
        let whole = [&input[..], more].concat();
        assert!(r.ingest.read_error.is_none() && r.ingest.spill.error.is_none());
        assert!(r.scanned == whole, "the scan saw the clone, then the appended bytes");
        assert!(r.stored.as_deref() == Some(&whole[..]), "the stored copy is byte-identical");
        assert_eq!(r.ingest.spill_path, "FICLONE");
    }

    #[test]
    fn real_kernel_path_copies_exactly() {
        let input = data(SIZE);
        let r = run(&input, None, &[Step::Real(usize::MAX)]);
        assert_whole(&r, &input);
        assert!(
            r.ingest.spill_path == "FICLONE" || r.ingest.spill_path.starts_with("copy_file_range"),
            "{}",
            r.ingest.spill_path
        );
    }
}
