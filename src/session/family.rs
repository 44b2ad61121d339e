//! Family knowledge in a run: building the engine from the options, and
//! turning what the scanner learned (family evidence, verdict lines,
//! severities, the first error's location) into header fields and the
//! one-line summary printed right after the header.
//!
//! Summary format (one line, so a preview of the first 2,000 characters
//! holds the outcome):
//!
//! ```text
//! --- summary: FAILED (pytest): 2 failed, 3 passed, 1 warnings; signals: 5 errors, 1 warning; first error test_calc.py:23 ---
//! --- summary: no verdict; signals: 3 errors, 0 warnings; first error src/lib.rs:10:24 ---
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
use crate::stream::scan::Scanned;

/// The engine for these options; None when family knowledge is off.
pub fn engine(opts: &FamilyOptions) -> anyhow::Result<Option<Arc<Classifier>>> {
    if opts.legacy {
        return Ok(None);
    }
    let c = Classifier::new(family::load_all(), opts).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Some(Arc::new(c)))
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
        }
        None if errors + warnings == 0 => parts.push("no error or warning lines".into()),
        None => parts.push("no verdict".into()),
    }
    if errors + warnings > 0 {
        parts.push(format!("signals: {errors} errors, {warnings} warnings"));
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
