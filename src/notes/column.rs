//! A column of non-decreasing numbers (byte offsets, line numbers) in four
//! bytes an entry, exact at any size.
//!
//! The section index holds one offset and one line number per section, and
//! a notes file may have millions of sections: eight-byte entries would
//! double what the index costs. Offsets below 4 GiB (every file `outbox
//! pack` reads) fit in 32 bits; above that, the high part of a value only
//! grows, so the entries where it changes are recorded aside (none at all
//! for a file under 4 GiB) and the low 32 bits are stored per entry.
//!
//! Invariant: `get(i)` returns exactly what the `i`-th `push` was given,
//! provided the values pushed never decrease.

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Column {
    low: Vec<u32>,
    /// (first entry, high 32 bits) wherever the high part changes, in
    /// entry order; entries before the first one have a high part of 0.
    steps: Vec<(usize, u64)>,
}

impl Column {
    /// Appends `value`, which must not be below the last one pushed.
    pub(crate) fn push(&mut self, value: usize) {
        let value = value as u64;
        let high = value >> 32;
        debug_assert!(
            self.low.is_empty() || value >= ((self.last_high() << 32) | u64::from(*self.low.last().unwrap()))
        );
        if high != self.last_high() {
            self.steps.push((self.low.len(), high));
        }
        self.low.push(value as u32);
    }

    /// The `i`-th value pushed. Panics when `i` is out of range.
    pub(crate) fn get(&self, i: usize) -> usize {
        let low = u64::from(self.low[i]);
        let k = self.steps.partition_point(|&(first, _)| first <= i);
        let high = if k == 0 { 0 } else { self.steps[k - 1].1 };
        // A value that was pushed fits in usize.
        ((high << 32) | low) as usize
    }

    pub(crate) fn len(&self) -> usize {
        self.low.len()
    }

    fn last_high(&self) -> u64 {
        self.steps.last().map_or(0, |&(_, high)| high)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_round_trip_with_no_steps() {
        let mut c = Column::default();
        for v in [0, 0, 7, 4096, u32::MAX as usize] {
            c.push(v);
        }
        assert_eq!((0..c.len()).map(|i| c.get(i)).collect::<Vec<_>>(), [0, 0, 7, 4096, u32::MAX as usize]);
        assert!(c.steps.is_empty());
        // Four bytes an entry: what the section index's budget counts on.
        assert_eq!(std::mem::size_of_val(&c.low[0]), 4);
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn values_past_4_gib_round_trip() {
        let g = 1usize << 32;
        let values = [1, g - 1, g, g + 5, 3 * g, 3 * g + 1, 5 * g - 1];
        let mut c = Column::default();
        for v in values {
            c.push(v);
        }
        assert_eq!((0..c.len()).map(|i| c.get(i)).collect::<Vec<_>>(), values);
        assert_eq!(c.steps.len(), 3);
    }
}
