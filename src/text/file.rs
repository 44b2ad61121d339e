//! Files outbox reads but does not own: the configuration, family files,
//! a project's `.git`, the run history. Any of them can be a FIFO (opening
//! it for reading waits for a writer for ever), a device (`/dev/zero` never
//! ends), a symlink planted by an unpacked tarball, or a huge file. So they
//! are opened without blocking (`O_NONBLOCK`), optionally without following
//! a final symlink (`O_NOFOLLOW`), and accepted only when the descriptor
//! says they are regular files no larger than the caller's cap; reads stop
//! at the cap even when the file grows meanwhile.
//!
//! This is the leaf layer so that every layer above (families, history,
//! the binary's configuration) shares one way of doing it.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

/// How to open an untrusted file.
#[derive(Debug, Clone, Copy)]
pub struct Untrusted {
    /// Largest size accepted, in bytes.
    pub cap: u64,
    /// Follow a final symlink (a user's dotfiles often are symlinks); the
    /// target must still be a regular file.
    pub follow: bool,
}

/// Opens `path` (relative to `at`, else to the working directory) for
/// reading, never blocking and never following a final symlink unless
/// asked; a FIFO, a device, a directory or a file over the cap is an error
/// that says what it is. Returns the file and its size.
pub fn open(at: Option<BorrowedFd<'_>>, path: &Path, how: Untrusted) -> io::Result<(File, u64)> {
    let mut flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    if !how.follow {
        flags |= OFlags::NOFOLLOW;
    }
    let fd = match at {
        Some(dir) => rustix::fs::openat(dir, path, flags, Mode::empty()),
        None => rustix::fs::openat(rustix::fs::CWD, path, flags, Mode::empty()),
    }
    .map_err(|e| match e {
        rustix::io::Errno::LOOP if !how.follow => {
            io::Error::new(io::ErrorKind::InvalidData, "it is a symbolic link, which outbox does not follow here")
        }
        e => io::Error::from(e),
    })?;
    let st = rustix::fs::fstat(&fd)?;
    let kind = FileType::from_raw_mode(st.st_mode);
    if kind != FileType::RegularFile {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it is {}, not a regular file", kind_name(kind)),
        ));
    }
    let size = st.st_size.max(0) as u64;
    if size > how.cap {
        return Err(too_large(how.cap));
    }
    Ok((File::from(fd), size))
}

/// The whole of a small untrusted file (see [`open`]).
pub fn read(at: Option<BorrowedFd<'_>>, path: &Path, how: Untrusted) -> io::Result<Vec<u8>> {
    let (file, size) = open(at, path, how)?;
    let mut buf = Vec::with_capacity(size as usize);
    // One byte past the cap tells a file that grew after fstat.
    file.take(how.cap + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > how.cap {
        return Err(too_large(how.cap));
    }
    Ok(buf)
}

/// The same as text (invalid UTF-8 is an error).
pub fn read_to_string(at: Option<BorrowedFd<'_>>, path: &Path, how: Untrusted) -> io::Result<String> {
    String::from_utf8(read(at, path, how)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not valid UTF-8"))
}

/// Opens a directory relative to `at` without following a symlink and
/// without blocking (a FIFO is not a directory: `ENOTDIR`).
pub fn open_dir(at: BorrowedFd<'_>, name: &Path) -> io::Result<std::os::fd::OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::DIRECTORY;
    Ok(rustix::fs::openat(at, name, flags, Mode::empty())?)
}

/// The working directory as a descriptor argument.
pub fn cwd() -> BorrowedFd<'static> {
    rustix::fs::CWD.as_fd()
}

fn too_large(cap: u64) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("it is larger than {cap} bytes"))
}

fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::Directory => "a directory",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Symlink => "a symbolic link",
        _ => "not a regular file",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const SMALL: Untrusted = Untrusted { cap: 16, follow: false };

    /// Runs `f` on a thread and fails if it takes longer than a few
    /// seconds (a FIFO opened the blocking way never returns).
    pub(crate) fn within_deadline<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(10)).expect("blocked past the deadline")
    }

    #[test]
    fn fifos_devices_links_and_large_files_are_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        let e = within_deadline(move || read(None, &fifo, SMALL)).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let e =
            within_deadline(|| read(None, Path::new("/dev/zero"), Untrusted { cap: 16, follow: true })).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let link = d.path().join("link");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let e = read(None, &link, SMALL).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let big = d.path().join("big");
        std::fs::write(&big, [b'x'; 17]).unwrap();
        assert!(read(None, &big, SMALL).unwrap_err().to_string().contains("larger than 16"));
        std::fs::write(&big, b"ok").unwrap();
        assert_eq!(read(None, &big, SMALL).unwrap(), b"ok");
        std::os::unix::fs::symlink(&big, d.path().join("ok-link")).unwrap();
        let follow = Untrusted { follow: true, ..SMALL };
        assert_eq!(read(None, &d.path().join("ok-link"), follow).unwrap(), b"ok");
        assert_eq!(read(None, Path::new("/nonexistent/x"), SMALL).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
