//! Numbers as listings print them: counts (`2789`), sizes with a unit
//! (`du -h`, `ls -lh`: `4.0K`, `1.9M`, `12G`, `--si`'s `k`), and the
//! figures outbox prints back (`41,328`, `1.9M`).

/// A number token: digits with an optional fraction and an optional unit
/// suffix (K, M, G, T, P, E, Z, Y, also lower case, optionally followed by
/// `i` and/or `B`). Returns the value in base units (a size in bytes when a
/// unit was given) and whether a unit was given. `,` is accepted as the
/// decimal mark (`1,5M` in some locales).
pub fn parse_size(tok: &[u8]) -> Option<(u64, bool)> {
    let int_end = tok.iter().position(|b| !b.is_ascii_digit()).unwrap_or(tok.len());
    if int_end == 0 || int_end > 19 {
        return None;
    }
    let int = parse_u64(&tok[..int_end])?;
    let mut rest = &tok[int_end..];
    let mut frac = 0.0;
    if let [b'.' | b',', tail @ ..] = rest {
        let n = tail.iter().position(|b| !b.is_ascii_digit()).unwrap_or(tail.len());
        if n == 0 {
            return None;
        }
        let digits = &tail[..n.min(6)];
        frac = parse_u64(digits)? as f64 / 10f64.powi(digits.len() as i32);
        rest = &tail[n..];
    }
    if rest.is_empty() {
        return Some((if frac == 0.0 { int } else { (int as f64 + frac).round() as u64 }, false));
    }
    let power = match rest[0].to_ascii_uppercase() {
        b'B' if rest.len() == 1 => 0,
        b'K' => 1,
        b'M' => 2,
        b'G' => 3,
        b'T' => 4,
        b'P' => 5,
        b'E' => 6,
        b'Z' | b'Y' => 7,
        _ => return None,
    };
    let suffix = &rest[1..];
    if !matches!(suffix, b"" | b"i" | b"B" | b"iB") {
        return None;
    }
    // `--si` (lower-case k, or an explicit `B` without `i`) counts in
    // thousands; du and ls print powers of 1024 otherwise.
    let base: f64 = if rest[0] == b'k' || suffix == b"B" { 1000.0 } else { 1024.0 };
    let v = (int as f64 + frac) * base.powi(power);
    Some((v.min(u64::MAX as f64) as u64, power > 0))
}

/// Digits only, without overflow.
pub fn parse_u64(digits: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    if digits.is_empty() {
        return None;
    }
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(v)
}

/// `41328` → `41,328`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A size in bytes as `du -h` prints it: `1.9M`, `512K`, `812`.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["K", "M", "G", "T", "P", "E", "Z"];
    if bytes < 1024 {
        return bytes.to_string();
    }
    let mut v = bytes as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v < 10.0 {
        format!("{:.1}{}", (v * 10.0).ceil() / 10.0, UNITS[u])
    } else {
        format!("{:.0}{}", v.ceil(), UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_du_and_ls_print_them() {
        assert_eq!(parse_size(b"2789"), Some((2789, false)));
        assert_eq!(parse_size(b"4.0K"), Some((4096, true)));
        assert_eq!(parse_size(b"1.9M"), Some(((1.9 * 1048576.0) as u64, true)));
        assert_eq!(parse_size(b"12G"), Some((12 << 30, true)));
        assert_eq!(parse_size(b"1,5M"), Some((1572864, true)));
        assert_eq!(parse_size(b"3k"), Some((3000, true)));
        assert_eq!(parse_size(b"2KiB"), Some((2048, true)));
        assert_eq!(parse_size(b"0"), Some((0, false)));
        for bad in [&b""[..], b"K", b"4.K", b"12x", b"1.2.3", b"99999999999999999999", b"-1"] {
            assert_eq!(parse_size(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn figures_as_printed() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(41328), "41,328");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(human(812), "812");
        assert_eq!(human(4096), "4.0K");
        assert_eq!(human(1992294), "1.9M");
        assert_eq!(human(600 << 20), "600M");
    }
}
