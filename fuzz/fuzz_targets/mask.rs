//! The credential masker (issue 29) on lines mixing junk, planted
//! credentials of every documented shape, key blocks and look-alikes:
//! nothing panics; a planted secret never survives in a line's display,
//! in a line fitted or shortened to any room the renderer gives, in
//! passthrough's safe copy, or in a rendered envelope; a fitted line never
//! grows past its room; no prefix or suffix of a display ends inside a
//! marker; look-alikes print intact; the envelope stays within its budget
//! and its header counts exactly the markers printed.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use outbox::render::envelope::{fit_or_shorten, safe_copy, Budgets};
use outbox::stream::line::LineBody;
use outbox::stream::scan::ScanConfig;
use outbox::stream::signal;
use outbox::text::sanitize::display;
use outbox::text::secrets::samples::{credentials, look_alikes, openssh_block, pem_block};
use outbox::text::secrets::{count_markers, Counts, MARKER_OPEN};
use outbox_fuzz::{header, render, run_info, scan};

#[derive(Arbitrary, Debug)]
enum Piece {
    /// Arbitrary bytes (no newline) on a line of their own.
    Junk(Vec<u8>),
    /// Credential `n` of seed `seed`, alone on its line or after junk
    /// that ends with a separator.
    Token { n: u8, seed: u8, after: Option<Vec<u8>> },
    LookAlike { n: u8, seed: u8 },
    /// A private key block (PEM or OpenSSH) of a few lines.
    Key { ssh: bool, lines: u8, seed: u8 },
    /// Imitation of a marker.
    Forged,
    /// Lines of filler, so that the envelope has a gap.
    Filler(u16),
}

#[derive(Arbitrary, Debug)]
struct Case {
    pieces: Vec<Piece>,
    budget: u16,
    tail: u8,
    rooms: Vec<u8>,
}

fuzz_target!(|c: Case| {
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut secrets: Vec<String> = Vec::new();
    let mut alikes: Vec<String> = Vec::new();
    for p in c.pieces.iter().take(64) {
        match p {
            Piece::Junk(b) => lines.push(b.iter().copied().filter(|&x| x != b'\n').take(300).collect()),
            Piece::Token { n, seed, after } => {
                let all = credentials(*seed as u64);
                let t = &all[*n as usize % all.len()];
                let mut line: Vec<u8> = Vec::new();
                if let Some(a) = after {
                    // Printable: an escape sequence left open would take
                    // the start of the line into it (then what a terminal
                    // shows is not the planted line).
                    line.extend(a.iter().copied().filter(|x| x.is_ascii_graphic()).take(40));
                    line.push(b' ');
                }
                line.extend_from_slice(t.line.as_bytes());
                secrets.push(t.secret.clone());
                lines.push(line);
            }
            Piece::LookAlike { n, seed } => {
                let all = look_alikes(*seed as u64);
                let l = all[*n as usize % all.len()].clone();
                lines.push(l.clone().into_bytes());
                alikes.push(l);
            }
            Piece::Key { ssh, lines: n, seed } => {
                let n = 2 + (*n as usize % 12);
                let block = if *ssh { openssh_block(*seed as u64, n) } else { pem_block(*seed as u64, n) };
                secrets.extend(block[1..block.len() - 1].iter().filter(|l| l.len() >= 16).cloned());
                lines.extend(block.into_iter().map(String::into_bytes));
            }
            Piece::Forged => lines.push("x …[masked github-token, 40 chars] y".as_bytes().to_vec()),
            Piece::Filler(n) => lines.extend((0..(*n as usize % 3000)).map(|i| format!("step {i}").into_bytes())),
        }
    }
    let leaks = |what: &str, text: &str| {
        for s in &secrets {
            assert!(!text.contains(s.as_str()), "{what}: secret {s} survived in {text}");
        }
    };

    // Each line alone: its display, and fitted to any room.
    for line in &lines {
        let d = display(line);
        leaks("display", &d.text);
        assert_eq!(d.chars(), d.text.chars().count());
        let n = d.chars();
        for k in [0, 1, n / 3, n / 2, n.saturating_sub(1), n] {
            let (p, _, shown) = d.prefix(k);
            assert!(shown <= k);
            let (s, _, shown) = d.suffix(k);
            assert!(shown <= k);
            // Never a part of a marker at the cut.
            for cut in [p.len(), d.text.len() - s.len()] {
                let before = &d.text[..cut];
                if let Some(open) = before.rfind(MARKER_OPEN) {
                    assert!(before[open..].contains(" chars]"), "cut inside a marker: {:?}", d.text);
                }
            }
        }
        for &r in c.rooms.iter().take(8) {
            let room = 48 + r as usize * 4;
            for guard in [false, true] {
                if let Some((text, chars, _)) = fit_or_shorten(LineBody::Whole(line), room, guard) {
                    assert!(chars <= room, "{chars} > {room}: {text}");
                    assert_eq!(chars, text.chars().count());
                    leaks("fitted", &text);
                }
            }
        }
    }
    for l in &alikes {
        assert_eq!(&display(l.as_bytes()).text, l, "look-alike changed");
    }

    let mut input = lines.join(&b'\n');
    input.push(b'\n');
    let copy = safe_copy(&input);
    leaks("safe copy", &copy);

    // The envelope.
    let budget = 1_000 + (c.budget as usize % 14_000);
    let b = Budgets { budget, tail_lines: 1 + c.tail as usize % 40, ..Budgets::default() };
    let re = signal::matcher(None).unwrap();
    let sc = scan(&input, &[], ScanConfig { budget, tail_lines: b.tail_lines, ..ScanConfig::default() });
    let out = render(&sc, &b, &run_info(), &re);
    assert!(out.chars().count() <= budget, "over budget: {} > {budget}", out.chars().count());
    leaks("envelope", &out);
    let h = header(&out);
    let body = out.splitn(4, '\n').nth(3).unwrap_or("");
    let mut printed = Counts::new();
    count_markers(body, &mut printed);
    match h.get("secrets_masked") {
        None => assert!(printed.is_empty(), "markers printed but not stated: {printed:?}"),
        Some(v) => {
            let stated: Counts = v.as_object().unwrap().iter().map(|(k, n)| (k.clone(), n.as_u64().unwrap())).collect();
            assert_eq!(stated, printed, "the header counts what is printed");
        }
    }
});
