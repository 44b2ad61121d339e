//! Folding runs of like lines, in order: consecutive lines of one shape
//! (`text::shape`) print as their first line, one marker that counts the
//! lines between, and their last line, so a build's 3,000 `Compiling`
//! lines cost three lines of the budget and every line is still accounted
//! for.
//!
//! A run folds only from `MIN_RUN` lines: two like lines print both. A line
//! that may not disappear into a fold (a signal line, a line too long to
//! keep whole) has no key and ends a run.

use crate::text::shape;

/// The fewest lines a fold stands for, its two exemplars included.
pub const MIN_RUN: usize = 3;

/// The key that decides which neighbours fold together.
pub fn key(line: &[u8]) -> u64 {
    shape::hash(line)
}

/// The key of every line that reports a passing test of the detected
/// family (`FamilySpec::passing`): such lines fold together whatever their
/// test names. A shape hash equal to it would only make those lines fold
/// with passing tests, counted as lines all the same.
pub const PASSING: u64 = 0x7061_7373_696e_6721;

/// Maximal runs of equal keys, as inclusive index ranges in order; a line
/// without a key is a run of its own.
pub fn runs(keys: &[Option<u64>]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < keys.len() {
        let mut j = i;
        if keys[i].is_some() {
            while j + 1 < keys.len() && keys[j + 1] == keys[i] {
                j += 1;
            }
        }
        out.push((i, j));
        i = j + 1;
    }
    out
}

/// The marker printed between a fold's first and last lines, which are
/// input lines `from - 1` and `to + 1`: it counts and numbers the lines it
/// stands for (the exemplars around it show their shape). It has the
/// `--- … ---` form of every marker, which input lines cannot imitate
/// (they are escaped).
pub fn marker(from: u64, to: u64) -> String {
    let n = to + 1 - from;
    let lines = if n == 1 { "line" } else { "lines" };
    format!("--- {n} similar {lines} {from}-{to} folded ---\n")
}

/// [`marker`] for a run of passing tests' lines.
pub fn passing_marker(from: u64, to: u64) -> String {
    let n = to + 1 - from;
    let lines = if n == 1 { "line" } else { "lines" };
    format!("--- {n} more passing-test {lines} {from}-{to} folded ---\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_maximal_and_keyless_lines_stand_alone() {
        let k = |v: &[u64]| v.iter().map(|&x| if x == 0 { None } else { Some(x) }).collect::<Vec<_>>();
        assert_eq!(runs(&k(&[1, 1, 1, 2, 2, 0, 0, 1])), vec![(0, 2), (3, 4), (5, 5), (6, 6), (7, 7)]);
        assert_eq!(runs(&[]), vec![]);
    }

    #[test]
    fn the_marker_counts_the_lines_between_the_exemplars() {
        assert_eq!(marker(4, 2956), "--- 2953 similar lines 4-2956 folded ---\n");
        assert_eq!(marker(7, 7), "--- 1 similar line 7-7 folded ---\n");
        assert_eq!(key(b"Compiling a1 v0.1.0"), key(b"Compiling a22 v10.0.3"));
    }
}
