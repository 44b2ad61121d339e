//! The stream: read the input in recycled blocks ([`input`]), hand each
//! block to the spill thread ([`spill`]) and to the scanner ([`scan`], with
//! [`line`], [`tail`] and [`signal`]) in one pass ([`ingest`]); notice
//! interruptions ([`interrupt`]) and report progress ([`progress`]).
//! Nothing here knows the store's layout or how the envelope looks.

pub mod block;
pub mod ingest;
pub mod input;
pub mod interrupt;
pub mod line;
pub mod progress;
pub mod scan;
pub mod signal;
pub mod spill;
pub mod tail;
