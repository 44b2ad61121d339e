//! Packing a section too large to keep whole by its parts (issue 17: a book
//! chapter whose body sits under one `## ` heading): its heading part, then
//! its subsections, each whole, then, for one that still does not fit, its
//! own parts, down the heading levels (the rules are in the `pack` module
//! doc).
//!
//! Sections in parts are few (each holds part of what was left of the
//! budget), so they use the full [`Outline`](crate::notes::outline::Outline)
//! and [`SectionOutcome`], titles and all.

use std::ops::Range;

use crate::notes::outline::{subsections_of, Marker, Section};
use crate::notes::pack::Unit;
use crate::notes::report::{Class, SectionOutcome};

/// Whether `size` more fits in `budget` after `used`.
pub(crate) fn fits(used: usize, size: usize, budget: usize) -> bool {
    used.checked_add(size).is_some_and(|u| u <= budget)
}

/// Claiming order inside a section: pinned (file order), fresh (newest
/// first: dated before undated, then later in the file first), the rest
/// (file order).
fn claim_order(classes: &[Class], sections: &[Section]) -> Vec<usize> {
    let of = |c: Class| (0..classes.len()).filter(move |&i| classes[i] == c);
    let mut fresh: Vec<usize> = of(Class::Fresh).collect();
    fresh.sort_by(|&a, &b| sections[b].date.cmp(&sections[a].date).then(b.cmp(&a)));
    of(Class::Pinned).chain(fresh).chain(of(Class::Normal)).collect()
}

/// Where a section that did not fit whole is: its bytes, its heading's
/// line and level, and whether a marker line comes first.
#[derive(Debug, Clone)]
pub(crate) struct Whole {
    pub span: Range<usize>,
    pub line: usize,
    pub level: u8,
    pub marked: bool,
}

/// The section at `whole`, which did not fit, packed by its parts into
/// what is left of `budget`. Empty when it has no subsection, its heading
/// part does not fit, or none of its subsections fits with it: the section
/// stays dropped whole. The first part, its heading, is untitled here: the
/// caller knows the section's title.
pub(crate) fn pack_parts(
    input: &[u8],
    whole: &Whole,
    unit: Unit,
    budget: usize,
    used: &mut usize,
) -> Vec<SectionOutcome> {
    let Some(sub) = subsections_of(input, whole.span.clone(), whole.line, whole.level, whole.marked) else {
        return Vec::new();
    };
    let head = unit.measure(&input[sub.preamble.clone()]);
    if !fits(*used, head, budget) {
        return Vec::new();
    }
    *used += head;
    let mut parts = vec![SectionOutcome {
        title: String::new(),
        line: whole.line,
        span: sub.preamble.clone(),
        size: head,
        class: Class::Normal,
        kept: true,
        parts: Vec::new(),
    }];
    // Markers order the parts; only `## ` sections are kept past the budget.
    let classes: Vec<Class> = sub
        .sections
        .iter()
        .map(|s| match s.marker {
            Marker::Pinned => Class::Pinned,
            Marker::Fresh => Class::Fresh,
            _ => Class::Normal,
        })
        .collect();
    let order = claim_order(&classes, &sub.sections);
    let mut children: Vec<SectionOutcome> = sub
        .sections
        .iter()
        .zip(&classes)
        .map(|(s, &class)| SectionOutcome {
            title: s.title.clone(),
            line: s.line,
            span: s.span.clone(),
            size: unit.measure(&input[s.span.clone()]),
            // `Pinned` promises a place whatever the budget, which a part
            // does not get: a pinned part is only claimed first.
            class: if class == Class::Fresh { Class::Fresh } else { Class::Normal },
            kept: false,
            parts: Vec::new(),
        })
        .collect();
    for &i in &order {
        if fits(*used, children[i].size, budget) {
            children[i].kept = true;
            *used += children[i].size;
        }
    }
    for &i in &order {
        if !children[i].kept {
            let s = &sub.sections[i];
            let whole = Whole { span: s.span.clone(), line: s.line, level: s.level, marked: s.marker != Marker::None };
            children[i].parts = pack_parts(input, &whole, unit, budget, used);
            if let Some(head) = children[i].parts.first_mut() {
                head.title = s.title.clone();
            }
        }
    }
    if children.iter().all(|c| !c.kept && c.parts.is_empty()) {
        // A heading with none of its subsections is not worth its room:
        // give it back, the section stays dropped whole.
        *used -= head;
        return Vec::new();
    }
    parts.extend(children);
    parts
}
