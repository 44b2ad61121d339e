//! Text, the leaf layer: counting characters of lossy UTF-8 (and mapping
//! the newlines in the same pass, `newlines`), making
//! untrusted bytes safe to print (one list of unsafe characters), shortening
//! with the one cut marker, line shapes (variable parts folded), line
//! masks (a line with its digit runs folded, the classification cache's
//! key) and templates (the kinds of signal lines), redrawn
//! lines as a terminal leaves them, sizes,
//! messages to stderr, and reading small files outbox does not own
//! (`file`: never blocking, regular files only, capped).

pub mod file;
pub mod mask;
pub mod newlines;
pub mod redraw;
pub mod sanitize;
pub mod secrets;
pub mod shape;
pub mod shorten;
pub mod size;
pub mod stderr;
pub mod template;
pub mod utf8;
