//! Which entry a name on the command line means: an exact id, a unique
//! prefix of one (as git abbreviates hashes), `last` (the newest entry), or
//! a label (its newest entry). An id or a prefix wins over a label.

use std::io;

use super::ls::{list_entries, Listed};
use super::meta::{read_meta_at, MetaState};
use super::sys::StoreDir;
use super::{is_entry_name, is_lower_hex, split_id};

/// Fewest hex digits accepted as an id prefix (as git's minimum).
pub const MIN_PREFIX_HEX: usize = 4;
/// Candidates named in an "ambiguous" error.
const LIST_CANDIDATES: usize = 10;

/// Why a name does not pick one entry.
#[derive(Debug)]
pub(crate) enum Miss {
    /// It cannot name an entry at all (a path, a hidden name, empty).
    Malformed,
    /// Nothing matches: the entry is gone, or never was.
    NotFound {
        id_like: bool,
    },
    /// More than one id starts with it.
    Ambiguous(Vec<String>),
    Io(io::Error),
}

/// What a lookup accepts besides ids and id prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Accept {
    IdsOnly,
    /// Also `last` and labels (`outbox show`).
    IdsLastLabels,
}

/// Whether `q` looks like `{label}-{hex}` with enough digits to be an id
/// or a prefix of one.
fn id_like(q: &str) -> Option<(&str, &str)> {
    let (label, hex) = q.rsplit_once('-')?;
    (!label.is_empty() && hex.len() >= MIN_PREFIX_HEX && is_lower_hex(hex)).then_some((label, hex))
}

/// Whether `q` is in the alphabet of ids and labels, with no leading dot
/// (its length is not limited: a full digest is longer than any name).
fn plausible(q: &str) -> bool {
    !q.is_empty()
        && !q.starts_with('.')
        && q.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Resolves `q` to the name of one entry in `dir`.
pub(crate) fn resolve(dir: &StoreDir, q: &str, accept: Accept) -> Result<String, Miss> {
    let labels = accept == Accept::IdsLastLabels;
    if labels && q == "last" {
        return newest(dir, |_| true).and_then(|n| n.ok_or(Miss::NotFound { id_like: false }));
    }
    // Only names in the label alphabet: `../x`, `/etc/passwd`, `.tmp-…` and
    // the empty string never reach the directory.
    if !plausible(q) {
        return Err(Miss::Malformed);
    }
    let names: Vec<String> = dir.names().map_err(Miss::Io)?.into_iter().filter(|n| is_entry_name(n)).collect();
    if names.iter().any(|n| n == q) {
        return Ok(q.to_string());
    }
    let is_id = id_like(q);
    if let Some((label, want)) = is_id {
        let mut hits: Vec<String> = names
            .iter()
            .filter(|n| {
                let Some((l, hex)) = split_id(n) else { return false };
                l == label
                    && (hex.starts_with(want)
                        // Longer than the name: the full digest decides.
                        || (want.starts_with(hex)
                            && matches!(read_meta_at(dir, n), MetaState::Ok(m) if m.digest.starts_with(want))))
            })
            .cloned()
            .collect();
        match hits.len() {
            0 => {}
            1 => return Ok(hits.remove(0)),
            _ => {
                hits.sort();
                return Err(Miss::Ambiguous(hits));
            }
        }
    }
    if labels {
        if let Some(n) = newest(dir, |e| split_id(&e.id).is_some_and(|(l, _)| l == q))? {
            return Ok(n);
        }
    }
    Err(Miss::NotFound { id_like: is_id.is_some() })
}

/// Why `q` picks nothing when there is no store at all.
pub(crate) fn resolve_without_store(q: &str) -> Miss {
    if q != "last" && !plausible(q) {
        Miss::Malformed
    } else {
        Miss::NotFound { id_like: id_like(q).is_some() }
    }
}

/// The newest entry (regular files of ours) that `keep` accepts.
fn newest(dir: &StoreDir, keep: impl Fn(&Listed) -> bool) -> Result<Option<String>, Miss> {
    Ok(list_entries(dir).map_err(Miss::Io)?.into_iter().find(|e| keep(e)).map(|e| e.id))
}

/// "a, b, c" (at most [`LIST_CANDIDATES`], then how many more).
pub(crate) fn candidates(names: &[String]) -> String {
    let mut s = names.iter().take(LIST_CANDIDATES).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > LIST_CANDIDATES {
        s.push_str(&format!(" and {} more", names.len() - LIST_CANDIDATES));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::now_secs;
    use crate::store::testutil::{put, store};

    #[test]
    fn ids_prefixes_last_and_labels() {
        let (_tmp, store) = store();
        let now = now_secs();
        let a = put(&store, "build", b"one", now - 20, 1000);
        let b = put(&store, "build", b"two", now - 10, 1000);
        let c = put(&store, "test", b"three", now - 5, 1000);
        let dir = store.store_dir();
        let r = |q: &str| resolve(dir, q, Accept::IdsLastLabels);
        assert_eq!(r(&a).unwrap(), a);
        assert_eq!(r(&a[..a.len() - 5]).unwrap(), a);
        assert_eq!(r("last").unwrap(), c);
        assert_eq!(r("build").unwrap(), b, "a label means its newest entry");
        assert!(matches!(r("build-zz"), Err(Miss::NotFound { id_like: false })));
        assert!(matches!(r("build-ffff"), Err(Miss::NotFound { id_like: true })));
        assert!(matches!(r("../x"), Err(Miss::Malformed)));
        assert!(matches!(resolve(dir, "last", Accept::IdsOnly), Err(Miss::NotFound { .. })));
        assert!(matches!(resolve(dir, "build", Accept::IdsOnly), Err(Miss::NotFound { .. })));
        // The full digest is also a name for it.
        let full = format!("build-{}", store.read_meta(&a).unwrap().digest);
        assert_eq!(r(&full).unwrap(), a);
    }
}
