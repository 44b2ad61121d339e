//! Robust statistics of a series of output sizes: the level (median of
//! recent runs), the spread (median absolute deviation), the slope per run
//! (Theil–Sen), whether that slope is significant (Mann–Kendall), and level
//! steps (a jump between two runs that stays).
//!
//! Why these: outputs are noisy and have outliers (one failing run prints
//! ten times as much). Medians ignore outliers; Theil–Sen is the median of
//! pairwise slopes, so one wild run cannot tilt it; Mann–Kendall asks
//! whether the runs rise more often than chance would, so a flat noisy
//! series raises no alarm. Everything is O(n²) in the runs of one series,
//! which are at most a few hundred.

/// Median of `v` (NaN-free input); None when empty.
pub fn median(v: &[f64]) -> Option<f64> {
    percentile(v, 0.5)
}

/// The `p` quantile (0..=1) by linear interpolation between order
/// statistics; None when empty.
pub fn percentile(v: &[f64], p: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let pos = p.clamp(0.0, 1.0) * (s.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(s[lo] + (s[hi] - s[lo]) * (pos - lo as f64))
}

/// Median absolute deviation from the median.
pub fn mad(v: &[f64]) -> Option<f64> {
    let m = median(v)?;
    let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

/// A fitted line: `value(i) = intercept + slope * i`, `i` the run's index.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    pub slope: f64,
    pub intercept: f64,
}

impl Line {
    pub fn at(&self, i: f64) -> f64 {
        self.intercept + self.slope * i
    }
}

/// Theil–Sen: the median of the slopes between every pair of runs, and the
/// median of the residual intercepts. None for fewer than two runs.
pub fn theil_sen(y: &[f64]) -> Option<Line> {
    if y.len() < 2 {
        return None;
    }
    let mut slopes = Vec::with_capacity(y.len() * (y.len() - 1) / 2);
    for i in 0..y.len() {
        for j in i + 1..y.len() {
            slopes.push((y[j] - y[i]) / (j - i) as f64);
        }
    }
    let slope = median(&slopes)?;
    let intercepts: Vec<f64> = y.iter().enumerate().map(|(i, v)| v - slope * i as f64).collect();
    Some(Line { slope, intercept: median(&intercepts)? })
}

/// Mann–Kendall's normalised statistic: how much more often later runs are
/// larger than earlier ones than chance allows (ties corrected). |z| > 3
/// happens by chance in about 3 of 1,000 flat series.
pub fn mann_kendall_z(y: &[f64]) -> f64 {
    let n = y.len();
    if n < 3 {
        return 0.0;
    }
    let mut s = 0i64;
    for i in 0..n {
        for j in i + 1..n {
            s += (y[j] - y[i]).partial_cmp(&0.0).map_or(0, |o| o as i64);
        }
    }
    // Variance with the correction for groups of tied values.
    let mut sorted = y.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut ties = 0f64;
    let mut k = 0;
    while k < n {
        let mut m = k;
        while m + 1 < n && sorted[m + 1] == sorted[k] {
            m += 1;
        }
        let t = (m - k + 1) as f64;
        ties += t * (t - 1.0) * (2.0 * t + 5.0);
        k = m + 1;
    }
    let nf = n as f64;
    let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    if var <= 0.0 {
        return 0.0;
    }
    let s = s as f64;
    let corrected = if s > 0.0 {
        s - 1.0
    } else if s < 0.0 {
        s + 1.0
    } else {
        0.0
    };
    corrected / var.sqrt()
}

/// The z beyond which a trend is called significant.
pub const TREND_Z: f64 = 3.0;

/// A jump in level between run `at - 1` and run `at` that stays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// Index of the first run at the new level.
    pub at: usize,
    /// New level minus old level (medians of the two sides).
    pub delta: f64,
}

/// The level step in `y`, if one stands out. The split point is the one
/// that leaves the least absolute deviation around each side's median (a
/// change point under an L1 cost, robust to outliers); it counts when it
/// has at least three runs before it and two after, and the change of
/// medians is larger than both five times the spread on either side and 5%
/// of the old level, and larger than what the runs' own slope before it
/// would give (so a steady trend is not called a step).
pub fn step(y: &[f64]) -> Option<Step> {
    let n = y.len();
    let cost = |v: &[f64]| median(v).map_or(0.0, |m| v.iter().map(|x| (x - m).abs()).sum::<f64>());
    let at = (3..n.saturating_sub(1)).min_by(|&a, &b| {
        let ca = cost(&y[..a]) + cost(&y[a..]);
        let cb = cost(&y[..b]) + cost(&y[b..]);
        ca.total_cmp(&cb)
    })?;
    let (before, after) = y.split_at(at);
    let (mb, ma) = (median(before)?, median(after)?);
    let delta = ma - mb;
    let spread = mad(before)?.max(mad(after)?);
    let floor = (0.05 * mb.abs()).max(1.0);
    if delta.abs() <= floor || delta.abs() <= 5.0 * spread {
        return None;
    }
    let slope = theil_sen(before).map_or(0.0, |l| l.slope);
    let expected = slope * (after.len() as f64 + before.len() as f64) / 2.0;
    if (delta - expected).abs() <= floor.max(5.0 * spread) {
        return None;
    }
    Some(Step { at, delta })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise in [-1, 1] (a small LCG), so tests need no crate.
    fn noise(seed: u64, n: usize) -> Vec<f64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn medians_and_quantiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95), Some(4.8));
        assert_eq!(median(&[]), None);
        assert_eq!(mad(&[1.0, 2.0, 3.0, 100.0]), Some(1.0));
    }

    #[test]
    fn a_steady_rise_has_its_slope_and_is_significant() {
        let y: Vec<f64> = (0..30).map(|i| 20_000.0 + 300.0 * i as f64).collect();
        let l = theil_sen(&y).unwrap();
        assert!((l.slope - 300.0).abs() < 1e-9);
        assert!((l.at(29.0) - 28_700.0).abs() < 1e-6);
        assert!(mann_kendall_z(&y) > TREND_Z);
        assert_eq!(step(&y), None, "a trend is not a step");
    }

    #[test]
    fn a_noisy_rise_keeps_its_slope() {
        let y: Vec<f64> =
            noise(7, 30).iter().enumerate().map(|(i, e)| 20_000.0 + 300.0 * i as f64 + 500.0 * e).collect();
        let l = theil_sen(&y).unwrap();
        assert!((l.slope - 300.0).abs() < 15.0, "{}", l.slope);
        assert!(mann_kendall_z(&y) > TREND_Z);
    }

    #[test]
    fn flat_noise_is_no_trend_and_no_step_for_many_seeds() {
        for seed in 0..200 {
            let y: Vec<f64> = noise(seed, 30).iter().map(|e| 20_000.0 + 500.0 * e).collect();
            assert!(mann_kendall_z(&y).abs() <= TREND_Z, "seed {seed}: z {}", mann_kendall_z(&y));
            assert_eq!(step(&y), None, "seed {seed}");
        }
    }

    #[test]
    fn one_outlier_moves_neither_level_nor_slope() {
        let mut y: Vec<f64> = noise(3, 30).iter().map(|e| 20_000.0 + 500.0 * e).collect();
        let before = (median(&y).unwrap(), theil_sen(&y).unwrap().slope);
        y[15] = 200_000.0;
        let after = (median(&y).unwrap(), theil_sen(&y).unwrap().slope);
        assert!((before.0 - after.0).abs() < 100.0);
        assert!((before.1 - after.1).abs() < 10.0);
        assert_eq!(step(&y), None);
    }

    #[test]
    fn a_jump_is_a_step_at_the_right_run() {
        let y: Vec<f64> = noise(11, 30)
            .iter()
            .enumerate()
            .map(|(i, e)| 20_000.0 + 300.0 * e + if i >= 20 { 6_000.0 } else { 0.0 })
            .collect();
        let s = step(&y).expect("a step");
        assert_eq!(s.at, 20);
        assert!((s.delta - 6_000.0).abs() < 400.0, "{}", s.delta);
    }
}
