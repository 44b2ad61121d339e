//! outbox: a streaming Unix filter that turns huge command output into a
//! bounded, honest envelope.
//!
//! ```text
//!  stdin / child pipe / file (read, or mmap'd with --mmap)
//!        │  owned, recycled blocks (input.rs)
//!        ├──────────────► spill thread: write + BLAKE3, bounded channel (spill.rs)
//!        │                   └─► temp file in the store, renamed to {label}-{hash12} (store.rs)
//!        ▼
//!  scanner (scan.rs): bytes, chars (utf8.rs), lines, head arena,
//!        tail ring (tail.rs), bounded signal keeper (signal.rs)
//!        ▼  once input ends and the spill is safe
//!  envelope (envelope.rs): reserved budgets, sanitised text (sanitize.rs)
//! ```
//!
//! Invariants: memory does not grow with the input (every buffer is bounded
//! by the budget or a fixed block size); the input is read once; the printed
//! output never exceeds the budget in characters; every omission is stated.

pub mod app;
pub mod check;
pub mod cli;
pub mod envelope;
pub mod filter;
pub mod hook;
pub mod input;
pub mod interrupt;
pub mod json;
pub mod jsonshape;
pub mod line;
pub mod ndjson;
pub mod pipeline;
pub mod progress;
#[doc(hidden)]
pub mod reference;
pub mod sanitize;
pub mod scan;
pub mod sections;
pub mod shell;
pub mod signal;
pub mod spill;
pub mod store;
pub mod tail;
pub mod utf8;
pub mod wrap;
