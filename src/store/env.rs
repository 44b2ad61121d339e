//! The store's settings, taken from the process environment by the caller,
//! once: the store itself never reads environment variables, so one run
//! (and one test) sees one set of settings however many times it opens the
//! store.
//!
//! Variables, all optional: `OUTBOX_DIR` (else `$XDG_CACHE_HOME/outbox`,
//! else `~/.cache/outbox`), `OUTBOX_TTL_SECONDS`, `OUTBOX_MAX_STORE_BYTES`,
//! `OUTBOX_MIN_FREE_BYTES`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{DEFAULT_MAX_STORE_BYTES, DEFAULT_TTL_SECONDS};

/// Where the store is and how it is kept, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreEnv {
    /// The store directory (absolute), or why there is none.
    pub dir: Result<PathBuf, String>,
    /// TTL given to new entries.
    pub ttl_seconds: u64,
    /// `OUTBOX_MAX_STORE_BYTES`: the default cap when unset, `Ok(None)`
    /// for `off`; `Err` when it is not a size.
    pub max_bytes: Result<Option<u64>, String>,
    /// `OUTBOX_MIN_FREE_BYTES`: the free space a spill leaves; `Ok(None)`
    /// for the default, max(1 GiB, 5% of the filesystem).
    pub min_free_bytes: Result<Option<u64>, String>,
}

impl Default for StoreEnv {
    /// No directory: a session built from `Default` options keeps no copy
    /// and says so, rather than writing somewhere nobody asked for.
    fn default() -> StoreEnv {
        StoreEnv {
            dir: Err("no store directory was given: pass --dir or set OUTBOX_DIR".into()),
            ttl_seconds: DEFAULT_TTL_SECONDS,
            max_bytes: Ok(Some(DEFAULT_MAX_STORE_BYTES)),
            min_free_bytes: Ok(None),
        }
    }
}

impl StoreEnv {
    /// Settings for `--dir explicit` (if given) and the variables that
    /// `var` returns (the binary passes `std::env::var_os`); `cwd` makes a
    /// relative directory absolute.
    pub fn from_vars(explicit: Option<&Path>, var: impl Fn(&str) -> Option<OsString>, cwd: Option<&Path>) -> StoreEnv {
        let set = |k: &str| var(k).filter(|v| !v.is_empty());
        let dir = if let Some(d) = explicit {
            Ok(d.to_path_buf())
        } else if let Some(d) = set("OUTBOX_DIR") {
            Ok(PathBuf::from(d))
        } else if let Some(x) = set("XDG_CACHE_HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
            Ok(x.join("outbox"))
        } else if let Some(h) = set("HOME") {
            Ok(PathBuf::from(h).join(".cache").join("outbox"))
        } else {
            Err("no store directory: set OUTBOX_DIR or HOME, or pass --dir".to_string())
        };
        let dir = dir.and_then(|d| match (d.is_absolute(), cwd) {
            (true, _) => Ok(d),
            (false, Some(cwd)) => Ok(cwd.join(d)),
            (false, None) => Err(format!(
                "the store directory {} is relative and the current directory is unknown; give an absolute path",
                d.display()
            )),
        });
        let ttl_seconds = var("OUTBOX_TTL_SECONDS")
            .and_then(|v| v.to_str().and_then(|v| v.trim().parse().ok()))
            .unwrap_or(DEFAULT_TTL_SECONDS);
        let max_bytes = match size_var(&var, "OUTBOX_MAX_STORE_BYTES", true) {
            Ok(None) => Ok(Some(DEFAULT_MAX_STORE_BYTES)),
            Ok(Some(Some(n))) => Ok(Some(n)),
            Ok(Some(None)) => Ok(None),
            Err(e) => Err(e),
        };
        let min_free_bytes = size_var(&var, "OUTBOX_MIN_FREE_BYTES", false).map(Option::flatten);
        StoreEnv { dir, ttl_seconds, max_bytes, min_free_bytes }
    }

    /// The cap `outbox gc` enforces, or why the variable is unusable.
    pub fn cap(&self) -> Result<Option<u64>, String> {
        self.max_bytes.clone().map_err(|e| format!("{e}; unset it, set it to a size such as 500M, or to off"))
    }

    /// The directory, or an error that says how to name one.
    pub fn dir(&self) -> std::io::Result<&Path> {
        self.dir.as_deref().map_err(|e| std::io::Error::new(std::io::ErrorKind::NotFound, e.clone()))
    }
}

/// A size variable: `Ok(None)` when unset or empty, `Ok(Some(None))` for
/// `off` (when `can_be_off`), `Ok(Some(Some(n)))` for a size.
#[allow(clippy::type_complexity)]
fn size_var(
    var: &impl Fn(&str) -> Option<OsString>,
    name: &str,
    can_be_off: bool,
) -> Result<Option<Option<u64>>, String> {
    let Some(v) = var(name) else { return Ok(None) };
    let Some(v) = v.to_str().map(str::trim) else {
        return Err(format!("{name} is not a size: use a number with an optional K, M or G suffix"));
    };
    if v.is_empty() {
        return Ok(None);
    }
    if can_be_off && (v.eq_ignore_ascii_case("off") || v.eq_ignore_ascii_case("none")) {
        return Ok(Some(None));
    }
    crate::text::size::parse_size(v).map(|n| Some(Some(n))).map_err(|e| format!("{name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)], explicit: Option<&str>) -> StoreEnv {
        let vars: Vec<(String, OsString)> = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        let var = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        StoreEnv::from_vars(explicit.map(Path::new), var, Some(Path::new("/work")))
    }

    #[test]
    fn the_directory_comes_from_the_flag_then_the_variables() {
        let all = [("OUTBOX_DIR", "/o"), ("XDG_CACHE_HOME", "/x"), ("HOME", "/h")];
        assert_eq!(env(&all, Some("d")).dir, Ok(PathBuf::from("/work/d")));
        assert_eq!(env(&all, None).dir, Ok(PathBuf::from("/o")));
        assert_eq!(env(&all[1..], None).dir, Ok(PathBuf::from("/x/outbox")));
        assert_eq!(env(&[("XDG_CACHE_HOME", "rel"), ("HOME", "/h")], None).dir, Ok(PathBuf::from("/h/.cache/outbox")));
        assert!(env(&[("OUTBOX_DIR", "")], None).dir.is_err());
    }

    #[test]
    fn ttl_and_cap_are_read_once_with_defaults() {
        let e = env(&[], None);
        assert_eq!((e.ttl_seconds, e.max_bytes, e.min_free_bytes), (DEFAULT_TTL_SECONDS, Ok(Some(2 << 30)), Ok(None)));
        assert_eq!(env(&[("OUTBOX_MAX_STORE_BYTES", "off")], None).max_bytes, Ok(None));
        assert_eq!(env(&[("OUTBOX_MIN_FREE_BYTES", "3G")], None).min_free_bytes, Ok(Some(3 << 30)));
        let e = env(&[("OUTBOX_TTL_SECONDS", " 60 "), ("OUTBOX_MAX_STORE_BYTES", "2K")], None);
        assert_eq!((e.ttl_seconds, e.max_bytes), (60, Ok(Some(2048))));
        assert!(env(&[("OUTBOX_MAX_STORE_BYTES", "lots")], None).max_bytes.is_err());
        assert_eq!(env(&[("OUTBOX_TTL_SECONDS", "soon")], None).ttl_seconds, DEFAULT_TTL_SECONDS);
    }
}
