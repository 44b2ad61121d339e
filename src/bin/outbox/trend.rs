//! `outbox trend`: the run history's series as a table or JSON, and the
//! audit of series about to cross the boundary.

use std::io::Write;

use outbox::history::report;
use outbox::history::series::Unit;
use outbox::session::Harness;

use crate::cli::{EnvelopeArgs, HarnessArg, TrendArgs, DEFAULT_RUN_BUDGET};

pub fn run(args: &TrendArgs, env: &EnvelopeArgs, store: &outbox::store::StoreEnv) -> anyhow::Result<u8> {
    let harness = env.harness.map_or(Harness::None, HarnessArg::harness);
    let (boundary, unit) = match (args.boundary.or(env.boundary), harness.boundary()) {
        (Some(b), _) => (b, Unit::Chars),
        (None, Some(h)) => h,
        (None, None) => (env.budget.unwrap_or(DEFAULT_RUN_BUDGET) as u64, Unit::Chars),
    };
    let report = match outbox::store::Store::open_existing(store.dir()?)? {
        Some(s) => report::rows(&s, args.key.as_deref(), boundary, unit, args.within)?,
        None => report::Report::default(),
    };
    for p in &report.problems {
        outbox::say!("{p}");
    }
    let rows = report.rows;
    let text = if args.json {
        // Keys hold commands and paths: no control or bidi character
        // reaches a terminal raw, even inside JSON strings.
        outbox::text::sanitize::terminal_safe_json(&serde_json::to_string_pretty(&rows)?) + "\n"
    } else if rows.is_empty() {
        match args.within {
            Some(n) => format!("no series crosses {boundary} {} within {n} runs\n", unit.name()),
            None => "no run history yet: runs of outbox record their sizes as they go\n".to_string(),
        }
    } else {
        format!("boundary: {boundary} {}\n{}", unit.name(), report::table(&rows))
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    Ok(u8::from(args.within.is_some() && !rows.is_empty()))
}
