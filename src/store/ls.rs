//! `outbox ls`: the entries, newest first, as a table or a JSON array.

use std::fmt::Write as _;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::anyhow;
use serde::Serialize;

use super::meta::{read_meta_at, MetaState};
use super::sys::{Stat, StoreDir};
use super::{
    format_age, format_size, is_entry_name, now_secs, path_text, shown, StoreEnv, DEFAULT_TTL_SECONDS, META_SUFFIX,
};

/// `outbox ls` options.
#[derive(Debug, Clone, Default)]
pub struct LsOptions {
    /// Print a JSON array (one object per entry, newest first) for scripts.
    pub json: bool,
}

/// One entry as found in the store.
pub(crate) struct Listed {
    pub(crate) id: String,
    pub(crate) stat: Stat,
    pub(crate) meta: MetaState,
    pub(crate) meta_bytes: u64,
}

impl Listed {
    /// When it was made: the metadata's `created` (refreshed when identical
    /// content is stored again), else the file's mtime.
    pub(crate) fn born(&self) -> u64 {
        match &self.meta {
            MetaState::Ok(m) => m.created,
            _ => self.stat.mtime.max(0) as u64,
        }
    }

    pub(crate) fn expires_at(&self) -> u64 {
        match &self.meta {
            MetaState::Ok(m) => m.expires_at(),
            _ => self.born().saturating_add(DEFAULT_TTL_SECONDS),
        }
    }

    /// Oldest first; within one second, by mtime, then by name.
    pub(crate) fn age_key(&self) -> (u64, i128, &str) {
        (self.born(), self.stat.mtime_ns, &self.id)
    }
}

/// Entries (regular files of ours with entry names), newest first.
pub(crate) fn list_entries(dir: &StoreDir) -> io::Result<Vec<Listed>> {
    let mut out = Vec::new();
    for name in dir.names()? {
        if !is_entry_name(&name) {
            continue;
        }
        let Ok(stat) = dir.stat(&name) else { continue };
        if !stat.ours() {
            continue;
        }
        let meta = read_meta_at(dir, &name);
        let meta_bytes = dir.stat(&format!("{name}{META_SUFFIX}")).ok().filter(Stat::ours).map_or(0, |s| s.size);
        out.push(Listed { id: name, stat, meta, meta_bytes });
    }
    out.sort_by(|a, b| b.age_key().cmp(&a.age_key()));
    Ok(out)
}

/// `outbox ls --json`: one object per entry. Figures that only the
/// metadata knows are null when it is missing or unusable.
#[derive(Serialize)]
struct LsJson<'a> {
    id: &'a str,
    path: String,
    label: &'a str,
    strategy: Option<&'a str>,
    /// Seconds since the epoch.
    created: u64,
    age_seconds: u64,
    ttl_seconds: Option<u64>,
    expires: u64,
    expired: bool,
    /// Size on disk.
    bytes: u64,
    chars: Option<u64>,
    lines: Option<u64>,
    complete: Option<bool>,
    interrupted_by: Option<&'a str>,
    /// Masked (`text::secrets`): a command line may hold a credential.
    command: Option<std::borrow::Cow<'a, str>>,
    exit_status: Option<i32>,
    digest: Option<&'a str>,
    /// "ok", "missing" or "invalid".
    metadata: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata_problem: Option<&'a str>,
}

fn ls_json<'a>(e: &'a Listed, dir: &Path, now: u64) -> LsJson<'a> {
    let m = match &e.meta {
        MetaState::Ok(m) => Some(m),
        _ => None,
    };
    let label = m.map_or_else(|| e.id.rsplit_once('-').map_or("", |(l, _)| l), |m| m.label.as_str());
    LsJson {
        id: &e.id,
        path: dir.join(&e.id).display().to_string(),
        label,
        strategy: m.map(|m| m.strategy.as_str()),
        created: e.born(),
        age_seconds: now.saturating_sub(e.born()),
        ttl_seconds: m.map(|m| m.ttl_seconds),
        expires: e.expires_at(),
        expired: e.expires_at() < now,
        bytes: e.stat.size,
        chars: m.map(|m| m.chars),
        lines: m.map(|m| m.lines),
        complete: m.map(|m| m.complete),
        interrupted_by: m.and_then(|m| m.interrupted_by.as_deref()),
        command: m.and_then(|m| m.command.as_deref()).map(crate::text::secrets::mask_str),
        exit_status: m.and_then(|m| m.exit_status),
        digest: m.map(|m| m.digest.as_str()),
        metadata: match e.meta {
            MetaState::Ok(_) => "ok",
            MetaState::Missing => "missing",
            MetaState::Invalid(_) => "invalid",
        },
        metadata_problem: match &e.meta {
            MetaState::Invalid(why) => Some(why),
            _ => None,
        },
    }
}

fn write_ls_table(out: &mut impl Write, entries: &[Listed], dir: &Path, now: u64) -> io::Result<()> {
    let rows: Vec<[String; 8]> = entries
        .iter()
        .map(|e| {
            let m = match &e.meta {
                MetaState::Ok(m) => Some(m),
                _ => None,
            };
            let expires = e.expires_at();
            [
                e.id.clone(),
                format_age(now.saturating_sub(e.born())),
                if expires < now { "expired".into() } else { format!("in {}", format_age(expires - now)) },
                format_size(e.stat.size),
                m.map_or_else(|| "?".into(), |m| m.lines.to_string()),
                m.map_or_else(|| e.id.rsplit_once('-').map_or("", |(l, _)| l).to_string(), |m| shown(&m.label)),
                match &e.meta {
                    MetaState::Ok(m) => shown(&m.strategy),
                    MetaState::Missing => "(no metadata)".into(),
                    MetaState::Invalid(_) => "(bad metadata)".into(),
                },
                match m {
                    Some(m) if m.complete => "yes".into(),
                    Some(_) => "no".into(),
                    None => "?".into(),
                },
            ]
        })
        .collect();
    let head = ["ID", "AGE", "EXPIRES", "SIZE", "LINES", "LABEL", "STRATEGY", "COMPLETE"];
    let mut width = head.map(|h| h.chars().count());
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut line = String::new();
    for r in std::iter::once(head.map(String::from)).chain(rows) {
        line.clear();
        for (i, (c, w)) in r.iter().zip(width).enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                // Numbers read best right-aligned.
                let right = matches!(i, 1 | 3 | 4);
                let pad = " ".repeat(w - c.chars().count());
                if right {
                    let _ = write!(line, "{pad}{c}  ");
                } else {
                    let _ = write!(line, "{c}{pad}  ");
                }
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    let total: u64 = entries.iter().map(|e| e.stat.size + e.meta_bytes).sum();
    writeln!(
        out,
        "{} entr{}, {} in {}",
        entries.len(),
        if entries.len() == 1 { "y" } else { "ies" },
        format_size(total),
        path_text(dir)
    )
}

/// JSON text with every character that the one sanitiser escapes for
/// display (C1 controls, bidi overrides and isolates, line separators)
/// written as `\uXXXX`. serde_json leaves them raw, and a terminal or an
/// agent reading `ls --json` would act on them. Such characters can only be
/// inside strings (JSON's own syntax is ASCII), so the result is the same
/// JSON value; ASCII controls are already escaped by serde_json.
pub(crate) fn escape_unsafe_in_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut utf8 = [0u8; 4];
    let mut utf16 = [0u16; 2];
    for c in json.chars() {
        let own = &*c.encode_utf8(&mut utf8);
        if c.is_ascii() || crate::text::sanitize::display_str(own).text == own {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut utf16) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        }
    }
    out
}

/// `outbox ls`: entries newest first, as a table or (`--json`) an array.
pub fn run_ls(args: &LsOptions, env: &StoreEnv) -> anyhow::Result<ExitCode> {
    let path = env.dir()?.to_path_buf();
    let entries = match StoreDir::open_existing(&path)? {
        Some(d) => list_entries(&d)?,
        None => Vec::new(),
    };
    let now = now_secs();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let res = if args.json {
        let rows: Vec<LsJson> = entries.iter().map(|e| ls_json(e, &path, now)).collect();
        match serde_json::to_string_pretty(&rows) {
            Ok(json) => writeln!(out, "{}", escape_unsafe_in_json(&json)),
            Err(e) => Err(io::Error::from(e)),
        }
    } else {
        write_ls_table(&mut out, &entries, &path, now)
    };
    match res.and_then(|_| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(anyhow!(e).context("cannot write to stdout")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_never_carries_bidi_or_c1_raw() {
        let s = "a\u{202e}b\u{85}c\u{2066}d\u{200f}e\u{9b}f é 日本";
        let json = serde_json::to_string(&s).unwrap();
        let safe = escape_unsafe_in_json(&json);
        assert_eq!(safe, "\"a\\u202eb\\u0085c\\u2066d\\u200fe\\u009bf é 日本\"");
        assert_eq!(serde_json::from_str::<String>(&safe).unwrap(), s);
    }
}
