//! The run history's part of a session: after the spill is committed, the
//! run's figures go to its command's series and come back as a comparison
//! with the previous run and the series' distance to the boundary.

use std::path::Path;

use crate::history::dir::HistoryDir;
use crate::history::series::{normalise_command, Record, Series, SeriesKey, Unit, MAX_SHAPES};
pub use crate::history::Observation;
use crate::history::{self, project};
use crate::render::facts::CommandInfo;
use crate::session::options::RunOptions;
use crate::store::Store;

/// The figures of one finished run, as the session knows them.
pub struct RunFigures<'a> {
    pub label: &'a str,
    pub command: Option<&'a CommandInfo>,
    pub chars: u64,
    pub bytes: u64,
    pub lines: u64,
    pub signals: u64,
    pub errors: u64,
    pub warnings: u64,
    pub shapes: &'a [u64],
    pub id: &'a str,
    pub digest: &'a str,
    pub complete: bool,
}

/// The boundary a run is measured against: `--boundary`, else the
/// harness's, else the budget (where outbox stops passing output through).
pub fn boundary(opts: &RunOptions) -> (u64, Unit) {
    match (opts.boundary, opts.harness.boundary()) {
        (Some(b), _) => (b, Unit::Chars),
        (None, Some(h)) => h,
        (None, None) => (opts.budget as u64, Unit::Chars),
    }
}

/// A run's record, appended once the run has printed.
pub struct Pending {
    dir: HistoryDir,
    series: Series,
    record: Record,
}

impl Pending {
    /// Appends the record with what was printed and the entry's final id.
    pub fn append(mut self, printed: u64, strategy: &str, id: &str) -> std::io::Result<()> {
        self.record.printed = Some(printed);
        self.record.strategy = Some(strategy.to_string());
        if !id.is_empty() {
            self.record.id = id.to_string();
        }
        self.series.append(&self.dir, &self.record)
    }
}

/// Reads what the run's series says about it; the record itself is
/// appended by [`Pending::append`] once the run has printed. Errors are the
/// caller's to report: a history that cannot be read or written must not
/// fail the run whose output is already safe.
pub fn observe(store: &Store, opts: &RunOptions, run: &RunFigures<'_>) -> std::io::Result<(Observation, Pending)> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| Path::new("/").to_path_buf());
    let root = project::root(&cwd);
    // `--label` names the series on its own (within the project); otherwise
    // the command separates `cargo build` from `cargo test`.
    let command = match (&opts.label, run.command) {
        (None, Some(c)) => Some(normalise_command(&c.command.split(' ').map(str::to_string).collect::<Vec<_>>())),
        _ => None,
    };
    let key = SeriesKey { label: run.label.to_string(), command, project: Some(root.to_string_lossy().into_owned()) };
    let status = run.command.and_then(|c| c.exit_status);
    let killed = run.command.and_then(|c| c.killed_by_signal);
    let record = Record {
        t: crate::store::now_secs(),
        chars: run.chars,
        bytes: run.bytes,
        lines: run.lines,
        signals: run.signals,
        errors: run.errors,
        warnings: run.warnings,
        status,
        ms: run.command.and_then(|c| c.duration_ms),
        id: run.id.to_string(),
        digest: run.digest.to_string(),
        rev: project::revision(&root),
        ok: run.complete && killed.is_none() && status.is_none_or(|s| s == 0),
        shapes: run.shapes.iter().take(MAX_SHAPES).copied().collect(),
        printed: None,
        strategy: None,
    };
    let (b, unit) = boundary(opts);
    let dir = history::open_dir(store)?;
    let series = Series::new(key);
    let observation = history::look(&dir, &series, &record, b, unit)?;
    Ok((observation, Pending { dir, series, record }))
}
