//! outbox: a streaming Unix filter that turns huge command output into a
//! bounded, honest envelope.
//!
//! # Where the pipeline is
//!
//! ```text
//!  stdin / a child's pipe / a file      stream::input   (owned, recycled blocks;
//!        │                              a file on stdin is copied into the store
//!        │                              first, stream::snapshot, and read back)
//!        ├──► spill thread: write (O_DIRECT past 2 MiB), then a hash
//!        │    thread: BLAKE3               stream::spill  ──► store (temp, renamed)
//!        ▼                                  stream::ingest (hands each block to both)
//!  scanner: chars, lines, head, tail ring,  stream::scan, stream::tail, stream::signal
//!           signal keeper with severities   family (tool families: one combined
//!           and blocks                      regex, a RegexSet on candidate lines)
//!        ▼  input ended, spill safe
//!  session::finish: the run's facts (render::facts::RunFacts; family
//!           verdict and summary, session::family; run history, history) → settle the
//!           strategy (the JSON fold may fall back to text) → commit once →
//!           render → print → exit status
//!        ▼
//!  text envelope (render::envelope) · JSON/NDJSON folds (json) ·
//!  passthrough's safe copy (render::envelope::safe_copy)
//! ```
//!
//! `CMD | outbox` and wrap mode (`outbox -- CMD`) both build a
//! [`session::Session`], feed it a [`stream::input::Reader`], and finish it.
//! The binary (`src/bin/outbox/`) parses the command line with clap and turns
//! it into [`session::RunOptions`]; nothing in this library knows clap.
//!
//! # Layers
//!
//! Each folder imports only from the folders listed before it (a test,
//! `tests/it/layers.rs`, fails on an import that goes up):
//!
//! 0. [`sys`]: the platform layer: the fast paths each platform has
//!    (`O_DIRECT`, write-behind, FICLONE on Linux; `F_NOCACHE`,
//!    `clonefile` on macOS; plain reads and writes elsewhere, or with the
//!    `portable` feature) and the few calls no crate covers.
//! 1. [`text`]: UTF-8 counting, sanitising for display (the one list of
//!    characters unsafe to print), shortening (the one cut marker), sizes,
//!    messages to stderr (`say!`).
//! 2. [`family`]: tool families as data (`families/*.toml`): severities,
//!    blocks, locations, verdicts; one combined regex and a `RegexSet`.
//! 3. [`stream`]: reading, ingest, spill, scanner, tail ring, signal lines,
//!    interruption, and the documented defaults ([`stream::defaults`]).
//! 4. [`render`]: the one record of a run's facts ([`render::facts`]) and
//!    the text envelope.
//! 5. [`json`]: the JSON and NDJSON folds (their headers read the same
//!    record).
//! 6. [`store`]: the store directory, `show`, `ls`, `gc`, `rm`.
//! 7. [`history`]: the run history's series and trends.
//! 8. [`notes`]: Markdown section packing and the preflight check (uses only
//!    `text`).
//! 8. [`session`]: one run from options to exit status.
//!
//! # Invariants
//!
//! Memory does not grow with the input (every buffer is bounded by the
//! budget or a fixed block size); the input is read once; the printed
//! output never exceeds the budget in characters (the budget the header
//! states: raised above `--budget` only when the store path is too long for
//! it); every omission is stated; what is printed is safe for a terminal
//! (passthrough too; only `--envelope never` copies raw); `full_output` is
//! always the real path, whole; the stored copy is byte-for-byte the input.

pub mod family;
pub mod history;
pub mod json;
pub mod notes;
#[doc(hidden)]
pub mod reference;
pub mod render;
pub mod session;
pub mod store;
pub mod stream;
pub mod sys;
pub mod text;
