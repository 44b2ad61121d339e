//! What `outbox pack` decides about one file, held in a few bytes a section
//! so that packing a file takes little more memory than the file itself.
//!
//! Per section: the section index's entry (twelve bytes, `index.rs`) and one byte here
//! (its class and whether it is kept whole); a fresh section also has its
//! place in the claiming order (eight bytes). Titles are read from the
//! input only when they are matched against `--keep` or printed, and the
//! claiming order is walked class by class rather than stored. Only the
//! sections kept in parts (few, see `parts.rs`) are held in
//! full. [`pack`](crate::notes::pack::pack) turns a plan into the full
//! [`PackReport`]; `outbox pack` prints from the plan directly.

use std::collections::BTreeMap;

use crate::notes::index::{MarkerKind, SectionIndex};
use crate::notes::outline::Marker;
use crate::notes::pack::{PackOptions, Unit};
use crate::notes::parts::{fits, pack_parts, Whole};
use crate::notes::report::{display_name, Class, PackReport, SectionOutcome, Tally};

/// A section's decision byte: its class in the low two bits, and
/// [`KEPT`] once it is kept whole.
type Decision = u8;

const KEPT: Decision = 4;

fn class_bits(class: Class) -> Decision {
    match class {
        Class::Pinned => 0,
        Class::Fresh => 1,
        Class::Normal => 2,
    }
}

fn class_of(d: Decision) -> Class {
    match d & 3 {
        0 => Class::Pinned,
        1 => Class::Fresh,
        _ => Class::Normal,
    }
}

/// The claiming order, walked rather than stored: pinned (file order),
/// fresh (newest first: dated before undated, then later in the file
/// first), the rest (file order).
struct ClaimOrder {
    fresh: Vec<usize>,
    /// 0: pinned, 1: fresh, 2: the rest; `at` is the position within.
    phase: u8,
    at: usize,
}

impl ClaimOrder {
    fn new(index: &SectionIndex, decisions: &[Decision]) -> ClaimOrder {
        let mut fresh: Vec<usize> = (0..decisions.len()).filter(|&i| class_of(decisions[i]) == Class::Fresh).collect();
        // Keys are unique (the index breaks ties), so unstable is exact.
        fresh.sort_unstable_by_key(|&i| std::cmp::Reverse((index.date_key(i), i)));
        ClaimOrder { fresh, phase: 0, at: 0 }
    }

    fn restart(&mut self) {
        (self.phase, self.at) = (0, 0);
    }

    fn next(&mut self, decisions: &[Decision]) -> Option<usize> {
        loop {
            let class = match self.phase {
                0 => Class::Pinned,
                1 => {
                    if let Some(&i) = self.fresh.get(self.at) {
                        self.at += 1;
                        return Some(i);
                    }
                    (self.phase, self.at) = (2, 0);
                    continue;
                }
                2 => Class::Normal,
                _ => return None,
            };
            while self.at < decisions.len() {
                let i = self.at;
                self.at += 1;
                if class_of(decisions[i]) == class {
                    return Some(i);
                }
            }
            (self.phase, self.at) = (self.phase + 1, 0);
        }
    }
}

/// A file without a `## ` heading: one unit, kept whole or dropped whole.
#[derive(Debug, Clone, Copy)]
struct WholeFile {
    size: usize,
    kept: bool,
}

/// What to keep of one file, and what the report says about it.
#[derive(Debug)]
pub struct Plan {
    index: SectionIndex,
    unit: Unit,
    budget: usize,
    decisions: Vec<Decision>,
    /// The sections kept in parts, by index.
    split: BTreeMap<usize, SectionOutcome>,
    used: usize,
    /// Size of the preamble, in `unit`.
    preamble: usize,
    keep_matched: Vec<bool>,
    whole: Option<WholeFile>,
}

impl Plan {
    /// Decides what of `input` fits `opts.budget` (the rules are in the
    /// `pack` module doc). Pure: no I/O.
    pub fn new(input: &[u8], opts: &PackOptions) -> Plan {
        let unit = opts.unit;
        let keep: Vec<String> = opts.keep.iter().map(|k| k.to_lowercase()).collect();
        let mut plan = Plan {
            index: SectionIndex::build(input),
            unit,
            budget: opts.budget,
            decisions: Vec::new(),
            split: BTreeMap::new(),
            used: 0,
            preamble: 0,
            keep_matched: vec![false; keep.len()],
            whole: None,
        };
        if plan.index.is_empty() {
            // Nothing to choose between: the whole file fits or it does not.
            let size = unit.measure(input);
            let kept = size <= opts.budget;
            plan.used = if kept { size } else { 0 };
            plan.whole = Some(WholeFile { size, kept });
            return plan;
        }
        plan.decisions = (0..plan.index.len()).map(|i| class_bits(plan.classify(input, i, &keep))).collect();

        let mut order = ClaimOrder::new(&plan.index, &plan.decisions);
        plan.preamble = unit.measure(&input[plan.index.preamble()]);
        let mut used = plan.preamble;
        while let Some(i) = order.next(&plan.decisions) {
            let size = plan.size(input, i);
            if class_of(plan.decisions[i]) == Class::Pinned || fits(used, size, opts.budget) {
                plan.decisions[i] |= KEPT;
                used = used.saturating_add(size);
            }
        }
        // Then what did not fit whole, by its parts, in the same order.
        order.restart();
        while let Some(i) = order.next(&plan.decisions) {
            if plan.kept(i) {
                continue;
            }
            let span = plan.index.span(i);
            let (line, marked) = (plan.index.line(i), plan.index.marker_kind(i) != MarkerKind::None);
            let whole = Whole { span: span.clone(), line, level: 2, marked };
            let mut parts = pack_parts(input, &whole, unit, opts.budget, &mut used);
            if parts.is_empty() {
                continue;
            }
            let title = plan.index.title(input, i).into_owned();
            parts[0].title = title.clone();
            let size = plan.size(input, i);
            let class = class_of(plan.decisions[i]);
            plan.split.insert(i, SectionOutcome { title, line, span, size, class, kept: false, parts });
        }
        plan.used = used;
        plan
    }

    /// Section `i`'s class: `--keep` first, then its marker. Records which
    /// `--keep` titles matched.
    fn classify(&mut self, input: &[u8], i: usize, keep: &[String]) -> Class {
        let mut by_keep = false;
        if !keep.is_empty() {
            let lower = self.index.title(input, i).to_lowercase();
            for (k, hit) in keep.iter().zip(self.keep_matched.iter_mut()) {
                if lower.contains(k.as_str()) {
                    *hit = true;
                    by_keep = true;
                }
            }
        }
        match self.index.marker_kind(i) {
            _ if by_keep => Class::Pinned,
            MarkerKind::Pinned => Class::Pinned,
            MarkerKind::Fresh => Class::Fresh,
            MarkerKind::None | MarkerKind::Unknown => Class::Normal,
        }
    }

    fn kept(&self, i: usize) -> bool {
        self.decisions[i] & KEPT != 0
    }

    /// Section `i`'s size in the budget's unit (measured again when asked:
    /// storing it would cost more bytes a section than counting does time).
    fn size(&self, input: &[u8], i: usize) -> usize {
        self.unit.measure(&input[self.index.span(i)])
    }

    /// Whether section `i` is warned about: a marker with a value we do not
    /// know (and no `--keep` pinned it anyway).
    fn warns(&self, i: usize) -> bool {
        self.index.marker_kind(i) == MarkerKind::Unknown && class_of(self.decisions[i]) != Class::Pinned
    }

    /// The warning for section `i` (see [`Plan::warns`]).
    fn warning(&self, input: &[u8], i: usize) -> String {
        let value = match self.index.marker(input, i) {
            Marker::Unknown(v) => v,
            _ => String::new(),
        };
        format!(
            "line {}: unknown `notes-priority: {value}` before section {:?}, treated as normal; use pinned or fresh",
            self.index.line(i).saturating_sub(1),
            crate::text::sanitize::display_str(&self.index.title(input, i)).text
        )
    }

    /// Size of the output in the budget's unit.
    pub fn used(&self) -> usize {
        self.used
    }

    /// For each `--keep`, whether it matched a section of this file.
    pub fn keep_matched(&self) -> &[bool] {
        &self.keep_matched
    }

    /// Hands `write` the output, a slice of `input` at a time, in file
    /// order: the preamble, then each piece kept. Stops at the first error.
    pub fn write_output<E>(&self, input: &[u8], mut write: impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        if let Some(whole) = self.whole {
            return if whole.kept { write(input) } else { Ok(()) };
        }
        write(&input[self.index.preamble()])?;
        for i in 0..self.index.len() {
            if self.kept(i) {
                write(&input[self.index.span(i)])?;
            } else if let Some(s) = self.split.get(&i) {
                for (_, piece) in s.pieces().into_iter().filter(|(_, p)| p.kept) {
                    write(&input[piece.span.clone()])?;
                }
            }
        }
        Ok(())
    }

    /// The stderr lines for `file` (already made safe to print), as
    /// [`PackReport::stderr_lines`] gives them.
    pub fn stderr_lines(&self, input: &[u8], file: &str) -> Vec<String> {
        let mut tally = Tally::new(self.unit, self.used, self.budget, self.preamble, self.whole.map(|w| w.kept));
        if self.whole.is_some_and(|w| !w.kept) {
            tally.dropped(|| display_name("(whole file)", 1));
        }
        for i in 0..self.index.len() {
            if let Some(s) = self.split.get(&i) {
                tally.section(s);
            } else if !self.kept(i) {
                tally.dropped(|| display_name(&self.index.title(input, i), self.index.line(i)));
            } else if class_of(self.decisions[i]) == Class::Pinned {
                tally.pinned(self.size(input, i));
            }
        }
        // Made only for the warnings that are named (a file may hold a
        // million unknown markers).
        for i in (0..self.index.len()).filter(|&i| self.warns(i)) {
            tally.warning(|| self.warning(input, i));
        }
        tally.lines(file)
    }

    /// The full report: every section with its title, as the library API
    /// and the tests see it.
    pub fn into_report(mut self, input: &[u8]) -> PackReport {
        let sections = match self.whole {
            Some(w) => vec![SectionOutcome {
                title: "(whole file)".into(),
                line: 1,
                span: 0..input.len(),
                size: w.size,
                class: Class::Normal,
                kept: w.kept,
                parts: Vec::new(),
            }],
            None => (0..self.index.len())
                .map(|i| match self.split.remove(&i) {
                    Some(s) => s,
                    None => SectionOutcome {
                        title: self.index.title(input, i).into_owned(),
                        line: self.index.line(i),
                        span: self.index.span(i),
                        size: self.size(input, i),
                        class: class_of(self.decisions[i]),
                        kept: self.kept(i),
                        parts: Vec::new(),
                    },
                })
                .collect(),
        };
        let warnings = (0..self.index.len()).filter(|&i| self.warns(i)).map(|i| self.warning(input, i)).collect();
        PackReport {
            unit: self.unit,
            budget: self.budget,
            used: self.used,
            preamble: self.preamble,
            sections,
            no_headings: self.whole.is_some(),
            keep_matched: self.keep_matched,
            warnings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_costs_at_most_24_bytes_while_packing() {
        // Issue (peak memory of `outbox pack`): per section, the index's
        // start, line and meta, the decision byte and, for a fresh section,
        // its place in the claiming order. Nothing else grows with the
        // number of sections, apart from sections kept in parts.
        let per_section = std::mem::size_of::<u32>() * 2
            + std::mem::size_of::<crate::notes::index::Meta>()
            + std::mem::size_of::<Decision>()
            + std::mem::size_of::<usize>();
        assert!(per_section <= 24, "{per_section} bytes a section");
    }

    #[test]
    fn claim_order_walks_pinned_fresh_newest_then_the_rest() {
        let doc = b"## n0\n<!-- notes-priority: fresh -->\n## f 2024-01-01\n<!-- notes-priority: pinned -->\n## p\n\
                    <!-- notes-priority: fresh -->\n## f undated\n<!-- notes-priority: fresh -->\n## f 2025-01-01\n## n5\n";
        let opts = PackOptions { budget: 0, unit: Unit::Bytes, keep: vec![] };
        let plan = Plan::new(doc, &opts);
        let mut order = ClaimOrder::new(&plan.index, &plan.decisions);
        let mut walked = Vec::new();
        while let Some(i) = order.next(&plan.decisions) {
            walked.push(i);
        }
        assert_eq!(walked, [2, 4, 1, 3, 0, 5]);
        order.restart();
        assert_eq!(order.next(&plan.decisions), Some(2));
    }

    #[test]
    fn plan_lines_and_output_match_the_full_report() {
        let doc = b"pre\n<!-- notes-priority: odd -->\n## A\naaaa\n## B\n### B1\nbb\n### B2\nbbbbbbbbbbbbbbbbbbbb\n\
                    <!-- notes-priority: pinned -->\n## \nkeep\n";
        for budget in [0, 10, 30, 60, 1000] {
            for unit in [Unit::Bytes, Unit::Chars] {
                let opts = PackOptions { budget, unit, keep: vec!["a".into(), "zz".into()] };
                let plan = Plan::new(doc, &opts);
                let mut out = Vec::new();
                plan.write_output(doc, |b| {
                    out.extend_from_slice(b);
                    Ok::<(), ()>(())
                })
                .unwrap();
                let lines = plan.stderr_lines(doc, "f");
                let report = plan.into_report(doc);
                assert_eq!(lines, report.stderr_lines("f"), "budget {budget}");
                let mut expect = b"pre\n".to_vec();
                for span in report.kept_spans() {
                    expect.extend_from_slice(&doc[span]);
                }
                assert_eq!(out, expect, "budget {budget}");
            }
        }
    }
}
