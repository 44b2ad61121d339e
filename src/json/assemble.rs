//! Fitting a fold's header and samples into the budget, and the check
//! every output passes before it is returned.
//!
//! Invariants: `assemble` never returns more characters (Unicode scalar
//! values) than the budget when the budget is at least the contract's
//! minimum (1,000): it degrades the key inventory, then the optional header
//! fields, then the samples, measuring the final string each time.
//! `check_output` re-parses the result (strict JSON, big numbers allowed).

use simd_json::tape::Node;

use crate::json::inventory::{InvLevel, Inventory};
use crate::json::sample::{render_fitting, try_render, Caps, CutStats, Item, Rendered};
use crate::json::scan::prescan;
use crate::json::value::{json_string, str_chars, write_j, Class, Field, J};
use crate::text::utf8::count_chars;

/// One sample candidate, with where it came from.
pub(crate) struct Sample<'t, 'i> {
    pub item: Item<'t, 'i>,
    /// NDJSON: its line number (1-based).
    pub line: u64,
}

/// Everything a fold hands to `assemble`.
pub(crate) struct Envelope<'a, 't, 'i> {
    /// Header fields before the sample block, in output order.
    pub fields: Vec<Field>,
    pub inventory: &'a Inventory,
    /// Candidates in input order (at most `samples_max` are used).
    pub firsts: Vec<Sample<'t, 'i>>,
    /// NDJSON: the last record, reserved before the first ones.
    pub last: Option<Sample<'t, 'i>>,
    pub samples_max: usize,
    pub sample_policy: String,
    /// NDJSON: print `sample_lines`.
    pub with_lines: bool,
    pub budget: usize,
}

struct Picked {
    /// (line, rendered) in output order.
    shown: Vec<(u64, Rendered)>,
    cuts: CutStats,
    /// The first shown sample is uncut.
    whole_first: bool,
}

impl Envelope<'_, '_, '_> {
    fn pick(&self, room: usize) -> Picked {
        const SEP: usize = 2; // ",\n" (or the "\n" after "[")
        let mut left = room;
        let mut firsts = Vec::new();
        let mut last = None;
        if self.samples_max > 0 {
            if let Some(s) = &self.last {
                let share = if self.firsts.is_empty() { left } else { left / 2 };
                if let Some(r) = render_fitting(&s.item, share.saturating_sub(SEP)) {
                    left = left.saturating_sub(r.chars + SEP);
                    last = Some((s.line, r));
                }
            }
            for (k, s) in self.firsts.iter().take(self.samples_max).enumerate() {
                let limit = left.saturating_sub(SEP);
                if let Some(r) = try_render(&s.item, Caps::default(), limit) {
                    left = left.saturating_sub(r.chars + SEP);
                    firsts.push((s.line, r));
                    continue;
                }
                if k == 0 {
                    if let Some(r) = render_fitting(&s.item, limit) {
                        firsts.push((s.line, r));
                    }
                }
                break;
            }
        }
        firsts.extend(last);
        let mut cuts = CutStats::default();
        for (_, r) in &firsts {
            cuts.strings += r.cuts.strings;
            cuts.containers += r.cuts.containers;
        }
        let whole_first = firsts.first().is_some_and(|(_, r)| !r.cuts.is_cut());
        Picked { shown: firsts, cuts, whole_first }
    }

    fn build(&self, level: InvLevel, max_class: Class, keys: &(String, usize), picked: &Picked) -> String {
        let mut h = String::with_capacity(1024 + keys.0.len());
        h.push_str("{\"header\":{");
        let mut first = true;
        let mut field = |h: &mut String, key: &str, value: &J| {
            if !first {
                h.push(',');
            }
            first = false;
            h.push_str(&json_string(key));
            h.push(':');
            write_j(h, value);
        };
        for f in self.fields.iter().filter(|f| f.class <= max_class) {
            field(&mut h, f.key, &f.value);
        }
        field(&mut h, "sample_policy", &J::str(self.sample_policy.clone()));
        field(&mut h, "samples_shown", &J::int(picked.shown.len() as u64));
        if self.with_lines {
            let lines = picked.shown.iter().map(|(l, _)| J::int(*l)).collect();
            field(&mut h, "sample_lines", &J::Arr(lines));
        }
        if picked.cuts.is_cut() {
            let mut cuts = vec![
                ("strings_shortened".into(), J::int(picked.cuts.strings)),
                ("containers_cut".into(), J::int(picked.cuts.containers)),
            ];
            if picked.cuts.containers > 0 {
                let how =
                    "a cut array ends with \"…[N more items cut]\", a cut object with \"…\":\"[N more keys cut]\"";
                cuts.push(("containers_note".into(), J::str(how)));
            }
            let cuts = J::Obj(cuts);
            field(&mut h, "sample_cuts", &cuts);
        }
        let total = self.inventory.key_count();
        field(&mut h, "key_count", &J::int(total as u64));
        let note = match level {
            InvLevel::Full => None,
            InvLevel::Counts => Some("values are item counts; value types omitted to fit the budget".to_string()),
            InvLevel::Top(_) => Some(format!(
                "{} of {total} keys shown (item counts only) to fit the budget; read full_output for the rest",
                keys.1
            )),
        };
        if let Some(n) = note {
            field(&mut h, "keys_note", &J::Str(n));
        }
        if let Some(c) = self.inventory.capped_note() {
            field(&mut h, "keys_capped", &J::Str(c));
        }
        if let Some(masked) = self.masked(max_class, keys, picked) {
            field(&mut h, crate::text::secrets::HEADER_KEY, &masked);
        }
        if !first {
            h.push(',');
        }
        h.push_str("\"keys\":");
        h.push_str(&keys.0);
        h.push_str("},\n\"sample\":[");
        for (k, (_, r)) in picked.shown.iter().enumerate() {
            h.push_str(if k == 0 { "\n" } else { ",\n" });
            h.push_str(&r.text);
        }
        h.push_str(if picked.shown.is_empty() { "]}\n" } else { "\n]}\n" });
        h
    }
}

impl Envelope<'_, '_, '_> {
    /// `secrets_masked`: the masks in what this build prints (header
    /// strings, key inventory, samples), by rule; `"off"` when masking is
    /// off; None when nothing is masked.
    fn masked(&self, max_class: Class, keys: &(String, usize), picked: &Picked) -> Option<J> {
        use crate::text::secrets;
        if !secrets::enabled() {
            return Some(J::str("off"));
        }
        let mut counts = secrets::Counts::new();
        for f in self.fields.iter().filter(|f| f.class <= max_class) {
            if let J::Str(s) = &f.value {
                secrets::count_markers(s, &mut counts);
            }
        }
        secrets::count_markers(&keys.0, &mut counts);
        for (_, r) in &picked.shown {
            secrets::count_markers(&r.text, &mut counts);
        }
        (!counts.is_empty()).then(|| J::Obj(counts.into_iter().map(|(k, v)| (k, J::int(v))).collect()))
    }
}

/// Builds the envelope within `env.budget` characters (trailing newline
/// included). Degrades, in order: value types in the key inventory, the
/// optional header fields, keys (top-level ones kept longest), the
/// important fields; samples take what the header leaves. A level is
/// accepted when its first sample is whole or the samples got at least an
/// eighth of the budget.
pub(crate) fn assemble(env: &Envelope<'_, '_, '_>) -> String {
    let budget = env.budget;
    let total_keys = env.inventory.key_count();
    let mut levels = vec![(InvLevel::Full, Class::Optional), (InvLevel::Counts, Class::Optional)];
    let mut k = total_keys / 2;
    while k > 0 {
        levels.push((InvLevel::Top(k), Class::Important));
        k /= 2;
    }
    levels.push((InvLevel::Top(0), Class::Important));
    levels.push((InvLevel::Top(0), Class::Essential));
    let wants_samples = env.samples_max > 0 && (!env.firsts.is_empty() || env.last.is_some());
    let empty = Picked { shown: Vec::new(), cuts: CutStats::default(), whole_first: false };
    let mut smallest: Option<String> = None;
    for &(level, class) in &levels {
        // The last level with the important fields takes what fits; the
        // essential-only one is for a header that cannot fit otherwise.
        let settle = level == InvLevel::Top(0);
        let keys = env.inventory.render_keys(level);
        let bare = env.build(level, class, &keys, &empty);
        let bare_chars = count_chars(bare.as_bytes()) as usize;
        if bare_chars > budget {
            if smallest.as_ref().is_none_or(|s| s.len() > bare.len()) {
                smallest = Some(bare);
            }
            continue;
        }
        if !wants_samples {
            return bare;
        }
        // The header grows with what is picked (counts, line numbers):
        // shrink the room by any overshoot and pick again.
        let mut room = budget - bare_chars;
        for _ in 0..8 {
            let picked = env.pick(room);
            let out = env.build(level, class, &keys, &picked);
            let chars = count_chars(out.as_bytes()) as usize;
            if chars <= budget {
                if picked.whole_first || room >= budget / 8 || settle {
                    return out;
                }
                break;
            }
            room = room.saturating_sub(chars - budget);
        }
        if settle {
            return bare;
        }
    }
    smallest.unwrap_or_else(|| "{\"header\":{},\"sample\":[]}\n".to_string())
}

/// Re-parses `out` (strict JSON, big numbers allowed) and checks that it
/// fits `budget`. Returns what is wrong otherwise.
pub(crate) fn check_output(out: &str, budget: usize) -> Result<(), String> {
    let chars = str_chars(out);
    if chars > budget {
        return Err(format!("{chars} chars, over the budget of {budget}"));
    }
    let mut buf = out.as_bytes().to_vec();
    prescan(&mut buf);
    match simd_json::to_tape(&mut buf) {
        Ok(t) if matches!(t.0.first(), Some(Node::Object { .. })) => Ok(()),
        Ok(_) => Err("not an object".into()),
        Err(e) => Err(format!("does not re-parse: {e}")),
    }
}
