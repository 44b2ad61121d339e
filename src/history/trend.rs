//! What a series says: the run compared with the previous one (same
//! output, new and vanished signal kinds) and the size's distance to a
//! boundary (level, spread, slope, steps, runs and days left).

use serde::Serialize;

use crate::history::series::{Record, Unit};
use crate::history::stats::{self, mad, mann_kendall_z, median, percentile, theil_sen, TREND_Z};

/// Successful runs the size statistics look at (the most recent).
pub const WINDOW: usize = 64;
/// Runs the level is the median of.
const LEVEL_RUNS: usize = 10;
/// Fewest successful runs before a slope is reported.
const MIN_TREND_RUNS: usize = 8;

/// The new run against the previous run of the same series.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Change {
    /// The previous run printed exactly the same bytes: its entry id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
    /// Seconds since the previous run.
    pub since_previous_seconds: u64,
    /// Signal kinds this run has and the previous one had not, and the
    /// reverse (the header says how many; the keys mean nothing to a
    /// reader).
    #[serde(rename = "new_kinds", serialize_with = "count")]
    pub new_shapes: Vec<u64>,
    #[serde(rename = "gone_kinds", serialize_with = "count")]
    pub gone_shapes: Vec<u64>,
    /// The gone kinds' names, as the previous run recorded them (the
    /// envelope lists them in one line), and the new ones'.
    #[serde(skip)]
    pub gone_names: Vec<String>,
    #[serde(skip)]
    pub new_names: Vec<String>,
}

fn count<S: serde::Serializer>(v: &[u64], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(v.len() as u64)
}

/// Compares `now` with the last record of `before`; None without history.
pub fn compare(before: &[Record], now: &Record) -> Option<Change> {
    let prev = before.last()?;
    let same_as = (!now.digest.is_empty() && prev.digest == now.digest).then(|| prev.id.clone());
    let new: Vec<usize> = (0..now.shapes.len()).filter(|&i| !prev.shapes.contains(&now.shapes[i])).collect();
    let new_shapes = new.iter().map(|&i| now.shapes[i]).collect();
    let new_names = new.iter().filter_map(|&i| now.names.get(i).cloned()).collect();
    let gone: Vec<usize> = (0..prev.shapes.len()).filter(|&i| !now.shapes.contains(&prev.shapes[i])).collect();
    let gone_shapes = gone.iter().map(|&i| prev.shapes[i]).collect();
    let gone_names = gone.iter().filter_map(|&i| prev.names.get(i).cloned()).collect();
    let since_previous_seconds = now.t.saturating_sub(prev.t);
    Some(Change { same_as, since_previous_seconds, new_shapes, gone_shapes, gone_names, new_names })
}

/// A level step, with the revisions on either side when they were known.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepInfo {
    /// Characters the level moved.
    pub delta: i64,
    /// How many successful runs ago the new level began.
    pub runs_ago: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rev_before: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rev_after: Option<String>,
    pub t: u64,
}

/// The size series of successful runs against a boundary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    /// All runs and successful runs in the series.
    pub runs: usize,
    pub ok_runs: usize,
    pub first_t: u64,
    pub last_t: u64,
    /// Median chars of the recent successful runs (after the last step).
    pub level: u64,
    /// Median absolute deviation of those runs.
    pub spread: u64,
    pub p95: u64,
    /// Chars per run, only when the rise or fall is significant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slope_per_run: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<StepInfo>,
    pub boundary: u64,
    /// What the sizes and the boundary count.
    pub unit: Unit,
    /// Runs until the fitted size passes the boundary (0 when it already
    /// has), only with a significant rise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_left: Option<f64>,
    /// The same in days, at the series' median interval between runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub days_left: Option<f64>,
    /// Sizes of the last successful runs, for a sparkline.
    #[serde(skip)]
    pub recent: Vec<u64>,
}

impl Trend {
    /// Near the boundary: the level at 80% of it or more, or a rise that
    /// crosses it within `warn_runs` runs.
    pub fn is_near(&self, warn_runs: f64) -> bool {
        self.level as f64 >= 0.8 * self.boundary as f64 || self.runs_left.is_some_and(|r| r <= warn_runs)
    }
}

/// Analyses a series (oldest first) against `boundary` (in `unit`); None
/// when it holds no successful run.
pub fn analyse(records: &[Record], boundary: u64, unit: Unit) -> Option<Trend> {
    let ok: Vec<&Record> = records.iter().filter(|r| r.ok).collect();
    let window = &ok[ok.len().saturating_sub(WINDOW)..];
    let sizes: Vec<f64> = window.iter().map(|r| r.size(unit) as f64).collect();
    if sizes.is_empty() {
        return None;
    }
    let step = stats::step(&sizes);
    // After a step, only the runs at the new level describe where the
    // series is now.
    let recent_from = step.map_or(0, |s| s.at);
    let recent = &sizes[recent_from..];
    let level_runs = &recent[recent.len().saturating_sub(LEVEL_RUNS)..];
    let level = median(level_runs)?;
    let spread = mad(level_runs)?;
    let slope =
        (recent.len() >= MIN_TREND_RUNS && mann_kendall_z(recent).abs() > TREND_Z).then(|| theil_sen(recent)).flatten();
    let (runs_left, days_left) = match slope {
        Some(line) if line.slope > 0.0 => {
            let now = line.at((recent.len() - 1) as f64);
            let left = ((boundary as f64 - now) / line.slope).max(0.0);
            let gaps: Vec<f64> = window.windows(2).map(|w| w[1].t.saturating_sub(w[0].t) as f64).collect();
            let days = median(&gaps).map(|g| left * g / 86_400.0);
            (Some(round1(left)), days.map(round1))
        }
        _ => (None, None),
    };
    let step = step.map(|s| StepInfo {
        delta: s.delta.round() as i64,
        runs_ago: window.len() - s.at,
        rev_before: window[s.at - 1].rev.clone(),
        rev_after: window[s.at].rev.clone(),
        t: window[s.at].t,
    });
    Some(Trend {
        runs: records.len(),
        ok_runs: ok.len(),
        first_t: records.first().map_or(0, |r| r.t),
        last_t: records.last().map_or(0, |r| r.t),
        level: level.round() as u64,
        spread: spread.round() as u64,
        p95: percentile(&sizes, 0.95).unwrap_or(level).round() as u64,
        slope_per_run: slope.map(|l| round1(l.slope)),
        step,
        boundary,
        unit,
        runs_left,
        days_left,
        recent: window.iter().rev().take(24).rev().map(|r| r.size(unit)).collect(),
    })
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Eight-level bars for sizes, scaled to their own range.
pub fn sparkline(values: &[u64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let (Some(&lo), Some(&hi)) = (values.iter().min(), values.iter().max()) else { return String::new() };
    values.iter().map(|&v| if hi == lo { BARS[3] } else { BARS[((v - lo) * 7 / (hi - lo)) as usize] }).collect()
}

/// "3 min ago", "2 h ago", "5 days ago".
pub fn ago(seconds: u64) -> String {
    match seconds {
        0..=59 => format!("{seconds} s ago"),
        60..=3_599 => format!("{} min ago", seconds / 60),
        3_600..=172_799 => format!("{} h ago", seconds / 3_600),
        _ => format!("{} days ago", seconds / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(i: u64, chars: u64) -> Record {
        Record { t: 1_700_000_000 + i * 3_600, chars, ok: true, rev: Some(format!("r{i}")), ..Record::default() }
    }

    fn wobble(i: u64) -> i64 {
        // Deterministic ±500 without a trend.
        [(0), 500, -500, 250, -250, 400, -400, 100, -100, 0][(i % 10) as usize]
    }

    #[test]
    fn a_flat_noisy_series_gives_no_slope_and_no_warning() {
        let r: Vec<Record> = (0..30).map(|i| run(i, (20_000 + wobble(i)) as u64)).collect();
        let t = analyse(&r, 30_000, Unit::Chars).unwrap();
        assert_eq!(t.slope_per_run, None);
        assert_eq!(t.runs_left, None);
        assert_eq!(t.step, None);
        assert!(!t.is_near(20.0));
        assert!((t.level as i64 - 20_000).abs() <= 500);
    }

    #[test]
    fn a_growing_series_says_how_many_runs_are_left() {
        let r: Vec<Record> = (0..30).map(|i| run(i, 20_000 + 300 * i)).collect();
        let t = analyse(&r, 30_000, Unit::Chars).unwrap();
        let slope = t.slope_per_run.unwrap();
        assert!((slope - 300.0).abs() <= 15.0, "{slope}");
        let left = t.runs_left.unwrap();
        assert!((left - 4.3).abs() < 0.5, "{left}");
        // Counted from the first run: the 29th index plus what is left.
        assert!(((29.0 + left) - 33.3).abs() < 0.6);
        assert!((t.days_left.unwrap() - left / 24.0).abs() < 0.1);
        assert!(t.is_near(20.0));
    }

    #[test]
    fn a_failing_flood_does_not_move_the_success_series() {
        let mut r: Vec<Record> = (0..30).map(|i| run(i, (20_000 + wobble(i)) as u64)).collect();
        let before = analyse(&r, 30_000, Unit::Chars).unwrap();
        r.push(Record { chars: 200_000, ok: false, status: Some(1), ..run(30, 0) });
        let after = analyse(&r, 30_000, Unit::Chars).unwrap();
        assert_eq!(
            (before.level, before.spread, before.slope_per_run),
            (after.level, after.spread, after.slope_per_run)
        );
        assert_eq!(after.runs, 31);
        assert_eq!(after.ok_runs, 30);
    }

    #[test]
    fn a_step_is_reported_between_the_right_revisions() {
        let r: Vec<Record> =
            (0..30).map(|i| run(i, (20_000 + wobble(i) + if i >= 20 { 6_000 } else { 0 }) as u64)).collect();
        let t = analyse(&r, 30_000, Unit::Chars).unwrap();
        let s = t.step.expect("a step");
        assert!((s.delta - 6_000).abs() < 600, "{}", s.delta);
        assert_eq!(s.rev_before.as_deref(), Some("r19"));
        assert_eq!(s.rev_after.as_deref(), Some("r20"));
        assert_eq!(s.runs_ago, 10);
        assert!((t.level as i64 - 26_000).abs() <= 500);
    }

    #[test]
    fn the_same_output_and_new_shapes_are_found() {
        let a = Record { digest: "d1".into(), id: "x-1".into(), shapes: vec![1, 2], t: 100, ..Record::default() };
        let b = Record { digest: "d1".into(), id: "x-1".into(), shapes: vec![1, 2], t: 280, ..Record::default() };
        let c = compare(std::slice::from_ref(&a), &b).unwrap();
        assert_eq!(c.same_as.as_deref(), Some("x-1"));
        assert_eq!(ago(c.since_previous_seconds), "3 min ago");
        let a = Record { names: vec!["E0308".into(), "E0599".into()], ..a };
        let d = Record { digest: "d2".into(), shapes: vec![1, 3], ..Record::default() };
        let c = compare(&[a], &d).unwrap();
        assert_eq!(c.same_as, None);
        assert_eq!(c.new_shapes, vec![3]);
        assert_eq!(c.gone_shapes, vec![2]);
        assert_eq!(c.gone_names, vec!["E0599".to_string()]);
        assert_eq!(compare(&[], &d), None);
    }

    #[test]
    fn sparklines_scale_to_their_range() {
        assert_eq!(sparkline(&[1, 8]), "▁█");
        assert_eq!(sparkline(&[5, 5]), "▄▄");
        assert_eq!(sparkline(&[]), "");
    }
}
