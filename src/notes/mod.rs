//! Markdown notes: packing whole sections into a budget ([`pack`]) and the
//! preflight check of required headings ([`check`]).

pub mod check;
pub mod pack;
