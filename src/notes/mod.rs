//! Markdown notes: the outline both commands read ([`outline`]), packing
//! whole sections into a budget ([`pack`], run as a command by [`command`]),
//! reading notes files safely ([`files`]) and the preflight check of
//! required headings ([`check`]).

pub mod check;
pub mod command;
pub mod files;
pub mod outline;
pub mod pack;
