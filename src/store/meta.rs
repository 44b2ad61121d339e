//! Metadata beside each original (`{id}.meta`, JSON): what it holds, and
//! reading it back with the checks that it is ours and describes `id`.

use std::fs::File;
use std::io::{self, Read};

use serde::{Deserialize, Serialize};

use super::sys::{check_ours, StoreDir};
use super::{MAX_META_BYTES, META_SUFFIX};
/// Metadata kept beside each original, as JSON in `{id}.meta`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Meta {
    pub id: String,
    pub label: String,
    /// How the envelope was made: authoritative.
    pub strategy: String,
    /// Seconds since the Unix epoch.
    pub created: u64,
    pub ttl_seconds: u64,
    pub bytes: u64,
    pub chars: u64,
    pub lines: u64,
    /// False when the run was interrupted: the entry holds what arrived.
    pub complete: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub exit_status: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Full BLAKE3 digest, hex.
    pub digest: String,
}

impl Meta {
    /// When the entry expires (seconds since the epoch): its own creation
    /// time plus its own TTL, so a later `OUTBOX_TTL_SECONDS` never changes
    /// the fate of entries already made.
    pub fn expires_at(&self) -> u64 {
        self.created.saturating_add(self.ttl_seconds)
    }
}

/// Metadata as found on disk.
#[derive(Debug, Clone)]
pub(crate) enum MetaState {
    Ok(Meta),
    Missing,
    /// Present but not usable: why.
    Invalid(String),
}

pub(crate) fn read_meta_at(dir: &StoreDir, id: &str) -> MetaState {
    match dir.open_read(&format!("{id}{META_SUFFIX}")) {
        Ok((file, _)) => meta_from_file(file, id),
        Err(e) if e.kind() == io::ErrorKind::NotFound => MetaState::Missing,
        Err(e) => MetaState::Invalid(e.to_string()),
    }
}

/// Parses metadata from an opened file and checks that it describes `id`.
pub(crate) fn meta_from_file(file: File, id: &str) -> MetaState {
    let md = match check_ours(&file) {
        Ok(md) => md,
        Err(e) => return MetaState::Invalid(e.to_string()),
    };
    if md.len() > MAX_META_BYTES {
        return MetaState::Invalid(format!("it is {} bytes, far more than metadata ever is", md.len()));
    }
    let mut buf = Vec::with_capacity(md.len() as usize);
    if let Err(e) = file.take(MAX_META_BYTES).read_to_end(&mut buf) {
        return MetaState::Invalid(e.to_string());
    }
    let meta: Meta = match serde_json::from_slice(&buf) {
        Ok(m) => m,
        Err(e) => return MetaState::Invalid(format!("it is not valid metadata: {e}")),
    };
    let hex = id.rsplit_once('-').map_or("", |(_, h)| h);
    if meta.id != id || !meta.digest.starts_with(hex) {
        return MetaState::Invalid("it describes other content".into());
    }
    MetaState::Ok(meta)
}
