//! Samples: the first items kept as their source text (bounded in count
//! and bytes), parsed back into tapes when the envelope is assembled, and
//! rendered compactly under a character limit, cutting long strings in the
//! middle and then long containers when a whole item does not fit.
//!
//! Invariants: a rendering never passes its limit (it stops with
//! `Overflow` as soon as it would, so a huge item costs no more than the
//! limit); the walk over a tape is a loop with an explicit stack; a
//! number the tape could not hold is printed as written (or, past f64's
//! range, as a string of its exact text, so no NaN or infinity appears).

use simd_json::tape::{Node, Tape};
use simd_json::StaticNode;

use crate::json::assemble::Sample;
use crate::json::parse::Parsed;
use crate::json::scan::{prescan, SpecialNumber, Specials};
use crate::json::value::{cut_marker, escape_into, json_string, split_keep, str_chars};

/// Smallest string cap tried when shortening a sample.
const MIN_STRING_CAP: usize = 12;

/// A sample record longer than this is kept pre-shortened.
pub const SAMPLE_RAW_BYTES: usize = 1 << 20;
/// Characters a pre-shortened sample keeps (far above any usual budget).
const PRE_SHORTEN_CHARS: usize = 256 << 10;
/// Total source bytes kept for the first samples.
pub const SAMPLE_STORE_BYTES: usize = 16 << 20;

/// A sample kept for the envelope: valid JSON text (the value as written,
/// so numbers keep their digits, or a pre-shortened rendering of a huge
/// one) and where it came from (NDJSON line, or item index).
#[derive(Debug, Clone, Default)]
pub(crate) struct Stored {
    pub at: u64,
    pub text: Vec<u8>,
}

impl Stored {
    /// Keeps `p` in `self.text` (reusing its allocation).
    pub(crate) fn keep(&mut self, at: u64, p: &Parsed<'_, '_>) {
        self.at = at;
        self.text.clear();
        if p.source.len() <= SAMPLE_RAW_BYTES {
            self.text.extend_from_slice(p.source);
            return;
        }
        let item = Item { nodes: p.nodes, base: 0, specials: p.specials };
        match render_fitting(&item, PRE_SHORTEN_CHARS) {
            Some(r) => self.text.extend_from_slice(r.text.as_bytes()),
            None => self.text.extend_from_slice(b"null"),
        }
    }
}

/// Stored samples parsed back into tapes for rendering.
pub(crate) struct Reparsed<'a> {
    at: Vec<u64>,
    tapes: Vec<Option<Tape<'a>>>,
    specials: Vec<Specials>,
}

impl<'a> Reparsed<'a> {
    /// `bufs` are copies of the stored texts (parsing rewrites them).
    pub(crate) fn new(stored: &[&Stored], bufs: &'a mut [Vec<u8>]) -> Reparsed<'a> {
        let found: Vec<Vec<SpecialNumber>> = bufs.iter_mut().map(|b| prescan(b)).collect();
        let tapes: Vec<Option<Tape<'a>>> = bufs.iter_mut().map(|b| simd_json::to_tape(b).ok()).collect();
        let specials = tapes
            .iter()
            .zip(found)
            .map(|(t, f)| t.as_ref().map_or_else(Specials::default, |t| Specials::build(&t.0, f)))
            .collect();
        Reparsed { at: stored.iter().map(|s| s.at).collect(), tapes, specials }
    }

    /// Sample `k`, unless its text failed to parse (it cannot: it was
    /// parsed once already, or rendered by this module).
    pub(crate) fn sample(&self, k: usize) -> Option<Sample<'_, 'a>> {
        let tape = self.tapes.get(k)?.as_ref()?;
        Some(Sample { item: Item { nodes: &tape.0, base: 0, specials: &self.specials[k] }, line: self.at[k] })
    }
}

// Bounded rendering of samples.

/// The output would pass its limit.
#[derive(Debug)]
pub(crate) struct Overflow;

/// A `String` that refuses to grow past `limit` characters.
pub(crate) struct Bounded {
    pub s: String,
    pub chars: usize,
    limit: usize,
}

impl Bounded {
    pub(crate) fn new(limit: usize) -> Bounded {
        Bounded { s: String::new(), chars: 0, limit }
    }

    #[inline]
    fn push(&mut self, t: &str) -> Result<(), Overflow> {
        let n = str_chars(t);
        if self.chars + n > self.limit {
            return Err(Overflow);
        }
        self.s.push_str(t);
        self.chars += n;
        Ok(())
    }

    fn push_escaped(&mut self, s: &str) -> Result<(), Overflow> {
        escape_into(s, |p| self.push(p))
    }
}

/// One value to sample: a tape slice starting at its root node.
#[derive(Clone, Copy)]
pub(crate) struct Item<'t, 'i> {
    pub nodes: &'t [Node<'i>],
    /// Index of `nodes[0]` in the whole tape (for [`Specials`]).
    pub base: usize,
    pub specials: &'t Specials,
}

/// Shortening applied to a rendering: strings longer than `string`
/// characters are cut in the middle; containers show at most `container`
/// elements.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Caps {
    pub string: Option<usize>,
    pub container: Option<usize>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CutStats {
    pub strings: u64,
    pub containers: u64,
}

impl CutStats {
    pub(crate) fn is_cut(&self) -> bool {
        self.strings + self.containers > 0
    }
}

struct RFrame {
    object: bool,
    remaining: usize,
    omitted: usize,
    end: usize,
    first: bool,
}

/// A string as a sample shows it: credentials masked (see
/// `text::secrets`), then shortened to `cap` when longer, then escaped.
/// `key` is the object key the string is the value of: a random-looking
/// value of a secret-named key (`"password": "…"`) is masked like the
/// same assignment in text.
fn render_str(
    out: &mut Bounded,
    s: &str,
    key: Option<&str>,
    cap: Option<usize>,
    stats: &mut CutStats,
) -> Result<(), Overflow> {
    let masked = crate::text::secrets::mask_value(key, s);
    let s: &str = &masked;
    out.push("\"")?;
    match cap {
        Some(cap) if s.len() > cap => {
            let n = str_chars(s);
            let marker = cut_marker(n.saturating_sub(cap));
            // Cut only when it makes the string shorter.
            if n > cap + str_chars(&marker) {
                let (head, tail) = split_keep(s, cap.div_ceil(2), cap / 2);
                out.push_escaped(head)?;
                out.push(&marker)?;
                out.push_escaped(tail)?;
                stats.strings += 1;
            } else {
                out.push_escaped(s)?;
            }
        }
        _ => out.push_escaped(s)?,
    }
    out.push("\"")
}

fn render_static(out: &mut Bounded, v: &StaticNode, special: Option<&str>) -> Result<(), Overflow> {
    if let Some(raw) = special {
        // Past f64's range (1e400) the literal is grammatical JSON, but
        // common parsers (serde_json, Go) reject the whole document and
        // JavaScript reads Infinity: such a number is shown as a string of
        // its exact text instead. Big integers and long floats stay numbers.
        let overflows = raw.parse::<f64>().is_ok_and(|v| v.is_infinite());
        if overflows {
            return out.push(&json_string(raw));
        }
        return out.push(raw);
    }
    #[allow(unreachable_patterns)]
    match *v {
        StaticNode::Null => out.push("null"),
        StaticNode::Bool(b) => out.push(if b { "true" } else { "false" }),
        StaticNode::I64(x) => out.push(&x.to_string()),
        StaticNode::U64(x) => out.push(&x.to_string()),
        // serde_json prints finite floats with ryu (shortest round trip);
        // a non-finite value cannot come from valid JSON, and is never
        // printed as NaN/inf.
        StaticNode::F64(x) if x.is_finite() => out.push(&serde_json::to_string(&x).unwrap_or_else(|_| "null".into())),
        _ => out.push("null"),
    }
}

/// Renders `item` compactly into `out`, applying `caps`; stops with
/// `Overflow` as soon as `out` would pass its limit, so a huge item costs
/// no more than the limit.
pub(crate) fn render(item: &Item<'_, '_>, caps: Caps, out: &mut Bounded) -> Result<CutStats, Overflow> {
    let nodes = item.nodes;
    let mut stats = CutStats::default();
    let mut stack: Vec<RFrame> = Vec::new();
    let mut i = 0;
    // The key of the value about to be rendered, when it is an object's.
    let mut key: Option<&str> = None;
    loop {
        let Some(node) = nodes.get(i) else { return Ok(stats) };
        match *node {
            Node::String(s) => {
                render_str(out, s, key.take(), caps.string, &mut stats)?;
                i += 1;
            }
            Node::Static(ref v) => {
                key = None;
                render_static(out, v, item.specials.get(item.base + i))?;
                i += 1;
            }
            Node::Object { len, count } | Node::Array { len, count } => {
                key = None;
                let object = matches!(node, Node::Object { .. });
                out.push(if object { "{" } else { "[" })?;
                let shown = caps.container.map_or(len, |c| c.min(len));
                stack.push(RFrame { object, remaining: shown, omitted: len - shown, end: i + count + 1, first: true });
                i += 1;
            }
        }
        // Close finished containers and position on the next value.
        loop {
            let Some(top) = stack.last_mut() else { return Ok(stats) };
            if top.remaining == 0 {
                if top.omitted > 0 {
                    if !top.first {
                        out.push(",")?;
                    }
                    stats.containers += 1;
                    if top.object {
                        out.push(&format!("\"…\":\"[{} more keys cut]\"", top.omitted))?;
                    } else {
                        out.push(&format!("\"…[{} more items cut]\"", top.omitted))?;
                    }
                }
                out.push(if top.object { "}" } else { "]" })?;
                i = top.end;
                stack.pop();
                continue;
            }
            top.remaining -= 1;
            if !top.first {
                out.push(",")?;
            }
            top.first = false;
            if top.object {
                let name = match nodes.get(i) {
                    Some(Node::String(k)) => *k,
                    _ => "",
                };
                render_str(out, name, None, caps.string, &mut stats)?;
                out.push(":")?;
                key = Some(name);
                i += 1;
            }
            break;
        }
    }
}

/// A rendered sample.
#[derive(Debug, Clone)]
pub(crate) struct Rendered {
    pub text: String,
    pub chars: usize,
    pub cuts: CutStats,
}

pub(crate) fn try_render(item: &Item<'_, '_>, caps: Caps, limit: usize) -> Option<Rendered> {
    let mut b = Bounded::new(limit);
    let cuts = render(item, caps, &mut b).ok()?;
    Some(Rendered { chars: b.chars, text: b.s, cuts })
}

/// Largest `x` in `lo..=hi` for which `f` succeeds (assuming larger `x`
/// only fails more), with its result.
fn search<R>(lo: usize, hi: usize, f: impl Fn(usize) -> Option<R>) -> Option<R> {
    let mut best = f(lo)?;
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        match f(mid) {
            Some(r) => {
                best = r;
                lo = mid;
            }
            None => hi = mid - 1,
        }
    }
    Some(best)
}

/// `item` within `room` characters: whole when it fits; else with the
/// longest string cap that fits; else with strings at the minimum cap and
/// the most container elements that fit. `None` when nothing fits.
pub(crate) fn render_fitting(item: &Item<'_, '_>, room: usize) -> Option<Rendered> {
    if let Some(r) = try_render(item, Caps::default(), room) {
        return Some(r);
    }
    let strings = |cap| try_render(item, Caps { string: Some(cap), container: None }, room);
    if let Some(r) = search(MIN_STRING_CAP, room.max(MIN_STRING_CAP), strings) {
        return Some(r);
    }
    let containers = |cap| try_render(item, Caps { string: Some(MIN_STRING_CAP), container: Some(cap) }, room);
    search(0, room / 2, containers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_cuts_strings_then_containers() {
        let doc = format!(r#"{{"big":"{}","list":[{}]}}"#, "長".repeat(5000), vec!["1"; 3000].join(","));
        let mut b = doc.into_bytes();
        let tape = simd_json::to_tape(&mut b).unwrap();
        let sp = Specials::default();
        let item = Item { nodes: &tape.0, base: 0, specials: &sp };
        let r = render_fitting(&item, 800).expect("fits somehow");
        assert!(r.chars <= 800);
        assert!(r.cuts.strings == 1 && r.cuts.containers >= 1, "{:?}", r.cuts);
        assert!(r.text.contains("chars cut]"));
        assert!(r.text.contains("more items cut]"));
        serde_json::from_str::<serde_json::Value>(&r.text).expect("valid");
    }
}
