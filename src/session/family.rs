//! Family knowledge in a run: building the engine from the options, and
//! turning what the scanner learned (family evidence, verdict lines,
//! severities, the first error's location) into header fields and the
//! one-line summary printed right after the header.
//!
//! Summary format (one line, so a preview of the first 2,000 characters
//! holds the outcome):
//!
//! ```text
//! --- summary: FAILED (pytest): 2 failed, 3 passed, 1 warnings; signals: 5 errors of 2 kinds: ZeroDivisionError ×3, AssertionError ×2; 1 warning of 1 kind: DeprecationWarning ×1; first error test_calc.py:23 ---
//! --- summary: no verdict; signals: 531 errors of 24 kinds: TS6133 ×212, TS2322 ×87, TS2307 ×40, …; first error src/a.ts:10:24 ---
//! --- summary: no error or warning lines ---
//! ```
//!
//! When the command is known (wrap mode, the hook's status file) the
//! summary ends with how it ended: `; exit status 3`, `; killed by
//! SIGSEGV`, `; timed out after 2s`, followed by `disagrees` when the
//! verdict and the command's exit status do not agree.

use std::sync::Arc;

use crate::family::classify::Status;
use crate::family::{self, Classifier, FamilyOptions, Severity};
use crate::render::facts::CommandInfo;
use crate::render::facts::RunFacts as RunInfo;
use crate::render::kinds;
use crate::stream::scan::Scanned;

/// Kinds the header lists at most (the summary names the top three of
/// each severity; the signal section shows them all as room allows).
const HEADER_KINDS: usize = 8;

/// The engine for these options; None when family knowledge is off.
///
/// User family files are checked one by one when they load, but together
/// they can still exceed the regex size limits. Then the engine is built
/// from what fits: the shipped families, then each user file in turn, a
/// file that does not fit dropped (a replaced shipped family comes back)
/// and named on stderr. A personal file never costs a run its output.
///
/// Built once per process and options (the two streams of `--stderr
/// separate` share it), so wrap mode can build it before it starts the
/// command: a slow build (large user families) must not eat into the time
/// allowed for reading after the command exits.
pub fn engine(opts: &FamilyOptions) -> anyhow::Result<Option<Arc<Classifier>>> {
    if opts.legacy {
        return Ok(None);
    }
    type Cache = Vec<(FamilyOptions, Arc<Classifier>)>;
    static BUILT: std::sync::Mutex<Cache> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, c)) = built.iter().find(|(o, _)| o == opts) {
        return Ok(Some(c.clone()));
    }
    let c = Arc::new(build(opts)?);
    built.push((opts.clone(), c.clone()));
    Ok(Some(c))
}

fn build(opts: &FamilyOptions) -> anyhow::Result<Classifier> {
    let all = family::load_all();
    let has_user = all.iter().any(|f| f.source.is_some());
    let built = Classifier::new(all, opts).and_then(|c| {
        // With user files, the rest of the engine is built now too, so a
        // limit is met here and not on the first candidate line.
        if has_user {
            c.build_now()?;
        }
        Ok(c)
    });
    match built {
        Ok(c) => Ok(c),
        Err(_) if has_user => fitting(all, opts),
        Err(e) => anyhow::bail!("{e}"),
    }
}

/// The engine from the shipped families and as many user files as fit, in
/// file order; each file left out is said once per process. The longest
/// run of files that fits is found by bisection, so a build is tried
/// O(log n) times per file left out, not once per file.
fn fitting(all: &[family::FamilySpec], opts: &FamilyOptions) -> anyhow::Result<Classifier> {
    let shipped = family::spec::embedded();
    // With only these user files (indices into `all`) taken.
    let build = |taken: &[usize]| {
        let specs: Vec<family::FamilySpec> = all
            .iter()
            .enumerate()
            .filter_map(|(i, f)| match f.source.is_none() || taken.contains(&i) {
                true => Some(f.clone()),
                // A left-out replacement gives the shipped family back.
                false => shipped.iter().find(|s| s.name == f.name).cloned(),
            })
            .collect();
        Classifier::new(&specs, opts).and_then(|c| c.build_now().map(|()| c))
    };
    let mut rest: Vec<usize> = (0..all.len()).filter(|&i| all[i].source.is_some()).collect();
    let mut taken: Vec<usize> = Vec::new();
    // The last engine built, and the files it holds.
    let mut best = (Vec::new(), build(&taken).map_err(|e| anyhow::anyhow!("{e}"))?);
    while !rest.is_empty() {
        // The most files of `rest`, from its start, that fit with `taken`.
        let (mut lo, mut hi) = (0, rest.len());
        let mut why = String::new();
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            let trial: Vec<usize> = taken.iter().chain(&rest[..mid]).copied().collect();
            match build(&trial) {
                Ok(c) => {
                    best = (trial, c);
                    lo = mid;
                }
                Err(e) => {
                    why = e;
                    hi = mid - 1;
                }
            }
        }
        taken.extend(rest.drain(..lo));
        if rest.is_empty() {
            break;
        }
        // `rest[0]` does not fit after what is taken: leave it out.
        let file = all[rest[0]].source.as_deref().map_or_else(String::new, family::spec::shown);
        let why = if why.is_empty() { "it does not fit".to_string() } else { why };
        say_once(format!(
            "ignoring the family file {file}: with the families loaded before it, its patterns exceed the regex \
             size limit ({}); the run goes on without it",
            crate::text::sanitize::display_str(&why).text
        ));
        rest.remove(0);
    }
    if best.0 == taken {
        return Ok(best.1);
    }
    // The last engine built holds fewer files (later trials failed): build
    // the one that was settled on.
    Ok(build(&taken).unwrap_or(best.1))
}

/// Says a message on stderr unless this process already said it (a run
/// with `--stderr separate` builds two engines).
fn say_once(message: String) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.contains(&message) {
        crate::say!("{message}");
        said.push(message);
    }
}

/// Adds the family facts to the header (`family`, `signals`, `verdict`,
/// `verdict_mismatch`, `first_error`) and the summary as the first note.
pub fn annotate(info: &mut RunInfo, sc: &Scanned, engine: &Classifier, command: Option<&CommandInfo>) {
    let Some(tally) = sc.tally else { return };
    let errors = sc.signals.count(Severity::Error);
    let warnings = sc.signals.count(Severity::Warning);
    let detected = engine.detect(tally, command.map(|c| c.command.as_str()));
    let verdict = detected.and_then(|f| engine.verdict(tally, f, errors));
    let mut signals = serde_json::Map::new();
    signals.insert("error".into(), errors.into());
    signals.insert("warning".into(), warnings.into());
    info.extra.insert("family".into(), detected.map(|f| engine.family_name(f)).into());
    info.extra.insert("signals".into(), signals.into());
    if errors + warnings > 0 {
        let totals = [Severity::Error, Severity::Warning].map(|s| sc.signals.kinds_total(s));
        info.extra.insert("kinds".into(), kinds::header(sc.signals, HEADER_KINDS));
        info.extra.insert("kinds_total".into(), (totals[0].0 + totals[1].0).into());
        if totals[0].1 || totals[1].1 {
            info.extra.insert("kinds_total_estimated".into(), true.into());
        }
    }
    let exit = command.and_then(|c| c.exit_status.or(c.killed_by_signal.map(|s| 128 + s)));
    let mismatch = match (&verdict, exit) {
        (Some(v), Some(code)) => (v.status == Status::Passed) != (code == 0),
        _ => false,
    };
    if let Some(v) = &verdict {
        let mut o = serde_json::Map::new();
        o.insert("family".into(), v.family.clone().into());
        o.insert("status".into(), v.status.as_str().into());
        for (k, n) in &v.counts {
            o.insert((*k).into(), (*n).into());
        }
        o.insert("verdict_lines".into(), v.lines.into());
        if let Some(q) = &v.quote {
            o.insert("line".into(), q.clone().into());
        }
        if v.runs > 1 {
            // The verdict is the last run's; the earlier ones are named.
            o.insert("runs".into(), v.runs.into());
            o.insert("earlier_runs_failed".into(), v.earlier_failed.into());
        }
        if v.from_signals {
            o.insert("from".into(), "signal lines".into());
        }
        info.extra.insert("verdict".into(), o.into());
        if exit.is_some() {
            info.extra.insert("verdict_mismatch".into(), mismatch.into());
        }
    }
    if let Some((line, loc)) = sc.first_error_location {
        let mut o = serde_json::Map::new();
        o.insert("line".into(), (*line).into());
        o.insert("location".into(), loc.clone().into());
        info.extra.insert("first_error".into(), o.into());
    }

    let mut parts: Vec<String> = Vec::new();
    match &verdict {
        Some(v) => {
            let counts: Vec<String> = v.counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
            let status = v.status.as_str().to_ascii_uppercase();
            if counts.is_empty() {
                parts.push(format!("{status} ({})", v.family));
            } else {
                parts.push(format!("{status} ({}): {}", v.family, counts.join(", ")));
            }
            if let Some(q) = &v.quote {
                parts.push(format!("\"{q}\""));
            }
            if v.runs > 1 {
                parts.push(format!("last of {} runs, {} earlier failed", v.runs, v.earlier_failed));
            }
        }
        None if errors + warnings == 0 => parts.push("no error or warning lines".into()),
        None => parts.push("no verdict".into()),
    }
    // The hits of each severity with their most frequent kinds.
    let said: Vec<String> =
        [Severity::Error, Severity::Warning].into_iter().filter_map(|s| kinds::summary(sc.signals, s, 3)).collect();
    if !said.is_empty() {
        parts.push(format!("signals: {}", said.join("; ")));
    }
    if let Some((_, loc)) = sc.first_error_location {
        parts.push(format!("first error {loc}"));
    }
    // How the command ended, when it is known (wrap mode, the hook's status
    // file): a crash or a failing status must not read like a clean run.
    if let Some(ending) = command.and_then(CommandInfo::ending) {
        parts.push(if mismatch { format!("{ending} disagrees") } else { ending });
    }
    info.notes.insert(0, format!("summary: {}", parts.join("; ")));
}
