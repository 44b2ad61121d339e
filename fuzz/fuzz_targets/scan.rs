//! The scanner against the naive model and against itself: feeding the
//! input in arbitrary blocks gives the same counts, signal hits, head, tail,
//! kept signal lines and rendered envelope as feeding it in one block, and
//! those agree with a naive read-everything model.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use outbox_fuzz::{boundaries, model, render, run_info, scan, Body, FuzzBudgets, Input, SignalChoice};

#[derive(Arbitrary, Debug)]
struct Case {
    budgets: FuzzBudgets,
    signal: SignalChoice,
    /// Block sizes (0 counts as 1); the rest of the input is one block.
    sizes: Vec<u16>,
    input: Input,
}

fuzz_target!(|c: Case| {
    let (data, cuts) = c.input.build();
    let re = c.signal.regex();
    let cfg = c.budgets.scan_config(&re);
    let m = model(&data, &re);

    let whole = scan(&data, &[], cfg.clone());
    let ends = boundaries(data.len(), &c.sizes, &cuts);
    let split = scan(&data, &ends, cfg.clone());

    for (name, sc) in [("whole", &whole), ("split", &split)] {
        let r = sc.result();
        assert_eq!(r.bytes, m.bytes, "{name}: bytes");
        assert_eq!(r.chars, m.chars, "{name}: chars vs from_utf8_lossy");
        assert_eq!(r.lines, m.lines.len() as u64, "{name}: lines");
        assert_eq!(r.unterminated, m.unterminated, "{name}: unterminated");
        assert_eq!(r.binary, m.binary, "{name}: binary");
        assert_eq!(r.signals.hits(), m.hits, "{name}: signal hits vs a naive per-line match");
        let head_len = data.len().min(cfg.head_bytes());
        assert_eq!(r.head, &data[..head_len], "{name}: head arena");
        assert_eq!(r.head_is_all, head_len == data.len(), "{name}: head_is_all");

        // The tail: contiguous line numbers ending at the last line, each a
        // faithful view of its line; never empty when there are lines.
        let tail: Vec<(u64, Body)> = r.tail.lines().map(|l| (l.lineno, Body::from(l.body()))).collect();
        assert_eq!(tail.is_empty(), m.lines.is_empty(), "{name}: tail empty iff no lines");
        // `--tail N` is a minimum: the ring keeps up to the budget in lines.
        let most = c.budgets.tail_lines.max(1).max(c.budgets.budget);
        assert!(tail.len() <= most, "{name}: tail longer than the ring may keep");
        for (i, (no, body)) in tail.iter().enumerate() {
            let want = m.lines.len() as u64 - (tail.len() - i) as u64 + 1;
            assert_eq!(*no, want, "{name}: tail line numbers contiguous up to the last line");
            assert!(body.represents(&m.lines[*no as usize - 1]), "{name}: tail line {no} is {body:?}");
        }

        // The first line, when kept apart from the head arena.
        if let Some(f) = r.first_line {
            assert_eq!(f.lineno, 1);
            assert!(Body::from(f.body()).represents(&m.lines[0]), "{name}: first line");
        }

        // Kept signal lines are lines that match.
        for l in r.signals.by_priority() {
            let i = l.lineno as usize - 1;
            assert!(m.matched[i], "{name}: kept signal line {} does not match alone", l.lineno);
            assert!(Body::from(l.body()).represents(&m.lines[i]), "{name}: signal line {}", l.lineno);
        }
    }

    // Split == whole, piece by piece, then the rendered envelope.
    let (w, s) = (whole.result(), split.result());
    let tw: Vec<(u64, Body)> = w.tail.lines().map(|l| (l.lineno, Body::from(l.body()))).collect();
    let ts: Vec<(u64, Body)> = s.tail.lines().map(|l| (l.lineno, Body::from(l.body()))).collect();
    assert_eq!(tw, ts, "tail differs between whole and split feeding");
    let fw = w.first_line.map(|l| Body::from(l.body()));
    let fs = s.first_line.map(|l| Body::from(l.body()));
    assert_eq!(fw, fs, "first line differs");
    let pw: Vec<(u64, Body)> = w.signals.by_priority().iter().map(|l| (l.lineno, Body::from(l.body()))).collect();
    let ps: Vec<(u64, Body)> = s.signals.by_priority().iter().map(|l| (l.lineno, Body::from(l.body()))).collect();
    assert_eq!(pw, ps, "kept signal lines differ");

    let b = c.budgets.budgets();
    let info = run_info();
    let ew = render(&whole, &b, &info, &re);
    let es = render(&split, &b, &info, &re);
    assert_eq!(ew, es, "envelope differs between whole and split feeding");
});
