//! `outbox stats`: what each command's runs produced against what the
//! reader was given, from the run history (figures only, never content).
//!
//! The figures are characters, as every budget is: characters the command
//! produced, characters printed for the reader (the envelope, or the output
//! passed through whole), and the difference, characters kept out of the
//! reader's window. They are not tokens or money: what a window costs
//! depends on the reader, and a re-fetch of a detail (`outbox show`) is
//! not counted here.

use std::path::Path;

use serde::Serialize;

use crate::history::series::{self, Record, SeriesKey};
use crate::store::Store;

/// One series' figures.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Usage {
    pub series: String,
    #[serde(flatten)]
    pub key: SeriesKey,
    /// Runs recorded (the series keeps the last few hundred).
    pub runs: u64,
    /// Runs whose output was byte for byte the previous run's.
    pub identical_reruns: u64,
    /// Runs printed as an envelope (text, JSON or NDJSON fold).
    pub envelopes: u64,
    /// Runs whose output was printed whole (small enough).
    pub passthroughs: u64,
    /// Runs recorded before outbox kept these figures (not in the sums).
    pub unrecorded: u64,
    /// Characters the command produced, over the runs with figures.
    pub chars_produced: u64,
    /// Characters printed for the reader, over the same runs.
    pub chars_printed: u64,
    /// `chars_produced - chars_printed`: kept out of the reader's window.
    pub chars_kept_out: u64,
}

impl Usage {
    fn of(series: String, key: SeriesKey, records: &[Record]) -> Usage {
        let mut u = Usage {
            series,
            key,
            runs: 0,
            identical_reruns: 0,
            envelopes: 0,
            passthroughs: 0,
            unrecorded: 0,
            chars_produced: 0,
            chars_printed: 0,
            chars_kept_out: 0,
        };
        let mut previous: Option<&str> = None;
        for r in records {
            u.runs += 1;
            if previous.is_some_and(|p| !p.is_empty() && p == r.digest) {
                u.identical_reruns += 1;
            }
            previous = Some(&r.digest);
            match (r.printed, r.strategy.as_deref()) {
                (Some(printed), strategy) => {
                    match strategy {
                        Some("passthrough" | "tee") => u.passthroughs += 1,
                        _ => u.envelopes += 1,
                    }
                    u.chars_produced += r.chars;
                    u.chars_printed += printed;
                }
                (None, _) => u.unrecorded += 1,
            }
        }
        u.chars_kept_out = u.chars_produced.saturating_sub(u.chars_printed);
        u
    }
}

/// Every series whose label, command or name contains `filter` (all when
/// None), most characters kept out first; with what could not be read, as
/// messages. No store yet: no series.
pub fn usage(store: &Path, filter: Option<&str>) -> std::io::Result<(Vec<Usage>, Vec<String>)> {
    let mut out = Vec::new();
    let Some(store) = Store::open_existing(store)? else { return Ok((out, Vec::new())) };
    let problems = series::for_each(&store, |found| {
        let (key, records) = (found.key, found.records.records);
        let name = key.name();
        let hit = filter.is_none_or(|f| {
            name.contains(f) || key.label.contains(f) || key.command.as_deref().is_some_and(|c| c.contains(f))
        });
        if hit && !records.is_empty() {
            out.push(Usage::of(name, key, &records));
        }
    })?;
    out.sort_by(|a, b| b.chars_kept_out.cmp(&a.chars_kept_out).then(a.series.cmp(&b.series)));
    Ok((out, problems))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(chars: u64, digest: &str, printed: Option<u64>, strategy: &str) -> Record {
        Record {
            chars,
            digest: digest.into(),
            printed,
            strategy: Some(strategy.into()).filter(|s: &String| !s.is_empty()),
            ..Record::default()
        }
    }

    #[test]
    fn sums_and_reruns() {
        let key = SeriesKey { label: "cargo".into(), command: Some("cargo test".into()), project: None };
        let records = [
            rec(100, "", None, ""),
            rec(90_000, "aa", Some(13_000), "text-envelope"),
            rec(90_000, "aa", Some(13_100), "text-envelope"),
            rec(500, "bb", Some(500), "passthrough"),
        ];
        let u = Usage::of("s".into(), key, &records);
        assert_eq!((u.runs, u.identical_reruns, u.envelopes, u.passthroughs, u.unrecorded), (4, 1, 2, 1, 1));
        assert_eq!((u.chars_produced, u.chars_printed, u.chars_kept_out), (180_500, 26_600, 153_900));
    }
}
