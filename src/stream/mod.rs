//! The stream: read the input in recycled blocks ([`input`]), hand each
//! block to the spill thread ([`spill`]) and to the scanner ([`scan`], with
//! [`line`](mod@line), [`tail`] and [`signal`]) in one pass ([`ingest`]); notice
//! interruptions ([`interrupt`]) and report progress ([`progress`]). The
//! documented defaults of every budget are named once in [`defaults`].
//! Nothing here knows the store's layout or how the envelope looks.

pub mod block;
pub mod defaults;
pub mod gap;
pub mod ingest;
pub mod input;
pub mod interrupt;
pub mod layout;
pub mod line;
pub mod progress;
pub mod scan;
pub mod signal;
pub mod snapshot;
pub mod spill;
pub mod tail;
pub mod writer;
