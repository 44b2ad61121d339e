//! Between runs: every run appends a record of figures (never content) to
//! a per-command series in the store ([`series`]); the next run is
//! compared with the previous one, and the series' size is measured
//! against a boundary, a harness's cut-off ([`trend`], with robust
//! [`stats`]). [`project`] finds the project and its revision.

pub mod dir;
pub mod project;
pub mod report;
pub mod series;
pub mod stats;
pub mod trend;
pub mod usage;

use std::io;

use crate::store::Store;
use dir::HistoryDir;
use series::{Record, Series, SeriesKey, Unit};
use trend::{Change, Trend};

/// What the history says about a run that just ended.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// Against the previous run of the same series (None: the first run).
    pub change: Option<Change>,
    /// The size series against the boundary, this run included.
    pub trend: Option<Trend>,
}

/// Reads the series, compares the new run with its last record, appends
/// the record and analyses the series against `boundary` characters.
pub fn observe(store: &Store, key: SeriesKey, record: &Record, boundary: u64, unit: Unit) -> io::Result<Observation> {
    let dir = open_dir(store)?;
    let series = Series::new(key);
    let observation = look(&dir, &series, record, boundary, unit)?;
    series.append(&dir, record)?;
    Ok(observation)
}

/// The store's history folder, made if missing.
pub fn open_dir(store: &Store) -> io::Result<HistoryDir> {
    HistoryDir::open(store, true)?
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the history folder could not be made"))
}

/// What [`observe`] says, without appending the record yet (the session
/// appends it once it knows what it printed).
pub fn look(dir: &HistoryDir, series: &Series, record: &Record, boundary: u64, unit: Unit) -> io::Result<Observation> {
    let mut records = series.read(dir)?.records;
    let change = trend::compare(&records, record);
    records.push(record.clone());
    Ok(Observation { change, trend: trend::analyse(&records, boundary, unit) })
}

impl Observation {
    /// The trend, once it rests on three successful runs: before that its
    /// level is one or two sizes the header already states, and the room
    /// is better spent on the output.
    pub fn shown_trend(&self) -> Option<&Trend> {
        self.trend.as_ref().filter(|t| t.ok_runs >= 3)
    }

    /// Whether the header gets a `history` object at all.
    pub fn says_anything(&self) -> bool {
        self.change.is_some() || self.shown_trend().is_some()
    }

    /// The header's `history` object.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        if let Some(c) = &self.change {
            m.insert("previous".into(), serde_json::to_value(c).unwrap_or_default());
        }
        if let Some(t) = self.shown_trend() {
            m.insert("trend".into(), serde_json::to_value(t).unwrap_or_default());
        }
        if let Some(p) = self.phrase() {
            m.insert("summary".into(), p.into());
        }
        serde_json::Value::Object(m)
    }

    /// The header's `history` at its widest (every field, the largest
    /// figures): what a budget must allow for before the run is observed.
    pub fn widest_json() -> serde_json::Value {
        let wide = Observation {
            change: Some(Change {
                same_as: Some("x".repeat(64 + 1 + 64)),
                since_previous_seconds: u64::MAX,
                new_shapes: vec![0; series::MAX_SHAPES],
                gone_shapes: vec![0; series::MAX_SHAPES],
            }),
            trend: Some(Trend {
                runs: usize::MAX,
                ok_runs: usize::MAX,
                first_t: u64::MAX,
                last_t: u64::MAX,
                level: u64::MAX,
                spread: u64::MAX,
                p95: u64::MAX,
                slope_per_run: Some(-1.0e15),
                step: Some(trend::StepInfo {
                    delta: i64::MIN,
                    runs_ago: usize::MAX,
                    rev_before: Some("f".repeat(64)),
                    rev_after: Some("f".repeat(64)),
                    t: u64::MAX,
                }),
                boundary: u64::MAX,
                unit: Unit::Chars,
                runs_left: Some(1.0e15),
                days_left: Some(1.0e15),
                recent: Vec::new(),
            }),
        };
        let mut v = wide.to_json();
        v["summary"] = "x".repeat(200).into();
        v
    }

    /// A few words for the summary line: `same as 3 min ago`,
    /// `2 new signal shapes, 1 gone`, `crosses 30000 chars in about 4 runs`.
    pub fn phrase(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(c) = &self.change {
            if c.same_as.is_some() {
                parts.push(format!("same as {}", trend::ago(c.since_previous_seconds)));
            } else if !c.new_shapes.is_empty() || !c.gone_shapes.is_empty() {
                parts.push(format!(
                    "{} new signal shapes, {} gone since {}",
                    c.new_shapes.len(),
                    c.gone_shapes.len(),
                    trend::ago(c.since_previous_seconds)
                ));
            }
        }
        if let Some(t) = &self.trend {
            match (t.runs_left, t.step.as_ref()) {
                (Some(r), _) if r <= 0.0 => parts.push(format!("over the {}-{} boundary", t.boundary, t.unit.name())),
                (Some(r), _) => parts.push(format!(
                    "grows {}/run, crosses {} {} in about {} runs",
                    t.slope_per_run.unwrap_or(0.0),
                    t.boundary,
                    t.unit.name(),
                    r.round()
                )),
                (None, Some(s)) if s.runs_ago <= 3 => parts.push(format!("size stepped {:+} chars", s.delta)),
                _ => {}
            }
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}
