//! Reading a notes file safely, the errors that say what to do about one
//! that cannot be used, and how paths and report lines reach stderr.
//!
//! Invariants: only a non-empty regular file of at most [`MAX_NOTES_BYTES`]
//! is read; a FIFO or device is refused before it is opened (and again on
//! the open handle), never waited on; a path is printed only lossy and
//! with control characters escaped.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;

/// Largest file read as notes. Notes are read whole into memory; anything
/// this large is not a notes file, and refusing it keeps a stray argument
/// (a disk image, /proc/kcore) from exhausting memory.
pub const MAX_NOTES_BYTES: u64 = 1 << 30;

/// Why a notes file could not be used. The messages say what to do.
#[derive(Debug)]
pub enum NotesError {
    Missing,
    Empty,
    /// Not a regular file: what it is instead ("a directory", "a FIFO", ...).
    NotRegular(&'static str),
    TooLarge(u64),
    Io(io::Error),
}

impl std::fmt::Display for NotesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotesError::Missing => {
                write!(f, "no such file; check the path (relative paths start at the current directory)")
            }
            NotesError::Empty => write!(f, "the file is empty; write the notes or leave the file out"),
            NotesError::NotRegular(kind) => write!(f, "{kind}, not a regular file; pass a Markdown notes file"),
            NotesError::TooLarge(n) => {
                write!(f, "{n} bytes, more than the {MAX_NOTES_BYTES} bytes a notes file may have; split it")
            }
            NotesError::Io(e) => write!(f, "cannot be read ({e}); check its permissions"),
        }
    }
}

fn kind_of(ft: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO";
        }
        if ft.is_socket() {
            return "a socket";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
    }
    if ft.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// Reads a whole notes file, refusing anything but a non-empty regular file.
///
/// The type is checked with `stat` before opening, because opening a FIFO
/// for reading blocks until a writer appears and a device like /dev/zero
/// never ends. The open is non-blocking and the type is checked again on the
/// open handle, so a file swapped for a FIFO in between cannot hang us.
pub fn read_notes(path: &Path) -> Result<Vec<u8>, NotesError> {
    let io_err =
        |e: io::Error| if e.kind() == io::ErrorKind::NotFound { NotesError::Missing } else { NotesError::Io(e) };
    let meta = std::fs::metadata(path).map_err(io_err)?;
    if !meta.is_file() {
        return Err(NotesError::NotRegular(kind_of(meta.file_type())));
    }
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as _);
    }
    let file: File = opts.open(path).map_err(io_err)?;
    let meta = file.metadata().map_err(NotesError::Io)?;
    if !meta.is_file() {
        return Err(NotesError::NotRegular(kind_of(meta.file_type())));
    }
    if meta.len() > MAX_NOTES_BYTES {
        return Err(NotesError::TooLarge(meta.len()));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    // The size may lie (procfs says 0, a file may grow): cap the read too.
    file.take(MAX_NOTES_BYTES + 1).read_to_end(&mut buf).map_err(NotesError::Io)?;
    if buf.len() as u64 > MAX_NOTES_BYTES {
        return Err(NotesError::TooLarge(buf.len() as u64));
    }
    if buf.is_empty() {
        return Err(NotesError::Empty);
    }
    Ok(buf)
}

/// A path as it may be printed: lossy, control characters escaped.
pub fn display_path(path: &Path) -> String {
    crate::text::sanitize::display_str(&path.to_string_lossy()).text
}

/// Best-effort line on stderr. A report that cannot be written must not
/// turn into a panic (as `eprintln!` would) or hide the packed output.
pub(crate) fn note(line: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_notes_refuses_what_is_not_a_notes_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("ok.md"), b"## A\n").unwrap();
        std::fs::write(p("empty.md"), b"").unwrap();
        assert_eq!(read_notes(&p("ok.md")).unwrap(), b"## A\n");
        assert!(matches!(read_notes(&p("empty.md")), Err(NotesError::Empty)));
        assert!(matches!(read_notes(&p("nope.md")), Err(NotesError::Missing)));
        assert!(matches!(read_notes(dir.path()), Err(NotesError::NotRegular("a directory"))));
        assert!(matches!(read_notes(Path::new("/dev/zero")), Err(NotesError::NotRegular("a character device"))));
        let fifo = p("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert!(matches!(read_notes(&fifo), Err(NotesError::NotRegular("a FIFO"))));
        assert!(NotesError::NotRegular("a FIFO").to_string().contains("pass a Markdown notes file"));
    }
}
