//! `outbox gc` and the automatic collection after a run: expired entries,
//! stale temporary files, orphaned metadata, then the size cap (oldest
//! first, never the newest entry). Only outbox's own names are touched.

use std::fmt::Write as _;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context as _};

use super::ls::Listed;
use super::meta::{read_meta_at, MetaState};
use super::sys::{try_flock, Lock, Stat, StoreDir};
use super::{
    format_age, format_size, is_entry_name, now_secs, path_text, plural, shown, Store, StoreEnv,
    AUTO_GC_INTERVAL_SECONDS, GC_STAMP, META_SUFFIX, TEMP_GRACE_SECONDS, TEMP_PREFIX,
};

/// Entries younger than this are never evicted by the size cap in the
/// automatic collection after a run (expiry still applies): an envelope
/// has just named them.
pub const CAP_GRACE_SECONDS: u64 = 60;

/// `outbox gc` options.
#[derive(Debug, Clone, Default)]
pub struct GcOptions {
    /// Print what would be removed; remove nothing.
    pub dry_run: bool,
}

/// What a collection does.
#[derive(Debug, Clone, Copy)]
struct GcPlan {
    /// Remove expired entries, stale temporary files, orphaned metadata.
    expire: bool,
    /// Then evict the oldest entries until the store is at most this size.
    cap: Option<u64>,
    /// Entries younger than this many seconds are not evicted by the cap
    /// (automatic collection: [`CAP_GRACE_SECONDS`]; an explicit `outbox
    /// gc` takes none, it is what the user asked for).
    grace: u64,
    dry_run: bool,
}

/// What collection must leave alone whatever its age: the entry the
/// collecting run has just stored.
#[derive(Debug, Clone, Copy, Default)]
struct Spare<'a> {
    id: Option<&'a str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Why {
    Expired { ago: u64 },
    OverCap,
    StaleTemp { age: u64 },
    OrphanMeta,
}

#[derive(Debug, Clone)]
struct Removal {
    name: String,
    why: Why,
    bytes: u64,
}

#[derive(Debug, Default)]
struct GcReport {
    removed: Vec<Removal>,
    failures: Vec<String>,
    entries: u64,
    entry_bytes: u64,
    temps: u64,
    metas: u64,
}

impl GcReport {
    fn note(&mut self, name: &str, why: Why, bytes: u64) {
        match why {
            Why::Expired { .. } | Why::OverCap => {
                self.entries += 1;
                self.entry_bytes += bytes;
            }
            Why::StaleTemp { .. } => self.temps += 1,
            Why::OrphanMeta => self.metas += 1,
        }
        self.removed.push(Removal { name: name.to_string(), why, bytes });
    }

    fn summary(&self, dry_run: bool) -> String {
        let mut s = format!(
            "{} {} entr{} ({} bytes), {} temporary file{}",
            if dry_run { "would remove" } else { "removed" },
            self.entries,
            if self.entries == 1 { "y" } else { "ies" },
            self.entry_bytes,
            self.temps,
            plural(self.temps),
        );
        if self.metas > 0 {
            let _ = write!(s, ", {} orphaned metadata file{}", self.metas, plural(self.metas));
        }
        s
    }
}

/// Removes an entry: data first, so that from then on it is gone for
/// `show`; its metadata is an orphan for a moment at most.
pub(crate) fn remove_entry(dir: &StoreDir, id: &str, dry_run: bool) -> io::Result<()> {
    if dry_run {
        return Ok(());
    }
    match dir.unlink(id) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    match dir.unlink(&format!("{id}{META_SUFFIX}")) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Whether a temporary file is left over: untouched for the grace period
/// and not locked by a running writer.
fn temp_is_stale(dir: &StoreDir, name: &str, st: &Stat, now: u64) -> bool {
    if !st.ours() || st.age(now) < TEMP_GRACE_SECONDS {
        return false;
    }
    match dir.open_read(name) {
        // The lock (if taken) is released when `file` closes.
        Ok((file, _)) => try_flock(&file, Lock::Exclusive).unwrap_or(true),
        Err(_) => false,
    }
}

/// One pass of collection, as `plan` says. Only outbox's own names are
/// considered, and of those only regular files of ours: symlinks, foreign
/// files and directories are skipped, never followed or removed.
fn collect(dir: &StoreDir, plan: GcPlan, spare: Spare<'_>, now: u64) -> io::Result<GcReport> {
    let mut report = GcReport::default();
    let fail = |report: &mut GcReport, name: &str, e: io::Error| {
        report.failures.push(format!("cannot remove {} from {}: {e}", shown(name), path_text(&dir.path)))
    };
    let mut entry_names = Vec::new();
    let mut meta_names = Vec::new();
    let mut temp_names = Vec::new();
    for name in dir.names()? {
        if name.starts_with(TEMP_PREFIX) {
            temp_names.push(name);
        } else if name.strip_suffix(META_SUFFIX).is_some_and(is_entry_name) {
            meta_names.push(name);
        } else if is_entry_name(&name) {
            entry_names.push(name);
        }
        // Anything else, `gc-stamp` included, is not ours to touch.
    }

    if plan.expire {
        for name in &temp_names {
            let Ok(st) = dir.stat(name) else { continue };
            if temp_is_stale(dir, name, &st, now) {
                match if plan.dry_run { Ok(()) } else { dir.unlink(name) } {
                    Ok(()) => report.note(name, Why::StaleTemp { age: st.age(now) }, st.size),
                    Err(e) => fail(&mut report, name, e),
                }
            }
        }
    }

    // Entries by lstat only; metadata is read when a decision needs it, so
    // a cap check on a store under its cap costs one lstat per file.
    let mut live: Vec<(Listed, bool)> = Vec::new();
    for name in entry_names {
        if spare.id == Some(name.as_str()) {
            continue;
        }
        let Ok(stat) = dir.stat(&name) else { continue };
        if !stat.ours() {
            continue;
        }
        let meta_bytes = dir.stat(&format!("{name}{META_SUFFIX}")).ok().filter(Stat::ours).map_or(0, |s| s.size);
        live.push((Listed { id: name, stat, meta: MetaState::Missing, meta_bytes }, false));
    }
    let load = |e: &mut (Listed, bool)| {
        if !e.1 {
            e.0.meta = read_meta_at(dir, &e.0.id);
            e.1 = true;
        }
    };

    if plan.expire {
        let mut kept = Vec::with_capacity(live.len());
        for mut e in live {
            load(&mut e);
            let expires = e.0.expires_at();
            if expires < now {
                let bytes = e.0.stat.size + e.0.meta_bytes;
                match remove_entry(dir, &e.0.id, plan.dry_run) {
                    Ok(()) => report.note(&e.0.id, Why::Expired { ago: now - expires }, bytes),
                    Err(err) => fail(&mut report, &e.0.id, err),
                }
            } else {
                kept.push(e);
            }
        }
        live = kept;

        for name in &meta_names {
            let id = &name[..name.len() - META_SUFFIX.len()];
            // Only a meta whose entry name is free: a meta beside a symlink
            // or a directory is left alone with it.
            if !matches!(dir.stat(id), Err(e) if e.kind() == io::ErrorKind::NotFound) {
                continue;
            }
            let Ok(st) = dir.stat(name) else { continue };
            // Metadata is written just before its entry is renamed into
            // place: a young one may be about to get its entry.
            if st.ours() && st.age(now) >= TEMP_GRACE_SECONDS {
                match if plan.dry_run { Ok(()) } else { dir.unlink(name) } {
                    Ok(()) => report.note(name, Why::OrphanMeta, st.size),
                    Err(e) => fail(&mut report, name, e),
                }
            }
        }
    }

    if let Some(cap) = plan.cap {
        let mut total: u64 = live.iter().map(|e| e.0.stat.size + e.0.meta_bytes).sum();
        if total > cap {
            live.iter_mut().for_each(load);
            live.sort_by(|a, b| a.0.age_key().cmp(&b.0.age_key()));
            // The newest entry stays whatever its size: an envelope has just
            // pointed at it, and removing it would break that promise before
            // anyone could read it.
            let newest = live.len().saturating_sub(1);
            for e in &live[..newest] {
                if total <= cap {
                    break;
                }
                if e.0.born().saturating_add(plan.grace) > now {
                    // Too young; so are the rest (oldest first).
                    break;
                }
                let bytes = e.0.stat.size + e.0.meta_bytes;
                match remove_entry(dir, &e.0.id, plan.dry_run) {
                    Ok(()) => {
                        report.note(&e.0.id, Why::OverCap, bytes);
                        total -= bytes;
                    }
                    Err(err) => fail(&mut report, &e.0.id, err),
                }
            }
        }
    }
    Ok(report)
}

/// `outbox gc`: removes expired entries, stale temporary files and orphaned
/// metadata, then enforces `OUTBOX_MAX_STORE_BYTES`; prints what it removed.
pub fn run_gc(args: &GcOptions, env: &StoreEnv) -> anyhow::Result<ExitCode> {
    let cap = env.cap().map_err(|e| anyhow!(e))?;
    let path = env.dir()?.to_path_buf();
    let report = match StoreDir::open_existing(&path)? {
        None => GcReport::default(),
        Some(store) => {
            if !args.dry_run {
                store.lock_exclusive();
                // An explicit gc restarts the automatic one's clock.
                let _ = store.touch_stamp();
            }
            let plan = GcPlan { expire: true, cap, grace: 0, dry_run: args.dry_run };
            collect(&store, plan, Spare::default(), now_secs())
                .with_context(|| format!("collecting {} failed", path_text(&path)))?
            // The lock is released here, before printing: a slow reader of
            // this report must not hold up every outbox run.
        }
    };
    for f in &report.failures {
        crate::say!("{f}");
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let verb = if args.dry_run { "would remove" } else { "removed" };
    let mut res = Ok(());
    for r in &report.removed {
        let why = match r.why {
            Why::Expired { ago } => format!("expired {} ago, {}", format_age(ago), format_size(r.bytes)),
            Why::OverCap => format!(
                "oldest over the store's cap of {} (OUTBOX_MAX_STORE_BYTES), {}",
                cap.map_or_else(String::new, format_size),
                format_size(r.bytes)
            ),
            Why::StaleTemp { age } => format!("temporary file left {} ago", format_age(age)),
            Why::OrphanMeta => "metadata without its entry".into(),
        };
        res = res.and_then(|_| writeln!(out, "{verb} {} ({why})", shown(&r.name)));
    }
    res = res.and_then(|_| writeln!(out, "{}", report.summary(args.dry_run))).and_then(|_| out.flush());
    if let Err(e) = res {
        if e.kind() != io::ErrorKind::BrokenPipe {
            return Err(anyhow!(e).context("cannot write to stdout"));
        }
    }
    if report.failures.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        bail!("{} file(s) could not be removed (see above); check their permissions", report.failures.len())
    }
}

/// Automatic collection, called by a run after its commit of `own` (which
/// it never removes, whatever the cap; see `CAP_GRACE_SECONDS` for the
/// entries of concurrent runs). At most once
/// per [`AUTO_GC_INTERVAL_SECONDS`] (the stamp's mtime) it runs a full gc;
/// with a cap (the default 2 GiB, or `OUTBOX_MAX_STORE_BYTES`) it checks
/// the store's size on every run (an lstat per file) so the cap holds. Silent: errors are ignored, and it never waits
/// for another process's lock.
pub fn maybe_collect(store: &Store, own: &str) {
    let cap = store.max_bytes();
    let Ok(dir) = store.store_dir().reopen() else { return };
    let now = now_secs();
    let mut due = match dir.stat(GC_STAMP) {
        Ok(st) => {
            st.ours() && (st.age(now) >= AUTO_GC_INTERVAL_SECONDS || st.mtime > (now + AUTO_GC_INTERVAL_SECONDS) as i64)
        }
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    };
    // Claim this hour first, so concurrent runs do not all collect; a stamp
    // that cannot be updated would make every run collect, so then none do.
    if due && dir.touch_stamp().is_err() {
        due = false;
    }
    if !due && cap.is_none() {
        return;
    }
    // Busy: another gc runs, or runs are committing; next time. (A
    // filesystem without flock gives an error: collect unlocked, as `outbox
    // gc` does, rather than never.)
    if let Ok(false) = try_flock(&dir.fd, Lock::Exclusive) {
        return;
    }
    let _ = collect(
        &dir,
        GcPlan { expire: due, cap, grace: CAP_GRACE_SECONDS, dry_run: false },
        Spare { id: Some(own) },
        now,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testutil::{names_in, put, store};
    use crate::store::META_SUFFIX;
    use std::fs::{self, File};
    use std::time::{Duration, SystemTime};

    #[test]
    fn gc_spares_a_locked_temporary_file_however_old() {
        let (_tmp, store) = store();
        let t = store.create_temp().unwrap();
        let name = t.path.file_name().unwrap().to_str().unwrap().to_string();
        t.file.set_modified(SystemTime::now() - Duration::from_secs(2 * TEMP_GRACE_SECONDS)).unwrap();
        let dir = StoreDir::open(store.dir()).unwrap();
        let plan = GcPlan { expire: true, cap: None, grace: 0, dry_run: false };
        let r = collect(&dir, plan, Spare::default(), now_secs()).unwrap();
        assert_eq!(r.temps, 0, "a running writer's file was removed");
        drop(t.file);
        let r = collect(&dir, plan, Spare::default(), now_secs()).unwrap();
        assert_eq!(r.temps, 1);
        assert!(!names_in(&store).contains(&name));
    }

    #[test]
    fn gc_honours_each_entrys_own_ttl() {
        let (_tmp, store) = store();
        let now = now_secs();
        let old_short = put(&store, "a", b"1", now - 100, 50);
        let old_long = put(&store, "b", b"2", now - 100, 500);
        let dir = StoreDir::open(store.dir()).unwrap();
        let r =
            collect(&dir, GcPlan { expire: true, cap: None, grace: 0, dry_run: false }, Spare::default(), now).unwrap();
        assert_eq!(r.removed.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), [old_short.as_str()]);
        assert_eq!(r.removed[0].why, Why::Expired { ago: 50 });
        assert_eq!(names_in(&store), vec![old_long.clone(), format!("{old_long}{META_SUFFIX}")]);
    }

    #[test]
    fn reusing_an_entry_restarts_its_ttl() {
        let (_tmp, store) = store();
        let now = now_secs();
        let id = put(&store, "a", b"same", now - 100, 50);
        assert_eq!(put(&store, "a", b"same", now, 50), id);
        assert_eq!(store.read_meta(&id).unwrap().created, now);
        let dir = StoreDir::open(store.dir()).unwrap();
        let r =
            collect(&dir, GcPlan { expire: true, cap: None, grace: 0, dry_run: false }, Spare::default(), now).unwrap();
        assert!(r.removed.is_empty());
    }

    #[test]
    fn automatic_collection_runs_hourly_and_is_silent() {
        let (_tmp, store) = store();
        let now = now_secs();
        let first = put(&store, "a", b"expired", now - 100, 1);
        maybe_collect(&store, "");
        assert!(!store.data_path(&first).exists(), "the first run collects");
        assert!(store.dir().join(GC_STAMP).exists());
        let second = put(&store, "b", b"expired too", now - 100, 1);
        maybe_collect(&store, "");
        assert!(store.data_path(&second).exists(), "within the hour nothing more is collected");
        // An hour later it runs again.
        let stamp = File::options().write(true).open(store.dir().join(GC_STAMP)).unwrap();
        stamp.set_modified(SystemTime::now() - Duration::from_secs(AUTO_GC_INTERVAL_SECONDS + 1)).unwrap();
        maybe_collect(&store, "");
        assert!(!store.data_path(&second).exists());
    }

    #[test]
    fn the_cap_evicts_oldest_first_and_keeps_the_newest() {
        let (_tmp, store) = store();
        let now = now_secs();
        let old = now - CAP_GRACE_SECONDS;
        let a = put(&store, "a", &[1; 1000], old - 30, 1000);
        let b = put(&store, "b", &[2; 1000], old - 20, 1000);
        let c = put(&store, "c", &[3; 1000], old - 10, 1000);
        let dir = StoreDir::open(store.dir()).unwrap();
        let meta = fs::metadata(store.meta_path(&b)).unwrap().len();
        let plan = GcPlan { expire: false, cap: Some(2 * (1000 + meta)), grace: CAP_GRACE_SECONDS, dry_run: false };
        let r = collect(&dir, plan, Spare::default(), now).unwrap();
        assert_eq!(
            r.removed.iter().map(|r| (r.name.as_str(), &r.why)).collect::<Vec<_>>(),
            [(a.as_str(), &Why::OverCap)]
        );
        let r = collect(&dir, GcPlan { cap: Some(0), ..plan }, Spare::default(), now).unwrap();
        assert_eq!(r.removed.len(), 1);
        assert_eq!(names_in(&store), vec![c.clone(), format!("{c}{META_SUFFIX}")]);
    }

    /// Concurrent runs under a small cap: none evicts an entry another run
    /// has just named, nor its own, whatever the order of their commits.
    #[test]
    fn the_cap_spares_young_entries_and_the_runs_own() {
        let (_tmp, store) = store();
        let now = now_secs();
        let old = put(&store, "old", &[0; 1000], now - CAP_GRACE_SECONDS - 100, 100_000);
        let young: Vec<String> = (0..4u8).map(|i| put(&store, "y", &[i + 1; 1000], now - i as u64, 1000)).collect();
        let dir = StoreDir::open(store.dir()).unwrap();
        let plan = GcPlan { expire: false, cap: Some(0), grace: CAP_GRACE_SECONDS, dry_run: false };
        // The run that stored young[3] (not the newest) collects.
        let r = collect(&dir, plan, Spare { id: Some(&young[3]) }, now).unwrap();
        assert_eq!(r.removed.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), [old.as_str()]);
        for y in &young {
            assert!(store.data_path(y).exists(), "{y} evicted while young");
        }
        // Its own entry survives even past the grace.
        let r = collect(&dir, plan, Spare { id: Some(&young[0]) }, now + 10 * CAP_GRACE_SECONDS).unwrap();
        assert!(store.data_path(&young[0]).exists());
        assert_eq!(r.removed.len(), 2, "the rest but the newest");
    }
}
