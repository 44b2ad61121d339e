//! `outbox stats`: per command, runs, characters produced against
//! characters printed, identical re-runs, envelopes against pass-throughs
//! (outbox::history::usage), as a table or JSON.

use std::io::Write;

use outbox::history::usage::{self, Usage};
use outbox::text::sanitize::display_str;

use crate::cli::StatsArgs;

pub fn run(args: &StatsArgs, store: &outbox::store::StoreEnv) -> anyhow::Result<u8> {
    let (rows, problems) = usage::usage(store.dir()?, args.key.as_deref())?;
    for p in problems {
        eprintln!("outbox: stats: {}", display_str(&p).text);
    }
    let text = if args.json {
        serde_json::to_string_pretty(&rows)? + "\n"
    } else if rows.is_empty() {
        "no run history yet: runs of outbox record their figures as they go\n".to_string()
    } else {
        table(&rows)
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    Ok(0)
}

fn table(rows: &[Usage]) -> String {
    let head = ["COMMAND", "RUNS", "SAME", "ENVELOPED", "WHOLE", "CHARS PRODUCED", "CHARS PRINTED", "KEPT OUT"];
    let mut lines: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    let (mut produced, mut printed, mut unrecorded) = (0u64, 0u64, 0u64);
    for r in rows {
        let what = match &r.key.command {
            Some(c) => c.clone(),
            None => r.key.label.clone(),
        };
        lines.push(vec![
            display_str(&what).text,
            r.runs.to_string(),
            r.identical_reruns.to_string(),
            r.envelopes.to_string(),
            r.passthroughs.to_string(),
            r.chars_produced.to_string(),
            r.chars_printed.to_string(),
            r.chars_kept_out.to_string(),
        ]);
        produced += r.chars_produced;
        printed += r.chars_printed;
        unrecorded += r.unrecorded;
    }
    let widths: Vec<usize> =
        (0..head.len()).map(|i| lines.iter().map(|l| l[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for l in &lines {
        let cells: Vec<String> = l
            .iter()
            .enumerate()
            .map(|(i, c)| if i == 0 { format!("{c:<w$}", w = widths[i]) } else { format!("{c:>w$}", w = widths[i]) })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "\n{} characters produced, {} printed for the reader: {} kept out of the reader's window \
(characters, not tokens or money; SAME: byte-identical re-runs of the previous run).\n",
        produced,
        printed,
        produced.saturating_sub(printed)
    ));
    if unrecorded > 0 {
        out.push_str(&format!("{unrecorded} older runs were recorded before these figures and are not in the sums.\n"));
    }
    out
}
