//! Following detached runs (`--detach-after`): `outbox status [ID]`,
//! `outbox wait ID`, and `outbox show ID` while the run is going on.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use outbox::store::StoreEnv;
use outbox::text::sanitize::display_str;
use serde_json::json;

use crate::cli::{ShowArgs, StatusArgs, WaitArgs};
use crate::wrap::detach::{Entry, Info, State};

/// How much of the end of the output is searched for the last signal
/// line.
const LAST_SIGNAL_WINDOW: u64 = 256 << 10;

/// The record of detached run `id`, if `id` names one.
pub fn record(store: &StoreEnv, id: &str) -> Option<Entry> {
    Entry::open(store.dir().ok()?, id)
}

fn store_dir(store: &StoreEnv) -> anyhow::Result<&Path> {
    Ok(store.dir()?)
}

/// Where the run's output is: the stored entry once it ended, the
/// temporary file it is being written to before.
fn output_path(info: &Info, state: &State) -> Option<PathBuf> {
    match state {
        State::Done(d) => d.full_output.clone(),
        _ => info.spill.clone().filter(|p| p.exists()),
    }
}

/// The last line of the output's last [`LAST_SIGNAL_WINDOW`] bytes that
/// the default signal patterns match.
fn last_signal(path: &Path) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(LAST_SIGNAL_WINDOW))).ok()?;
    let mut buf = Vec::new();
    f.take(LAST_SIGNAL_WINDOW).read_to_end(&mut buf).ok()?;
    let re = outbox::stream::signal::matcher(None).ok()?;
    let line = buf.split(|&b| b == b'\n').rfind(|l| re.is_match(l))?;
    let text = String::from_utf8_lossy(line);
    Some(display_str(&outbox::text::shorten::shorten_text(text.trim_end_matches('\r'), 200)).text)
}

fn state_word(state: &State) -> String {
    match state {
        State::Running => "running".into(),
        State::Done(d) => match d.exit_status {
            Some(s) => format!("exited {s}"),
            None => format!("ended (outbox exit {})", d.code),
        },
        State::Lost => "lost (its runner is gone without a result)".into(),
    }
}

fn describe(entry: &Entry, info: &Info, state: &State) -> serde_json::Value {
    let path = output_path(info, state);
    let bytes = path.as_ref().and_then(|p| std::fs::metadata(p).ok()).map(|m| m.len());
    let mut v = json!({
        "id": entry.id,
        "command": info.command,
        "state": match state { State::Running => "running", State::Done(_) => "exited", State::Lost => "lost" },
        "started": info.started,
        "bytes": bytes,
        "last_signal_line": path.as_deref().and_then(last_signal),
    });
    if let State::Done(d) = state {
        v["exit_status"] = json!(d.exit_status);
        v["ended"] = json!(d.ended);
        v["full_output"] = json!(d.full_output);
    }
    v
}

/// `outbox status [ID] [--json]`.
pub fn status(args: &StatusArgs, store: &StoreEnv) -> anyhow::Result<u8> {
    let dir = store_dir(store)?;
    let runs: Vec<(Entry, Info, State)> = match &args.id {
        Some(id) => {
            let entry = Entry::open(dir, id).ok_or_else(|| unknown(id))?;
            let info = entry.info().ok_or_else(|| unknown(id))?;
            let state = entry.state(&info);
            vec![(entry, info, state)]
        }
        None => Entry::list(dir),
    };
    let text = if args.json {
        let all: Vec<serde_json::Value> = runs.iter().map(|(e, i, s)| describe(e, i, s)).collect();
        serde_json::to_string_pretty(&all)? + "\n"
    } else if runs.is_empty() {
        "no detached runs (outbox --detach-after D -- CMD starts one)\n".to_string()
    } else {
        let mut out = String::new();
        for (e, i, s) in &runs {
            let d = describe(e, i, s);
            let bytes = d["bytes"].as_u64().map_or("?".to_string(), |b| b.to_string());
            out.push_str(&format!("{}  {}  {bytes} bytes  {}\n", e.id, state_word(s), display_str(&i.command).text));
            if let Some(l) = d["last_signal_line"].as_str() {
                out.push_str(&format!("    last signal line: {l}\n"));
            }
        }
        out
    };
    print(text.as_bytes());
    Ok(0)
}

fn unknown(id: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "no detached run {}: `outbox status` lists them (records are kept a day after the run ends)",
        display_str(id).text
    )
}

fn print(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

/// `outbox wait ID [--timeout D]`: the final envelope, and the command's
/// status as outbox's.
pub fn wait(args: &WaitArgs, store: &StoreEnv) -> anyhow::Result<u8> {
    let dir = store_dir(store)?;
    let entry = Entry::open(dir, &args.id).ok_or_else(|| unknown(&args.id))?;
    let start = Instant::now();
    loop {
        let info = entry.info().ok_or_else(|| unknown(&args.id))?;
        match entry.state(&info) {
            State::Done(d) => {
                let (out, err) = entry.output();
                let _ = std::io::stderr().lock().write_all(&err);
                print(&out);
                return Ok(d.code);
            }
            State::Lost => anyhow::bail!(
                "{} ended without a result (its runner was killed); what arrived is at {}",
                entry.id,
                info.spill.map_or("(nowhere)".to_string(), |p| p.display().to_string())
            ),
            State::Running => {}
        }
        if args.timeout.is_some_and(|t| start.elapsed() >= t) {
            outbox::say!(
                "{} is still running after --timeout {}; `outbox show {}` prints what has arrived",
                entry.id,
                crate::wrap::detach::shown_duration(args.timeout.unwrap_or_default()),
                entry.id
            );
            return Ok(crate::wrap::TIMED_OUT);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `outbox show ID` for a detached run: the stored entry once it ended;
/// what has arrived while it runs (said on stderr).
pub fn show(args: &ShowArgs, entry: &Entry, store: &StoreEnv) -> anyhow::Result<u8> {
    let info = entry.info().ok_or_else(|| unknown(&entry.id))?;
    let state = entry.state(&info);
    if let State::Done(d) = &state {
        let id = d.full_output.as_ref().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned());
        let Some(id) = id else {
            anyhow::bail!("{} ended, but its output could not be kept", entry.id);
        };
        let mut opts: outbox::store::ShowOptions = args.clone().into();
        opts.id = id;
        let ok = outbox::store::run_show(&opts, store)?;
        return Ok(if ok == std::process::ExitCode::SUCCESS { 0 } else { 1 });
    }
    if args.lines.is_some() || args.grep.is_some() {
        anyhow::bail!(
            "{} is still running: --lines and --grep work once it has ended (`outbox wait {}`); \
`outbox show {}` alone prints what has arrived",
            entry.id,
            entry.id,
            entry.id
        );
    }
    let path =
        output_path(&info, &state).ok_or_else(|| anyhow::anyhow!("{}: nothing has been stored yet", entry.id))?;
    let mut f = std::fs::File::open(&path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    let word = match state {
        State::Running => "is still running",
        _ => "ended without a result",
    };
    outbox::say!("{} {word}: this is what has arrived so far ({} bytes), not the whole output", entry.id, bytes.len());
    print(&bytes);
    Ok(0)
}
