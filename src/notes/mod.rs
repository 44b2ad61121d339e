//! Markdown notes: the outline both commands read ([`outline`]), packing
//! whole sections into a budget ([`pack`], decided by [`plan`] over a
//! compact `index` of the sections, too-large sections by their
//! `parts`, told by [`report`], run as a command by [`command`]), reading
//! notes files safely ([`files`]) and the preflight check of required
//! headings ([`check`]).

pub mod check;
mod column;
pub mod command;
pub mod files;
mod index;
pub mod outline;
pub mod pack;
mod parts;
pub mod plan;
pub mod report;
