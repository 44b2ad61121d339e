//! The documented defaults of a bare `outbox`, named once. `RunOptions`,
//! `ScanConfig` and `Budgets` build their `Default` from these, and the
//! command line shows them, so tests, benches and fuzz targets never retype
//! a figure.

/// Total characters the output may use (`--budget`).
pub const BUDGET: usize = 14_000;
/// Characters reserved first for the tail block (`--tail-budget`): the
/// tail's minimum; room the other parts leave grows it.
pub const TAIL_BUDGET: usize = 3_000;
/// Characters reserved for the head before signal lines (`--head-budget`):
/// a minimum, when the head has lines to fill it.
pub const HEAD_BUDGET: usize = 1_000;
/// Last lines asked for in the tail (`--tail`): at least these, when they
/// fit the tail budget; more when room is left.
pub const TAIL_LINES: usize = 20;
/// Size against which `spill_ratio_chars` is computed (`--spill-limit`).
pub const SPILL_LIMIT: u64 = 100_000;
/// JSON: whole items kept as samples (`--samples`).
pub const SAMPLES: usize = 8;
/// JSON: largest document read into memory for folding.
pub const JSON_MAX_BYTES: u64 = 1 << 30;
/// Smallest budget that holds a header, the markers and a useful tail.
pub const MIN_BUDGET: usize = 1_000;
