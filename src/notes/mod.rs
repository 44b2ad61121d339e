//! Markdown notes: the outline both commands read ([`outline`]), packing
//! whole sections into a budget ([`pack`], told by [`report`], run as a
//! command by [`command`]), reading notes files safely ([`files`]) and the
//! preflight check of required headings ([`check`]).

pub mod check;
pub mod command;
pub mod files;
pub mod outline;
pub mod pack;
pub mod report;
