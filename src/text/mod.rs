//! Text, the leaf layer: counting characters of lossy UTF-8, making
//! untrusted bytes safe to print, shortening, and sizes.

pub mod sanitize;
pub mod size;
pub mod stderr;
pub mod utf8;
