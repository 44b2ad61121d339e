//! A line redrawn in place (progress bars, spinners, `git clone`'s
//! counters) as a terminal finally shows it.
//!
//! A carriage return sends the cursor back to column 0 and the next frame
//! overwrites the previous one only as far as it reaches, so a shorter last
//! frame leaves the end of a longer earlier one visible; erase-line
//! sequences (`ESC [ K`, `ESC [ 1 K`, `ESC [ 2 K`) blank what they cover and
//! a backspace steps back one column. Every other escape sequence is
//! dropped (the display would strip it anyway) and counted. One cell is
//! one character (or one invalid byte): wide characters are not measured.
//! Cursor movement to other lines (`ESC [ A`, the frames docker compose
//! draws) is not emulated: it is dropped like a colour.

/// The line as finally displayed, and how often it was redrawn.
#[derive(Debug, PartialEq, Eq)]
pub struct Settled {
    pub text: Vec<u8>,
    /// Times the line was returned to (a `\r` or an erase of the whole
    /// line) and then written again.
    pub redraws: u64,
    /// Escape sequences consumed.
    pub escapes: u32,
}

/// `line` as a terminal would leave it, when it is redrawn at all (a `\r`
/// or a whole-line erase followed by more text); `None` for a plain line.
pub fn settle(line: &[u8]) -> Option<Settled> {
    if memchr::memchr(b'\r', line).is_none() && memchr::memmem::find(line, b"\x1b[2K").is_none() {
        return None;
    }
    // A cell is the bytes of one character; an erased cell is empty.
    let mut cells: Vec<&[u8]> = Vec::new();
    let mut col = 0usize;
    let mut pending = false;
    let mut s = Settled { text: Vec::new(), redraws: 0, escapes: 0 };
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'\r' => {
                col = 0;
                pending = true;
                i += 1;
            }
            0x08 => {
                col = col.saturating_sub(1);
                i += 1;
            }
            0x1b if line.get(i + 1) == Some(&b'[') => {
                let params_end = line[i + 2..].iter().position(|b| !(0x20..=0x3f).contains(b)).map(|k| i + 2 + k);
                let Some(end) = params_end.filter(|&e| (0x40..=0x7e).contains(&line[e])) else {
                    // An unfinished sequence: shown as it is (the display escapes it).
                    cells_write(&mut cells, &mut col, &line[i..i + 1]);
                    i += 1;
                    continue;
                };
                if line[end] == b'K' {
                    match &line[i + 2..end] {
                        b"" | b"0" => cells.truncate(col),
                        b"1" => cells.iter_mut().take(col + 1).for_each(|c| *c = b""),
                        b"2" => {
                            cells.iter_mut().for_each(|c| *c = b"");
                            pending = true;
                        }
                        _ => {}
                    }
                }
                s.escapes += 1;
                i = end + 1;
            }
            _ => {
                let n = char_len(&line[i..]);
                if pending {
                    s.redraws += 1;
                    pending = false;
                }
                cells_write(&mut cells, &mut col, &line[i..i + n]);
                i += n;
            }
        }
    }
    if s.redraws == 0 {
        return None;
    }
    while cells.last().is_some_and(|c| c.is_empty()) {
        cells.pop();
    }
    for c in cells {
        s.text.extend_from_slice(if c.is_empty() { b" " } else { c });
    }
    Some(s)
}

fn cells_write<'a>(cells: &mut Vec<&'a [u8]>, col: &mut usize, c: &'a [u8]) {
    if *col < cells.len() {
        cells[*col] = c;
    } else {
        cells.resize(*col, b"");
        cells.push(c);
    }
    *col += 1;
}

/// Bytes of the character starting `b` (1 for an invalid byte).
fn char_len(b: &[u8]) -> usize {
    let n = match b[0] {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => 1,
    };
    if n > b.len() || !b[1..n].iter().all(|&c| (0x80..=0xbf).contains(&c)) {
        return 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &[u8]) -> (String, u64) {
        let s = settle(line).expect("redrawn");
        (String::from_utf8(s.text).unwrap(), s.redraws)
    }

    #[test]
    fn the_last_frame_overlays_the_earlier_ones() {
        assert_eq!(text(b"Receiving 1%\rReceiving 50%\rReceiving 100%, done."), ("Receiving 100%, done.".into(), 2));
        // A shorter last frame leaves the end of the longer one visible.
        assert_eq!(text(b"abcdef\rXY"), ("XYcdef".into(), 1));
    }

    #[test]
    fn erase_line_blanks_what_it_covers() {
        assert_eq!(text(b"long frame here\r\x1b[2Kshort"), ("short".into(), 1));
        assert_eq!(text(b"abcdef\r\x1b[Kxy"), ("xy".into(), 1));
        assert_eq!(text(b"abcdef\x1b[2Kxy"), ("      xy".into(), 1));
    }

    #[test]
    fn a_plain_line_or_a_trailing_cr_alone_is_not_a_redraw() {
        assert_eq!(settle(b"plain line"), None);
        assert_eq!(settle(b"ends with cr\r"), None);
        assert_eq!(settle(b"colour \x1b[31mred\x1b[0m\x1b[K"), None);
    }

    #[test]
    fn multibyte_and_invalid_bytes_are_one_cell_each() {
        assert_eq!(text("日本語\rab".as_bytes()), ("ab語".into(), 1));
        let s = settle(b"\xff\xfeZ\rA").unwrap();
        assert_eq!(s.text, b"A\xfeZ".to_vec());
    }
}
