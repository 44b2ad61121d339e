//! Sizes as people type them: `1234`, `64K`, `16M`, `1G`.

/// Parses `1234`, `64K`, `16M`, `1G` (powers of 1024; `KB`/`KiB` also
/// accepted).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit() && c != '_').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: u64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("'{s}' is not a size: use a number with an optional K, M or G suffix"))?;
    let mult: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        other => return Err(format!("unknown size suffix '{other}' in '{s}': use K, M or G")),
    };
    num.checked_mul(mult).ok_or_else(|| format!("'{s}' is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("14_000"), Ok(14000));
        assert!(parse_size("12Q").is_err());
    }
}
