//! Whether a value looks random: what separates `password=Xk9fQ2mZ7pLw`
//! from `password: required`, and a key's body from a line of prose.

/// Shannon entropy of `s` in bits per byte.
pub fn shannon(s: &[u8]) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in s {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts.iter().filter(|&&c| c > 0).map(|&c| c as f64 / n).map(|p| -p * p.log2()).sum()
}

/// At least 8 bytes, entropy of at least `bits` per byte, and at least two
/// of lowercase letters, uppercase letters and digits: a word, a path of
/// words, a number or a run of one character is not random, however long.
pub fn looks_random(s: &[u8], bits: f64) -> bool {
    if s.len() < 8 {
        return false;
    }
    let lower = s.iter().any(u8::is_ascii_lowercase) as u8;
    let upper = s.iter().any(u8::is_ascii_uppercase) as u8;
    let digit = s.iter().any(u8::is_ascii_digit) as u8;
    lower + upper + digit >= 2 && shannon(s) >= bits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_placeholders_are_not_random_keys_are() {
        for plain in ["required", "changeme", "hunter2", "my-tls-secret", "********", "/home/user/project", "12345678"]
        {
            assert!(!looks_random(plain.as_bytes(), 3.0), "{plain}");
        }
        for random in ["Xk9fQ2mZ7pLw", "3f2a9c1b7d4e8a6f0b5c", "wJalrXUtnFEMIK7MDENGbPxRfiCYzz"] {
            assert!(looks_random(random.as_bytes(), 3.0), "{random}");
        }
        assert_eq!(shannon(b"aaaa"), 0.0);
        assert!((shannon(b"ab") - 1.0).abs() < 1e-9);
    }
}
