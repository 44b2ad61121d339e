//! Duplicate keys and the paths that name them (`$.data.items[3].user`).
//!
//! Invariants: linear in the members of each object (pairwise when few,
//! by sorting when many); the path finder descends iteratively; at most
//! [`EXAMPLES`] paths are kept, each shortened to [`PATH_CHARS`].

use simd_json::tape::Node;

use crate::json::parse::extent;
use crate::json::value::{json_string, shorten_text, Class, Field, J};

/// Duplicate-key and invalid-line examples kept for the header.
pub const EXAMPLES: usize = 5;

/// Longest key name shown in an inventory path before it is shortened.
const KEY_NAME_CHARS: usize = 80;
/// Longest path shown in the header before it is shortened.
pub const PATH_CHARS: usize = 200;

/// Calls `found(object_node, key)` for every repeated key of every object
/// in `nodes` (each repeat once). Linear: each object's members are
/// checked pairwise when few, by sorting when many.
pub(crate) fn scan_duplicates<'i>(nodes: &[Node<'i>], scratch: &mut Vec<usize>, mut found: impl FnMut(usize, &'i str)) {
    for (p, node) in nodes.iter().enumerate() {
        if matches!(node, Node::Object { len, .. } if *len >= 2) {
            object_duplicates(nodes, p, scratch, &mut found);
        }
    }
}

/// The repeated keys of the one object at `p`.
pub(crate) fn object_duplicates<'i>(
    nodes: &[Node<'i>],
    p: usize,
    scratch: &mut Vec<usize>,
    mut found: impl FnMut(usize, &'i str),
) {
    let Some(Node::Object { len, .. }) = nodes.get(p) else { return };
    scratch.clear();
    let mut j = p + 1;
    for _ in 0..*len {
        if j >= nodes.len() {
            break;
        }
        scratch.push(j);
        j += 1 + extent(nodes, j + 1);
    }
    let key = |k: usize| match nodes.get(k) {
        Some(Node::String(s)) => *s,
        _ => "",
    };
    if scratch.len() <= 8 {
        for a in 1..scratch.len() {
            let ka = key(scratch[a]);
            if scratch[..a].iter().any(|&b| key(b) == ka) {
                found(p, ka);
            }
        }
    } else {
        scratch.sort_by(|&a, &b| key(a).cmp(key(b)).then(a.cmp(&b)));
        for w in 1..scratch.len() {
            if key(scratch[w]) == key(scratch[w - 1]) {
                found(p, key(scratch[w]));
            }
        }
    }
}

/// `.key`, or `["odd key"]` when the key is empty or holds characters
/// that would make a path ambiguous.
pub(crate) fn key_segment(name: &str) -> String {
    let name = shorten_text(name, KEY_NAME_CHARS);
    let simple = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '$' | '@'));
    if simple {
        format!(".{name}")
    } else {
        format!("[{}]", json_string(&name))
    }
}

/// Appends one key to an inventory path (no leading dot at the start).
pub(crate) fn push_key_segment(out: &mut String, name: &str) {
    let seg = key_segment(name);
    out.push_str(if out.is_empty() { seg.strip_prefix('.').unwrap_or(&seg) } else { &seg });
}

/// `root` followed by the path of the node at `target`, e.g.
/// `$.data.items[3].user`; found by descending from `nodes[0]`
/// (iteratively; used for a handful of reports).
pub(crate) fn path_to(nodes: &[Node<'_>], target: usize, root: &str) -> String {
    let mut out = String::from(root);
    let mut cur = 0;
    while cur < target {
        let (len, object) = match nodes.get(cur) {
            Some(Node::Object { len, .. }) => (*len, true),
            Some(Node::Array { len, .. }) => (*len, false),
            _ => break,
        };
        let mut j = cur + 1;
        let mut descended = false;
        for k in 0..len {
            let v = if object { j + 1 } else { j };
            let end = v + extent(nodes, v);
            if target >= j && target < end {
                match nodes.get(j) {
                    Some(Node::String(name)) if object => out.push_str(&key_segment(name)),
                    _ => out.push_str(&format!("[{k}]")),
                }
                cur = v;
                descended = true;
                break;
            }
            j = end;
        }
        if !descended {
            break;
        }
    }
    shorten_text(&out, PATH_CHARS)
}

/// Duplicate keys found so far: a count and the first few paths.
#[derive(Debug, Clone, Default)]
pub(crate) struct Dups {
    pub count: u64,
    pub first: Vec<String>,
}

impl Dups {
    /// Records a repeat of `key` in the object at `obj`; `root` names the
    /// value `nodes` starts at (built only for the examples kept).
    pub(crate) fn report(&mut self, nodes: &[Node<'_>], obj: usize, key: &str, root: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.len() < EXAMPLES {
            let p = format!("{}{}", path_to(nodes, obj, &root()), key_segment(key));
            self.first.push(shorten_text(&p, PATH_CHARS));
        }
    }

    /// The header field, when there is anything to say.
    pub(crate) fn field(&self) -> Option<Field> {
        (self.count > 0).then(|| {
            let first = self.first.iter().map(|s| J::Str(s.clone())).collect();
            let v = J::Obj(vec![("count".into(), J::int(self.count)), ("first".into(), J::Arr(first))]);
            Field::new("duplicate_keys", v, Class::Important)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_and_paths() {
        let doc = r#"{"a":{"x":1,"x":2},"b":[0,{"k":1,"j":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"k":10}]}"#;
        let mut b = doc.as_bytes().to_vec();
        let tape = simd_json::to_tape(&mut b).unwrap();
        let mut found = Vec::new();
        scan_duplicates(&tape.0, &mut Vec::new(), |obj, key| {
            found.push(format!("{}{}", path_to(&tape.0, obj, "$"), key_segment(key)))
        });
        assert_eq!(found, ["$.a.x", "$.b[1].k"]);
    }
}
