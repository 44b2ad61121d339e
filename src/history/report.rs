//! `outbox trend`: every series as a table row (or JSON), and the audit of
//! series predicted to cross the boundary within some runs.

use serde::Serialize;

use crate::history::series::{self, SeriesKey, Unit};
use crate::history::trend::{self, Trend};
use crate::store::{path_text, Store};
use crate::text::sanitize::display_str;

/// One series and what its figures say.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub series: String,
    #[serde(flatten)]
    pub key: SeriesKey,
    #[serde(flatten)]
    pub trend: Trend,
    /// Lines of its file that were not records (skipped).
    #[serde(skip_serializing_if = "is_zero")]
    pub bad_lines: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The rows, and what could not be read (one message each).
#[derive(Debug, Default)]
pub struct Report {
    pub rows: Vec<Row>,
    pub problems: Vec<String>,
}

/// The series whose label, command or name contains `filter` (all when
/// None), analysed against `boundary`; with `within`, only those predicted
/// to cross in at most that many runs (or already over). The series are
/// read one at a time: memory holds one series and the rows. A series with
/// unreadable lines, or none readable, is said in the problems, never
/// dropped silently.
pub fn rows(
    store: &Store,
    filter: Option<&str>,
    boundary: u64,
    unit: Unit,
    within: Option<f64>,
) -> std::io::Result<Report> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let mut read = series::for_each(store, |found| {
        let (key, name, read) = (found.key, found.name, found.records);
        let hit = filter.is_none_or(|f| {
            name.contains(f) || key.label.contains(f) || key.command.as_deref().is_some_and(|c| c.contains(f))
        });
        if !hit {
            return;
        }
        if read.bad_lines > 0 {
            problems.push(format!(
                "series {}: skipped {} line{} that {} not a record",
                path_text(name.as_ref()),
                read.bad_lines,
                if read.bad_lines == 1 { "" } else { "s" },
                if read.bad_lines == 1 { "is" } else { "are" },
            ));
        }
        let Some(t) = trend::analyse(&read.records, boundary, unit) else {
            if read.records.is_empty() && read.bad_lines > 0 {
                problems.push(format!("series {}: no readable record", path_text(name.as_ref())));
            }
            return;
        };
        if within.is_some_and(|w| !(t.runs_left.is_some_and(|r| r <= w) || t.level >= boundary)) {
            return;
        }
        out.push(Row { series: name, key, trend: t, bad_lines: read.bad_lines });
    })?;
    read.append(&mut problems);
    Ok(Report { rows: out, problems: read })
}

/// The table, one line per series.
pub fn table(rows: &[Row]) -> String {
    let head = ["SERIES", "RUNS", "FIRST", "LAST", "MEDIAN", "P95", "SLOPE/RUN", "RUNS LEFT", "STEP", "SIZES"];
    let mut lines: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        let t = &r.trend;
        let what = match &r.key.command {
            Some(c) => format!("{} ({})", r.key.label, c),
            None => r.key.label.clone(),
        };
        lines.push(vec![
            display_str(&shorten(&what, 40)).text,
            format!("{}/{}", t.ok_runs, t.runs),
            date(t.first_t),
            date(t.last_t),
            t.level.to_string(),
            t.p95.to_string(),
            t.slope_per_run.map_or("-".into(), |s| format!("{s:+}")),
            t.runs_left.map_or("-".into(), |r| format!("{r}")),
            t.step.as_ref().map_or("-".into(), |s| format!("{:+} {} ago", s.delta, s.runs_ago)),
            trend::sparkline(&t.recent),
        ]);
    }
    let widths: Vec<usize> =
        (0..head.len()).map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for l in &lines {
        let cells: Vec<String> = l.iter().zip(&widths).map(|(s, w)| format!("{s:<w$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let head: String = s.chars().take(max - 1).collect();
    head + "…"
}

/// `YYYY-MM-DD` (UTC) of a Unix time.
pub fn date(t: u64) -> String {
    // Days to civil date (proleptic Gregorian), after Howard Hinnant's
    // well-known algorithm.
    let z = (t / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(1_700_000_000), "2023-11-14");
        assert_eq!(date(951_782_400), "2000-02-29");
    }
}
