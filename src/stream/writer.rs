//! How the spill's bytes reach the file.
//!
//! Bytes are collected in aligned staging buffers of [`STAGE`] bytes. A
//! run that never fills one (most runs) is written through the page cache
//! at the end, as any small file. Once one fills, a device thread starts:
//! it switches the file to `O_DIRECT` and writes every full buffer straight
//! from user memory while the spill thread fills the next one ([`STAGES`]
//! in turn), so the disk's latency is not the pipeline's. The device copies
//! the bytes, so the spill takes neither a kernel copy into the page cache
//! nor fresh page-cache pages, and its page cache stays empty whatever the
//! input's size; the last partial buffer goes through the cache. Why: on a
//! two-CPU virtual machine, `cat 1GiB | tee FILE` took 3-8 s where `cat |
//! tail -n 20` took 0.6-1.4 s and `cat | dd oflag=direct bs=4M` 1.0-1.6 s
//! (the cost is the guest's fresh pages, which the host must fault in);
//! outbox took 0.76 s (median of 5) with direct writes from the start
//! against 0.83 s with the first 16 MiB and 1.94 s with the first 64 MiB
//! through the cache.
//!
//! Where `O_DIRECT` is refused (tmpfs before Linux 6.6, some FUSE and
//! network filesystems: `EINVAL` or `EOPNOTSUPP` when switching or on a
//! write), the device falls back, once, to plain writes with write-behind
//! past [`WB_START`] (`WriteBehind`). A short direct write that leaves
//! the file offset unaligned does the same for the rest. The choice is
//! named on stderr with `OUTBOX_DEBUG=1` and by [`SpillWriter::path`]. A
//! write error stops the device; the spill thread sees it at its next
//! hand-over or at [`SpillWriter::finish`].
//!
//! `OUTBOX_DIRECT=0` turns direct writes off (for disks slower than the
//! input: the cache absorbs bursts that direct writes would wait for).
//!
//! Only a spill written from offset 0 by this writer alone goes direct: a
//! snapshot copy of a file on stdin shares the open file (and its flags),
//! so the caller says when direct writes are allowed; otherwise every
//! write is a plain one, on the spill thread.
//!
//! On macOS the switch is `F_NOCACHE` and there is no write-behind; where
//! neither exists (other Unixes, the `portable` feature) every write goes
//! through the page cache (see [`crate::sys`]).

use std::fs::File;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver, Sender};
use rustix::io::Errno;

use crate::sys;

/// Alignment of direct writes: buffer address, file offset and length.
/// 4096 covers devices with 512-byte and 4 KiB logical blocks.
pub const ALIGN: usize = 4096;
/// Size of a staging buffer: the unit of a direct write, and the size
/// below which a run is written through the page cache only.
pub const STAGE: usize = 2 << 20;
/// Staging buffers in turn: one filling, one queued, one being written.
pub const STAGES: usize = 3;

/// Spill bytes left to the kernel's own writeback (and kept in the page
/// cache) before write-behind starts, when writes are not direct: runs
/// below it never wait for the disk.
pub const WB_START: u64 = 512 << 20;
/// Writeback is started, and pages dropped, in steps of this size.
pub const WB_STEP: u64 = 32 << 20;

/// How direct writes are named in [`SpillWriter::path`]: `O_DIRECT`,
/// `F_NOCACHE`.
const DIRECT: &str = match sys::DIRECT_NAME {
    Some(name) => name,
    None => "direct writes",
};

/// The path of plain writes: with write-behind where the platform has it.
const CACHED: &str = if sys::WRITE_BEHIND { "page cache with write-behind" } else { "page cache" };

/// Writes the spill's bytes in order, from offset 0.
pub struct SpillWriter {
    /// The spill file (our own descriptor of it: the device thread writes
    /// through it, whoever closes theirs).
    file: Arc<File>,
    /// Bytes accepted (staged or in the file).
    written: u64,
    /// The buffer being filled, while writes are staged.
    stage: Option<Stage>,
    stage_size: usize,
    /// Plain writes on this thread (direct writes not allowed).
    plain: Option<Plain>,
    /// The device thread, once a buffer has filled; or its parts before.
    device: DeviceState,
    path: String,
}

enum DeviceState {
    /// Not started: what it will need.
    Idle(Box<Device>),
    Running {
        tx: Sender<Job>,
        free: Receiver<Stage>,
        spare: usize,
        failed: Arc<Mutex<Option<io::Error>>>,
        join: JoinHandle<Device>,
    },
    /// No thread to be had: buffers are written on the spill thread, the
    /// same path without the overlap.
    Inline(Box<Device>),
    Done,
}

/// A full buffer to write, or the last one (any length).
struct Job {
    stage: Stage,
    last: bool,
}

/// The two calls direct writing makes (tests inject failures here).
pub trait DirectOps: Send {
    /// Turns direct writes (`O_DIRECT`, `F_NOCACHE`) on or off for the
    /// open file.
    fn set_direct(&mut self, file: &File, on: bool) -> io::Result<()>;
    /// One `write(2)`.
    fn write(&mut self, file: &File, data: &[u8]) -> io::Result<usize>;
}

struct Kernel;

impl DirectOps for Kernel {
    fn set_direct(&mut self, file: &File, on: bool) -> io::Result<()> {
        sys::set_direct(std::os::fd::AsFd::as_fd(file), on)
    }

    fn write(&mut self, mut file: &File, data: &[u8]) -> io::Result<usize> {
        file.write(data)
    }
}

impl SpillWriter {
    /// A writer for `file`, whose offset is 0. `direct`: nobody else
    /// writes through this open file, so its flags may change.
    /// `OUTBOX_DIRECT=0`, or a platform without direct writes, keeps every
    /// write in the page cache.
    pub fn new(file: &File, direct: bool) -> io::Result<SpillWriter> {
        let refused = direct && sys::DIRECT_NAME.is_some() && !direct_allowed();
        let direct = direct && sys::DIRECT_NAME.is_some() && !refused;
        let mut w = SpillWriter::with_sizes(file, direct, STAGE, WB_START, WB_STEP)?;
        if refused {
            w.path = format!("{CACHED} (OUTBOX_DIRECT=0)");
        }
        Ok(w)
    }

    pub(crate) fn with_sizes(
        file: &File,
        direct: bool,
        stage: usize,
        wb_start: u64,
        wb_step: u64,
    ) -> io::Result<SpillWriter> {
        assert!(stage > 0 && stage.is_multiple_of(ALIGN), "the stage is whole aligned blocks");
        let file = Arc::new(file.try_clone()?);
        let behind = WriteBehind::starting_at(file.clone(), wb_start, wb_step);
        let first = direct.then(|| Stage::new(stage));
        let path = match &first {
            Some(_) => "page cache (nothing written yet)".to_string(),
            None => CACHED.to_string(),
        };
        let plain = first.is_none().then(|| Plain { file: file.clone(), behind: behind.clone() });
        let device = Device {
            file: file.clone(),
            direct: false,
            written: 0,
            behind,
            path: String::new(),
            ops: Box::new(Kernel),
        };
        Ok(SpillWriter {
            file,
            written: 0,
            stage: first,
            stage_size: stage,
            plain,
            device: DeviceState::Idle(Box::new(device)),
            path,
        })
    }

    /// Direct writes through `ops` instead of the kernel's calls.
    #[cfg(test)]
    pub(crate) fn with_ops(mut self, ops: Box<dyn DirectOps>) -> SpillWriter {
        if let DeviceState::Idle(d) = &mut self.device {
            d.ops = ops;
        }
        self
    }

    /// Writes buffers on the calling thread, as when no device thread
    /// can be spawned.
    #[cfg(test)]
    pub(crate) fn without_thread(mut self) -> SpillWriter {
        if let DeviceState::Idle(d) = std::mem::replace(&mut self.device, DeviceState::Done) {
            self.device = DeviceState::Inline(d);
        }
        self
    }

    /// How the bytes were written: `page cache`, `O_DIRECT`, or the
    /// fallback with its reason (final after [`SpillWriter::finish`]).
    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn write(&mut self, mut data: &[u8]) -> io::Result<()> {
        if let Some(p) = self.plain.as_mut() {
            self.written += data.len() as u64;
            return p.write(data, self.written);
        }
        while !data.is_empty() {
            let stage = self.stage.as_mut().expect("a stage while staging");
            let n = stage.fill(data);
            self.written += n as u64;
            data = &data[n..];
            if stage.is_full() {
                let full = self.stage.take().expect("stage");
                self.stage = Some(self.hand_over(full, false)?);
            }
        }
        Ok(())
    }

    /// Writes what is staged and waits for the device: the file holds
    /// every byte after this, or the first error is returned.
    pub fn finish(&mut self) -> io::Result<()> {
        let Some(stage) = self.stage.take() else { return Ok(()) };
        match std::mem::replace(&mut self.device, DeviceState::Done) {
            DeviceState::Idle(_) => {
                // A small run: through the cache.
                self.path = "page cache".into();
                (&*self.file).write_all(stage.bytes())
            }
            DeviceState::Running { tx, failed, join, .. } => {
                let _ = tx.send(Job { stage, last: true });
                drop(tx);
                let device = join.join().map_err(|_| io::Error::other("the spill's device thread panicked"))?;
                self.path = device.path;
                match failed.lock().expect("error slot").take() {
                    Some(e) => Err(e),
                    None => Ok(()),
                }
            }
            DeviceState::Inline(mut device) => {
                let mut stage = stage;
                let r = device.write(&mut stage, true);
                self.path = device.path;
                r
            }
            DeviceState::Done => Ok(()),
        }
    }

    /// Gives a full buffer to the device thread (starting it the first
    /// time) and returns an empty one.
    fn hand_over(&mut self, full: Stage, last: bool) -> io::Result<Stage> {
        if let DeviceState::Idle(_) = self.device {
            self.start_device();
        }
        let (tx, free, spare, failed) = match &mut self.device {
            DeviceState::Running { tx, free, spare, failed, .. } => (tx, free, spare, failed),
            DeviceState::Inline(device) => {
                let mut full = full;
                device.write(&mut full, last)?;
                full.clear();
                return Ok(full);
            }
            DeviceState::Idle(_) | DeviceState::Done => unreachable!("the device is started and not finished"),
        };
        if let Some(e) = failed.lock().expect("error slot").take() {
            return Err(e);
        }
        let size = self.stage_size;
        let _ = tx.send(Job { stage: full, last });
        // A spare buffer while there are some, then the ones written.
        if *spare > 0 {
            *spare -= 1;
            return Ok(Stage::new(size));
        }
        free.recv().map_err(|_| io::Error::other("the spill's device thread stopped"))
    }

    fn start_device(&mut self) {
        let DeviceState::Idle(device) = std::mem::replace(&mut self.device, DeviceState::Done) else { return };
        // The device reaches the thread by channel, so that it is still
        // ours when no thread can be spawned.
        let (hand, take) = bounded::<Box<Device>>(1);
        let (tx, jobs) = bounded::<Job>(1);
        let (give_back, free) = bounded::<Stage>(STAGES);
        let failed = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&failed);
        let spawned = std::thread::Builder::new().name("outbox-device".into()).spawn(move || {
            let mut device = take.recv().expect("the device is handed over at the start");
            let mut failed = false;
            for job in jobs {
                let mut stage = job.stage;
                if !failed {
                    if let Err(e) = device.write(&mut stage, job.last) {
                        *slot.lock().expect("error slot") = Some(e);
                        failed = true;
                    }
                }
                stage.clear();
                let _ = give_back.try_send(stage);
            }
            *device
        });
        self.device = match spawned {
            Ok(join) => {
                let _ = hand.send(device);
                DeviceState::Running { tx, free, spare: STAGES - 1, failed, join }
            }
            Err(_) => DeviceState::Inline(device),
        };
    }
}

impl Drop for SpillWriter {
    /// The device thread must be gone when the writer is: a spill dropped
    /// after a failure is removed by its owner, and nothing may write into
    /// it afterwards.
    fn drop(&mut self) {
        if let DeviceState::Running { tx, join, .. } = std::mem::replace(&mut self.device, DeviceState::Done) {
            drop(tx);
            let _ = join.join();
        }
    }
}

/// Plain writes through the page cache, with write-behind.
struct Plain {
    file: Arc<File>,
    behind: WriteBehind,
}

impl Plain {
    /// Writes `data`; the file then holds `written` bytes.
    fn write(&mut self, data: &[u8], written: u64) -> io::Result<()> {
        (&*self.file).write_all(data)?;
        self.behind.advance(written);
        Ok(())
    }
}

/// The device thread's side: writes buffers in order, directly while it
/// can, through the cache once it cannot.
struct Device {
    file: Arc<File>,
    /// The file is in `O_DIRECT` (`F_NOCACHE`) mode.
    direct: bool,
    /// Bytes in the file.
    written: u64,
    behind: WriteBehind,
    path: String,
    ops: Box<dyn DirectOps>,
}

impl Device {
    fn write(&mut self, stage: &mut Stage, last: bool) -> io::Result<()> {
        if self.path.is_empty() {
            self.path = match self.ops.set_direct(&self.file, true) {
                Ok(()) => {
                    self.direct = true;
                    DIRECT.into()
                }
                Err(e) => format!("{CACHED} ({DIRECT} refused: {e})"),
            };
            say(&self.path);
        }
        if self.direct {
            let before = stage.len();
            let refused = stage.flush_aligned(&self.file, self.ops.as_mut())?;
            self.written += (before - stage.len()) as u64;
            if let Some(why) = &refused {
                self.path = format!("{CACHED} ({why})");
                say(&self.path);
            }
            if refused.is_some() || last {
                // The rest (the last partial block, or all from here)
                // goes through the cache.
                self.ops.set_direct(&self.file, false)?;
                self.direct = false;
            }
        }
        if !stage.is_empty() {
            (&*self.file).write_all(stage.bytes())?;
            self.written += stage.len() as u64;
            self.behind.advance(self.written);
        }
        Ok(())
    }
}

/// `OUTBOX_DIRECT=0`: every spill goes through the page cache (with
/// write-behind past [`WB_START`]). For a disk much slower than the input,
/// where the cache absorbs a burst that direct writes would wait for.
pub(crate) fn direct_allowed() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("OUTBOX_DIRECT").is_none_or(|v| v != "0"))
}

fn say(what: &str) {
    if crate::stream::spill::debug_enabled() {
        crate::text::stderr::say(format_args!("spill: {what}"));
    }
}

/// An aligned buffer that collects bytes until a whole direct write's
/// worth is there: `cap` bytes of `buf` from `start`, an address aligned to
/// [`ALIGN`].
struct Stage {
    buf: Box<[u8]>,
    start: usize,
    cap: usize,
    len: usize,
}

impl Stage {
    fn new(cap: usize) -> Stage {
        // One alignment's worth more, to start at an aligned address. A
        // zeroed allocation this size is fresh pages: the zeroes cost
        // nothing until written.
        let buf = vec![0u8; cap + ALIGN].into_boxed_slice();
        let start = buf.as_ptr().align_offset(ALIGN);
        Stage { buf, start, cap, len: 0 }
    }

    fn is_full(&self) -> bool {
        self.len == self.cap
    }

    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn clear(&mut self) {
        self.len = 0;
    }

    /// Copies what fits of `data`; returns how many bytes that was.
    fn fill(&mut self, data: &[u8]) -> usize {
        let n = (self.cap - self.len).min(data.len());
        let at = self.start + self.len;
        self.buf[at..at + n].copy_from_slice(&data[..n]);
        self.len += n;
        n
    }

    /// Writes the aligned prefix of what is staged and moves the rest to
    /// the front. `Ok(Some(why))`: direct writes stopped working (the file
    /// offset is aligned and what was not written is still staged).
    fn flush_aligned(&mut self, file: &File, ops: &mut dyn DirectOps) -> io::Result<Option<String>> {
        let aligned = self.len - self.len % ALIGN;
        let mut done = 0;
        let mut failed = None;
        while done < aligned {
            let r = match ops.write(file, &self.bytes()[done..aligned]) {
                Ok(r) => r,
                Err(e) => match Errno::from_io_error(&e) {
                    Some(Errno::INTR) => continue,
                    Some(Errno::INVAL | Errno::OPNOTSUPP) => {
                        failed = Some(format!("direct write refused: {e}"));
                        break;
                    }
                    _ => return Err(e),
                },
            };
            if r == 0 {
                return Err(io::Error::new(io::ErrorKind::WriteZero, "a direct write wrote nothing"));
            }
            done += r;
            if !done.is_multiple_of(ALIGN) {
                // The offset is unaligned now: no more direct writes.
                failed = Some(format!("short direct write of {r} bytes"));
                break;
            }
        }
        self.buf.copy_within(self.start + done..self.start + self.len, self.start);
        self.len -= done;
        Ok(failed)
    }

    /// The staged bytes.
    fn bytes(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
}

/// Write-behind state for one spill file: `[WB_START, kicked)` has had its
/// writeback started, `[WB_START, dropped)` is on disk and out of the cache.
/// Off from the start where the platform has no write-behind.
#[derive(Clone)]
pub(crate) struct WriteBehind {
    file: Arc<File>,
    kicked: u64,
    dropped: u64,
    step: u64,
    on: bool,
}

impl WriteBehind {
    fn starting_at(file: Arc<File>, start: u64, step: u64) -> WriteBehind {
        WriteBehind { file, kicked: start, dropped: start, step, on: sys::WRITE_BEHIND }
    }

    /// The file now holds `written` bytes from offset 0.
    fn advance(&mut self, written: u64) {
        if !self.on || written < self.kicked + self.step {
            return;
        }
        let fd = std::os::fd::AsFd::as_fd(&*self.file);
        let previous = self.kicked;
        // Start writing the newest step; do not wait for it.
        if let Err(e) = sys::start_writeback(fd, previous, written - previous) {
            return self.off("sync_file_range", e);
        }
        self.kicked = written;
        // The step started last time is usually on disk by now: wait for
        // whatever is left of it, then drop its clean pages.
        if previous > self.dropped {
            if let Err((call, e)) = sys::finish_writeback(fd, self.dropped, previous - self.dropped) {
                return self.off(call, e);
            }
            self.dropped = previous;
        }
    }

    fn off(&mut self, call: &str, e: io::Error) {
        self.on = false;
        if crate::stream::spill::debug_enabled() {
            crate::text::stderr::say(format_args!("spill: write-behind off ({call}: {e}); plain writes from here"));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// What a scripted direct write does.
    #[derive(Clone, Copy, Debug)]
    enum Outcome {
        /// Fails with this errno, writing nothing.
        Errno(Errno),
        /// Writes at most this many bytes.
        Short(usize),
    }

    /// Direct ops that never set `O_DIRECT` for real (so any length can be
    /// written) and follow a script: `refuse_switch` fails the first
    /// `set_direct(true)`, `plan` decides the first writes (the rest are
    /// whole). Every call is logged.
    struct Scripted {
        refuse_switch: Option<Errno>,
        plan: VecDeque<Outcome>,
        log: Arc<Mutex<Vec<String>>>,
    }

    impl DirectOps for Scripted {
        fn set_direct(&mut self, _file: &File, on: bool) -> io::Result<()> {
            self.log.lock().unwrap().push(format!("set {on}"));
            match self.refuse_switch.take().filter(|_| on) {
                Some(errno) => Err(errno.into()),
                None => Ok(()),
            }
        }

        fn write(&mut self, file: &File, data: &[u8]) -> io::Result<usize> {
            self.log.lock().unwrap().push(format!("write {}", data.len()));
            let n = match self.plan.pop_front() {
                Some(Outcome::Errno(e)) => return Err(e.into()),
                Some(Outcome::Short(n)) => n.min(data.len()),
                None => data.len(),
            };
            Kernel.write(file, &data[..n])
        }
    }

    /// Writes `total` pseudo-random bytes in uneven pieces through a writer
    /// with an 8 KiB stage; returns them, the file's content, the path and
    /// the result of the first failing call.
    fn run(total: usize, ops: Option<Scripted>) -> (Vec<u8>, Vec<u8>, String, io::Result<()>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spill");
        let file = File::create(&path).unwrap();
        let mut w = SpillWriter::with_sizes(&file, true, 2 * ALIGN, 1 << 30, 1 << 20).unwrap();
        if let Some(ops) = ops {
            w = w.with_ops(Box::new(ops));
        }
        let mut want = Vec::new();
        let mut x = 0x9e37_79b9_u32;
        let mut result = Ok(());
        while want.len() < total && result.is_ok() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let piece: Vec<u8> =
                (0..(x as usize % 5000 + 1).min(total - want.len())).map(|i| (i as u32 ^ x) as u8).collect();
            result = w.write(&piece);
            want.extend_from_slice(&piece);
        }
        let result = result.and_then(|()| w.finish());
        drop(file);
        (want, std::fs::read(&path).unwrap(), w.path().to_string(), result)
    }

    fn scripted(refuse_switch: Option<Errno>, plan: &[Outcome]) -> (Scripted, Arc<Mutex<Vec<String>>>) {
        let log = Arc::new(Mutex::new(Vec::new()));
        (Scripted { refuse_switch, plan: plan.iter().copied().collect(), log: log.clone() }, log)
    }

    /// The kernel's own calls on a real file: every byte lands, the file
    /// is left without `O_DIRECT` (the last partial block is written
    /// through the cache).
    #[test]
    fn direct_writes_keep_every_byte() {
        for total in [0, 1, ALIGN - 1, 2 * ALIGN, 2 * ALIGN + 1, 300_001] {
            let (want, got, path, result) = run(total, None);
            result.unwrap();
            assert!(got == want, "{total} bytes: content differs");
            let expected = match sys::DIRECT_NAME {
                Some(_) if total >= 2 * ALIGN => DIRECT.to_string(),
                // No direct writes on this platform: refused at the switch.
                None if total >= 2 * ALIGN => format!("{CACHED} ({DIRECT} refused: "),
                _ => "page cache".to_string(),
            };
            assert!(path.starts_with(&expected), "{total} bytes: {path}");
        }
    }

    /// Without a device thread (spawning failed) the same path runs on
    /// the spill thread: every byte lands, the refusals still fall back.
    #[test]
    fn without_a_thread_the_buffers_are_written_inline() {
        for refuse in [None, Some(Errno::INVAL)] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("spill");
            let file = File::create(&path).unwrap();
            let (ops, _) = scripted(refuse, &[]);
            let mut w = SpillWriter::with_sizes(&file, true, 2 * ALIGN, 1 << 30, 1 << 20)
                .unwrap()
                .with_ops(Box::new(ops))
                .without_thread();
            let want: Vec<u8> = (0..100_003u32).map(|i| (i % 251) as u8).collect();
            for piece in want.chunks(3001) {
                w.write(piece).unwrap();
            }
            w.finish().unwrap();
            drop(file);
            assert!(std::fs::read(&path).unwrap() == want);
            let expected = if refuse.is_some() { format!("{CACHED} ({DIRECT} refused") } else { DIRECT.to_string() };
            assert!(w.path().starts_with(&expected), "{}", w.path());
        }
    }

    /// A run smaller than the stage is one plain write at the end: no
    /// `O_DIRECT`, no direct write.
    #[test]
    fn a_small_run_never_goes_direct() {
        let (ops, log) = scripted(None, &[]);
        let (want, got, path, result) = run(2 * ALIGN - 1, Some(ops));
        result.unwrap();
        assert!(got == want);
        assert_eq!(path, "page cache");
        assert!(log.lock().unwrap().is_empty(), "{:?}", log.lock().unwrap());
    }

    /// Refusals fall back once, to plain writes, and lose nothing: at the
    /// switch (a filesystem without `O_DIRECT`) and at the first or a later
    /// write.
    #[test]
    fn refusals_fall_back_once_and_lose_nothing() {
        let switch = format!("{DIRECT} refused");
        let cases: [(Option<Errno>, &[Outcome], &str); 5] = [
            (Some(Errno::INVAL), &[], &switch),
            (Some(Errno::OPNOTSUPP), &[], &switch),
            (None, &[Outcome::Errno(Errno::INVAL)], "direct write refused"),
            (None, &[Outcome::Short(2 * ALIGN), Outcome::Errno(Errno::OPNOTSUPP)], "direct write refused"),
            (None, &[Outcome::Short(100)], "short direct write of 100 bytes"),
        ];
        for (refuse, plan, why) in cases {
            let (ops, log) = scripted(refuse, plan);
            let (want, got, path, result) = run(200_000, Some(ops));
            result.unwrap();
            assert!(got == want, "{plan:?}: content differs");
            assert!(path.starts_with(&format!("{CACHED} (")) && path.contains(why), "{plan:?}: {path}");
            let log = log.lock().unwrap();
            let writes = log.iter().filter(|l| l.starts_with("write")).count();
            assert_eq!(writes, plan.len(), "{plan:?}: no direct write after the fallback: {log:?}");
        }
    }

    /// EINTR is retried and a short write of whole blocks goes on
    /// directly.
    #[test]
    fn interrupted_and_short_aligned_writes_go_on() {
        let (ops, log) = scripted(None, &[Outcome::Errno(Errno::INTR), Outcome::Short(ALIGN), Outcome::Short(ALIGN)]);
        let (want, got, path, result) = run(200_000, Some(ops));
        result.unwrap();
        assert!(got == want);
        assert_eq!(path, DIRECT);
        let log = log.lock().unwrap();
        assert_eq!(&log[..4], ["set true", "write 8192", "write 8192", "write 4096"], "{log:?}");
        assert_eq!(log.last().unwrap(), "set false", "the last partial block goes through the cache");
    }

    /// Any other error (a full disk) fails the write, as a plain write's
    /// would.
    #[test]
    fn other_errors_fail_the_spill() {
        let (ops, _) = scripted(None, &[Outcome::Short(ALIGN), Outcome::Errno(Errno::NOSPC)]);
        let (.., result) = run(200_000, Some(ops));
        assert_eq!(result.unwrap_err().raw_os_error(), Some(Errno::NOSPC.raw_os_error()));
    }

    /// A real full device: the error comes back however the file takes
    /// `O_DIRECT`.
    #[test]
    fn a_full_device_fails_the_write() {
        let Ok(full) = File::options().write(true).open("/dev/full") else { return };
        let mut w = SpillWriter::with_sizes(&full, true, 2 * ALIGN, 1 << 30, 1 << 20).unwrap();
        let r = w.write(&[b'x'; 3 * ALIGN]).and_then(|()| w.finish());
        assert_eq!(r.unwrap_err().raw_os_error(), Some(Errno::NOSPC.raw_os_error()));
    }

    /// Small thresholds on a real file: the ranges behind the writer are
    /// written back and dropped as it goes, and the content is intact.
    #[test]
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    fn write_behind_drops_what_is_on_disk_and_keeps_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spill");
        let mut file = File::create(&path).unwrap();
        let mut wb = WriteBehind::starting_at(Arc::new(file.try_clone().unwrap()), 2 << 20, 1 << 20);
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
        let (pipe, _writer) = std::io::pipe().unwrap();
        let mut wb = WriteBehind::starting_at(Arc::new(File::from(std::os::fd::OwnedFd::from(pipe))), 0, 1);
        wb.advance(10);
        assert!(!wb.on);
        wb.advance(20);
        assert_eq!(wb.kicked, 0);
    }
}
