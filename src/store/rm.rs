//! `outbox rm ID...`: removes entries (data, then metadata) named by their
//! ids or unique id prefixes. Labels and `last` are not accepted here: a
//! removal names exactly what it removes.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::{anyhow, bail};

use super::gc::remove_entry;
use super::lookup::{self, candidates, Accept, Miss};
use super::sys::StoreDir;
use super::{path_text, shown, StoreEnv};

/// `outbox rm` options.
#[derive(Debug, Clone, Default)]
pub struct RmOptions {
    /// Entry ids, or unique prefixes of them (at least 4 hex digits).
    pub ids: Vec<String>,
}

/// Why `q` names no single entry, for `rm`.
fn miss(q: &str, m: Miss) -> String {
    match m {
        Miss::Ambiguous(names) => {
            format!(
                "'{q}' is ambiguous: {} ids start with it: {}; give more of the id",
                names.len(),
                candidates(&names)
            )
        }
        Miss::Io(e) => format!("cannot read the store: {e}"),
        Miss::Malformed | Miss::NotFound { .. } => {
            format!("no entry has the id '{}' (rm takes ids or unique id prefixes, as outbox ls lists them)", shown(q))
        }
    }
}

/// `outbox rm`: every id is resolved first; when one is unknown or
/// ambiguous nothing is removed, so a typo never leaves half a removal.
pub fn run_rm(args: &RmOptions, env: &StoreEnv) -> anyhow::Result<ExitCode> {
    let path = env.dir()?.to_path_buf();
    let store = StoreDir::open_existing(&path)?;
    // The exclusive lock, as gc takes: no run is reusing these meanwhile.
    if let Some(s) = &store {
        s.lock_exclusive();
    }
    let mut ids = Vec::new();
    let mut problems = Vec::new();
    for q in &args.ids {
        let found = match &store {
            Some(s) => lookup::resolve(s, q, Accept::IdsOnly),
            None => Err(lookup::resolve_without_store(q)),
        };
        match found {
            Ok(id) => ids.push(id),
            Err(m) => problems.push(miss(q, m)),
        }
    }
    let (Some(store), true) = (store, problems.is_empty()) else {
        for p in &problems {
            crate::say!("{p}");
        }
        bail!("nothing was removed: {} of the ids given name no single entry", problems.len().max(1));
    };
    ids.sort();
    ids.dedup();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut failed = 0;
    for id in &ids {
        // Only a regular file of ours: a planted symlink or a directory
        // under an entry name is not an entry to remove.
        let res = match store.stat(id) {
            Ok(st) if st.ours() => remove_entry(&store, id, false),
            Ok(_) => Err(io::Error::new(io::ErrorKind::InvalidData, "it is not a regular file of yours")),
            Err(e) => Err(e),
        };
        match res {
            Ok(()) => {
                if let Err(e) = writeln!(out, "removed {id}") {
                    if e.kind() != io::ErrorKind::BrokenPipe {
                        return Err(anyhow!(e).context("cannot write to stdout"));
                    }
                }
            }
            Err(e) => {
                failed += 1;
                crate::say!("cannot remove {id} from {}: {e}", path_text(&path));
            }
        }
    }
    let _ = out.flush();
    if failed > 0 {
        bail!("{failed} entr{} could not be removed (see above)", if failed == 1 { "y" } else { "ies" });
    }
    Ok(ExitCode::SUCCESS)
}
