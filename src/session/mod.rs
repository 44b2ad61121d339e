//! One envelope run, shared by `CMD | outbox` and wrap mode: open the store,
//! ingest, commit the spill, render, print, and decide the exit status.
//!
//! Exit status (text mode): 0; 1 when outbox failed or the full output could
//! not be kept (the envelope is still printed); 128+N when interrupted by
//! signal N. Wrap mode maps these onto the command's status (see wrap.rs).

use std::io::{self, Write};
use std::path::PathBuf;

use regex::bytes::Regex;

pub mod family;
pub mod options;

use crate::json::ndjson::NdjsonFolder;
use crate::json::{Detected, FoldContext, JsonCollector};
use crate::render::envelope::{self, Budgets, RunInfo};
use crate::store::{self, Meta, Store};
use crate::stream::ingest::{self, BlockSink, Ingest};
use crate::stream::input::{Reader, Stop};
use crate::stream::scan::{ScanConfig, Scanner};
use crate::stream::spill::SpillTarget;
pub use options::{EnvelopeMode, Format, RunOptions, StderrMode, MIN_BUDGET};

pub use crate::render::facts::CommandInfo;

/// How a run ended, for the caller's exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// outbox itself failed, or the full output could not be kept.
    pub failed: bool,
    /// Input was cut short by this signal.
    pub interrupted: Option<i32>,
    /// Where the original is, when it was kept.
    pub full_output: Option<PathBuf>,
}

impl Outcome {
    /// Exit status of a plain `CMD | outbox` run.
    pub fn exit_code(&self) -> u8 {
        match self.interrupted {
            Some(sig) => crate::stream::interrupt::exit_code(sig),
            None => self.failed as u8,
        }
    }
}

/// One of a wrapped command's two streams, read by its own session when
/// `--stderr separate` keeps them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }

    /// The slot of its temporary file in `interrupt`.
    fn temp_slot(self) -> usize {
        match self {
            Stream::Stdout => 0,
            Stream::Stderr => 1,
        }
    }
}

/// How a stream's session prints, decided for both streams together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Print the stream unchanged (stdout's to stdout, stderr's to stderr).
    pub passthrough: bool,
    /// This stream's share of `--budget`.
    pub budget: usize,
}

/// What a finished stream needs, for deciding a [`Plan`].
#[derive(Debug, Clone, Copy)]
pub struct Measure {
    pub bytes: u64,
    pub chars: u64,
    pub binary: bool,
    /// The scanner holds all of it (so it can pass through).
    pub kept_whole: bool,
    /// The budget its text envelope needs to show every line whole; None
    /// when the stream is not kept whole or is folded as JSON.
    pub whole_envelope: Option<usize>,
}

/// A prepared run: store opened, temporary file created, scanner built.
pub struct Session {
    args: RunOptions,
    label: String,
    store: Result<Store, String>,
    target: Option<SpillTarget>,
    sinks: Sinks,
    signal: Regex,
    stream: Option<Stream>,
    plan: Option<Plan>,
    /// Family knowledge (None with `FamilyOptions::legacy`).
    families: Option<std::sync::Arc<crate::family::Classifier>>,
}

/// The consumers of the input: the text scanner always (its counts and its
/// envelope are the fallback of every format), plus the JSON collector or
/// the NDJSON folder when the format asks for one. `--format auto` picks
/// from the first block.
struct Sinks {
    scanner: Scanner,
    json: Option<JsonCollector>,
    ndjson: Option<NdjsonFolder>,
    auto_pending: bool,
    detected: Option<Detected>,
    json_max_bytes: u64,
    samples: usize,
}

impl Sinks {
    fn new(scanner: Scanner, args: &RunOptions) -> Sinks {
        let mut s = Sinks {
            scanner,
            json: None,
            ndjson: None,
            auto_pending: args.format == Format::Auto,
            detected: None,
            json_max_bytes: args.json_max_bytes,
            samples: args.samples,
        };
        match args.format {
            Format::Json => s.choose(Detected::Json),
            Format::Ndjson => s.choose(Detected::Ndjson),
            Format::Text | Format::Auto => {}
        }
        s
    }

    fn choose(&mut self, d: Detected) {
        match d {
            Detected::Json => self.json = Some(JsonCollector::new(self.json_max_bytes)),
            Detected::Ndjson => self.ndjson = Some(NdjsonFolder::new(self.samples)),
            Detected::Text => {}
        }
    }

    fn planned_strategy(&self) -> &'static str {
        if self.json.is_some() {
            "json-shape"
        } else if self.ndjson.is_some() {
            "ndjson-shape"
        } else {
            "text-envelope"
        }
    }
}

impl BlockSink for Sinks {
    fn feed(&mut self, block: &[u8]) {
        if self.auto_pending && !block.is_empty() {
            self.auto_pending = false;
            let d = crate::json::detect(block);
            self.detected = Some(d);
            self.choose(d);
        }
        self.scanner.feed(block);
        if let Some(j) = self.json.as_mut() {
            j.feed(block);
        }
        if let Some(n) = self.ndjson.as_mut() {
            n.feed(block);
        }
    }
}

impl Session {
    /// Validates options and prepares the store. Errors here are usage
    /// errors (bad regex); store problems are carried into the envelope.
    pub fn start(args: &RunOptions, default_label: &str) -> anyhow::Result<Session> {
        Session::start_stream(args, default_label, None)
    }

    /// A session for one stream of a wrapped command (`--stderr
    /// separate`): stderr's label gets `.stderr` appended, its header says
    /// which stream it is, it is always text (`--format` is for stdout's
    /// payload), and `--envelope never` copies it to stderr.
    pub fn start_stream(args: &RunOptions, default_label: &str, stream: Option<Stream>) -> anyhow::Result<Session> {
        let signal = args.signal.clone();
        let raw_label = args.label.clone();
        let mut label = store::sanitize_label(raw_label.as_deref().unwrap_or(default_label), "stdin");
        let mut args = args.clone();
        if stream == Some(Stream::Stderr) {
            label = store::sanitize_label(&format!("{label}.stderr"), "stderr");
            args.format = Format::Text;
        }
        let args = &args;
        let store = store::resolve_dir(args.dir.as_deref()).and_then(|d| Store::open(&d)).map_err(|e| e.to_string());
        let mut target = None;
        let store = match store {
            Ok(s) => match s.create_temp() {
                Ok(t) => {
                    target = Some(t);
                    Ok(s)
                }
                Err(e) => Err(e.to_string()),
            },
            Err(e) => Err(e),
        };
        if let Some(t) = &target {
            crate::stream::interrupt::set_temp_path(stream.map_or(0, Stream::temp_slot), Some(&t.path));
        }
        let cfg = ScanConfig {
            budget: args.budget,
            tail_lines: args.tail,
            tail_budget: args.tail_budget,
            signal: signal.clone(),
        };
        let families = family::engine(&args.families)?;
        let mut scanner = Scanner::new(cfg);
        if let Some(f) = &families {
            scanner.set_classifier(f.clone());
        }
        let sinks = Sinks::new(scanner, args);
        Ok(Session { args: args.clone(), label, store, target, sinks, signal, stream, plan: None, families })
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// Where this stream's own bytes go when copied or passed through:
    /// stderr's to stderr, anything else to stdout. Envelopes always go to
    /// stdout.
    fn raw_output(&self) -> &'static str {
        match self.stream {
            Some(Stream::Stderr) => "stderr",
            _ => "stdout",
        }
    }

    /// Reads the input to its end (or to an interruption).
    pub fn ingest(&mut self, reader: Reader) -> Ingest {
        let tee_mode = self.args.envelope == EnvelopeMode::Never;
        let to_stderr = self.raw_output() == "stderr";
        // stderr is not held locked for the whole run: the reaper thread's
        // messages (a command stopped for using the terminal, about to be
        // killed) would wait on the lock for as long as the command lives.
        let mut lock: Box<dyn Write> = if to_stderr { Box::new(io::stderr()) } else { Box::new(io::stdout().lock()) };
        let tee: Option<&mut dyn Write> = if tee_mode { Some(&mut lock) } else { None };
        // One meter: stderr's session would draw over stdout's.
        let mut progress = (self.args.progress && !to_stderr).then(crate::stream::progress::Meter::stderr).flatten();
        let progress: Option<&mut dyn ingest::Progress> = progress.as_mut().map(|p| p as &mut dyn ingest::Progress);
        ingest::ingest(reader, &mut self.sinks, self.target.take(), tee, progress)
    }

    /// The finished stream's size, and the budget its envelope needs to
    /// show all of it (header sized with a generous allowance for the path).
    pub fn measure(&mut self) -> Measure {
        self.sinks.scanner.finish();
        let sc = self.sinks.scanner.result();
        let text = self.sinks.planned_strategy() == "text-envelope";
        let whole_envelope = (sc.head_is_all && text).then(|| {
            let budgets = |budget| Budgets {
                budget,
                tail_budget: self.args.tail_budget,
                head_budget: self.args.head_budget,
                tail_lines: self.args.tail,
                spill_limit: self.args.spill_limit,
            };
            let dir = self.store.as_ref().map_or(0, |s| s.dir().as_os_str().len());
            let info = RunInfo {
                label: self.label.clone(),
                id: format!("{}-000000000000", self.label),
                full_output: Some("x".repeat(dir + self.label.len() + 14)),
                strategy: "text-envelope".into(),
                command: Some("x".repeat(200)),
                exit_status: Some(255),
                duration_ms: Some(u32::MAX as u64),
                extra: [("stream".to_string(), "stdout".into())].into_iter().collect(),
                ..RunInfo::default()
            };
            let mut info = info;
            if let Some(f) = &self.families {
                let worst = CommandInfo { exit_status: Some(255), ..CommandInfo::default() };
                family::annotate(&mut info, &sc, f, Some(&worst));
            }
            // The renderer reserves room for worst-case figures, so the
            // budget that shows everything is a little more than what is
            // then printed: step up until the lines are those of an
            // unbounded budget (only the header's "budget" differs).
            let body = |text: String| text.splitn(4, '\n').nth(3).unwrap_or_default().to_string();
            let unbounded = envelope::render(&sc, &budgets(usize::MAX / 2), &info, &self.signal);
            let mut n = unbounded.chars().count();
            let want = body(unbounded);
            for _ in 0..32 {
                if body(envelope::render(&sc, &budgets(n), &info, &self.signal)) == want {
                    break;
                }
                n += n / 16 + 32;
            }
            n
        });
        Measure { bytes: sc.bytes, chars: sc.chars, binary: sc.binary, kept_whole: sc.head_is_all, whole_envelope }
    }

    /// Prints as `plan` says instead of deciding alone (`--stderr separate`).
    pub fn set_plan(&mut self, plan: Plan) {
        self.plan = Some(plan);
    }

    /// Commits the spill, prints the envelope (or the input itself) and
    /// reports how it went. Problems with outbox go to stderr as well.
    pub fn finish(mut self, ingest: Ingest, command: Option<CommandInfo>) -> Outcome {
        self.sinks.scanner.finish();
        let sc = self.sinks.scanner.result();
        let interrupted = match ingest.stop {
            Some(Stop::Signal(sig)) => Some(sig),
            _ => None,
        };
        let tee_mode = self.args.envelope == EnvelopeMode::Never;
        let budget = self.plan.map_or(self.args.budget, |p| p.budget);
        let passthrough = match self.plan {
            Some(p) if p.passthrough => Some(sc.head),
            Some(_) => None,
            None if self.args.envelope == EnvelopeMode::Auto && interrupted.is_none() => {
                envelope::passthrough(&sc, budget)
            }
            None => None,
        };
        let strategy = if tee_mode {
            "tee"
        } else if passthrough.is_some() {
            "passthrough"
        } else {
            self.sinks.planned_strategy()
        };

        let id = store::entry_id(&self.label, &ingest.spill.digest);
        let mut failed = false;
        let mut spill_error = None;
        let mut full_output = None;
        let mut committed: Option<(Store, Meta)> = None;
        match (&self.store, ingest.spill.temp.as_ref(), ingest.spill.error.as_ref()) {
            (Err(e), _, _) => spill_error = Some(e.clone()),
            (Ok(_), _, Some(e)) => spill_error = Some(format!("writing the spill failed: {e}")),
            (Ok(_), None, None) => spill_error = Some("the spill file was lost".into()),
            (Ok(store), Some(temp), None) => {
                let meta = Meta {
                    id: id.clone(),
                    label: self.label.clone(),
                    strategy: strategy.into(),
                    created: store::now_secs(),
                    ttl_seconds: store::ttl_from_env(),
                    bytes: sc.bytes,
                    chars: sc.chars,
                    lines: sc.lines,
                    complete: interrupted.is_none() && ingest.read_error.is_none(),
                    interrupted_by: interrupted.map(crate::stream::interrupt::name),
                    command: command.as_ref().map(|c| c.command.clone()),
                    exit_status: command.as_ref().and_then(|c| c.exit_status),
                    signal: command.as_ref().and_then(|c| c.killed_by_signal),
                    duration_ms: command.as_ref().and_then(|c| c.duration_ms),
                    digest: store::digest_hex(&ingest.spill.digest),
                };
                match store.commit(temp, &meta) {
                    Ok(entry) => {
                        full_output = Some(entry.path);
                        store::maybe_collect(store);
                        committed = Some((store.clone(), meta));
                    }
                    Err(e) => spill_error = Some(e.to_string()),
                }
            }
        }
        crate::stream::interrupt::set_temp_path(self.stream.map_or(0, Stream::temp_slot), None);
        if let Some(e) = &spill_error {
            failed = true;
            eprintln!("outbox: the full output could not be kept: {e}");
        }
        let mut notes = Vec::new();
        if let Some(e) = &ingest.read_error {
            failed = true;
            eprintln!("outbox: reading the input failed: {e}");
            notes.push(format!("reading the input failed after {} bytes: {e}", sc.bytes));
        }

        if tee_mode {
            if let Some(e) = &ingest.tee_error {
                if e.kind() != io::ErrorKind::BrokenPipe {
                    failed = true;
                    report_output_error(self.raw_output(), e, full_output.as_ref());
                }
            }
            return Outcome { failed, interrupted, full_output };
        }

        let full_output_text = full_output.as_ref().map(|p| p.display().to_string());
        let detected = self.sinks.detected.map(Detected::as_str);
        let ctx = FoldContext {
            label: &self.label,
            id: &id,
            full_output: full_output_text.as_deref(),
            spill_error: spill_error.as_deref(),
            bytes: sc.bytes,
            chars: sc.chars,
            budget,
            samples: self.args.samples,
            detected,
            command: command.as_ref(),
            stream: self.stream.map(Stream::name),
        };
        let mut info = RunInfo {
            label: self.label.clone(),
            id: id.clone(),
            full_output: full_output_text.clone(),
            spill_error: spill_error.clone(),
            strategy: "text-envelope".into(),
            command: command.as_ref().map(|c| envelope::shorten_text(&c.command, 200)),
            exit_status: command.as_ref().and_then(|c| c.exit_status),
            killed_by_signal: command.as_ref().and_then(|c| c.killed_by_signal).map(crate::stream::interrupt::name),
            duration_ms: command.as_ref().and_then(|c| c.duration_ms),
            interrupted: interrupted.map(crate::stream::interrupt::name),
            extra: Default::default(),
            notes,
        };
        if let Some(d) = detected {
            info.extra.insert("detected".into(), d.into());
        }
        if let Some(s) = self.stream {
            info.extra.insert("stream".into(), s.name().into());
        }
        if let Some(f) = &self.families {
            family::annotate(&mut info, &sc, f, command.as_ref());
        }
        let folded = match (passthrough, self.sinks.json.take(), self.sinks.ndjson.as_ref()) {
            (Some(_), _, _) => None,
            (None, Some(json), _) => match json.fold(&ctx) {
                Ok(text) => Some(text),
                Err(fallback) => {
                    // Not JSON (or too large to fold): the text envelope,
                    // with the reason in the header; the metadata follows.
                    let mut why = serde_json::Map::new();
                    why.insert("reason".into(), fallback.reason.clone().into());
                    why.insert("line".into(), fallback.line.into());
                    why.insert("column".into(), fallback.column.into());
                    info.extra.insert("json_error".into(), why.into());
                    // In wrap mode stderr shares the stream unless kept apart.
                    let hint = if command.is_some() && self.stream.is_none() {
                        " (the command's stderr is in the same stream; --stderr separate keeps it out)"
                    } else {
                        ""
                    };
                    info.notes.push(format!("not folded as JSON: {fallback}{hint}; the text envelope follows"));
                    if let Some((store, mut meta)) = committed.take() {
                        meta.strategy = "text-envelope".into();
                        if let Err(e) = store.write_meta(&meta) {
                            eprintln!("outbox: could not update the metadata of {}: {e}", meta.id);
                        }
                    }
                    None
                }
            },
            (None, None, Some(nd)) => Some(nd.render(&ctx)),
            (None, None, None) => None,
        };
        let to_stderr = passthrough.is_some() && self.raw_output() == "stderr";
        let printed = match (passthrough, folded) {
            (Some(raw), _) if to_stderr => write_stderr(raw),
            (Some(raw), _) => write_stdout(raw),
            (None, Some(text)) => write_stdout(text.as_bytes()),
            (None, None) => {
                let budgets = Budgets {
                    budget,
                    tail_budget: self.args.tail_budget,
                    head_budget: self.args.head_budget,
                    tail_lines: self.args.tail,
                    spill_limit: self.args.spill_limit,
                };
                let text = envelope::render(&sc, &budgets, &info, &self.signal);
                write_stdout(text.as_bytes())
            }
        };
        if let Err(e) = printed {
            // A reader that went away (`| head`) is not a failure: the spill
            // is already safe.
            if e.kind() != io::ErrorKind::BrokenPipe {
                failed = true;
                report_output_error(if to_stderr { "stderr" } else { "stdout" }, &e, full_output.as_ref());
            }
        }
        Outcome { failed, interrupted, full_output }
    }
}

fn write_stdout(bytes: &[u8]) -> io::Result<()> {
    let stdout = io::stdout();
    let mut lock = stdout.lock();
    lock.write_all(bytes)?;
    lock.flush()
}

fn write_stderr(bytes: &[u8]) -> io::Result<()> {
    let stderr = io::stderr();
    let mut lock = stderr.lock();
    lock.write_all(bytes)?;
    lock.flush()
}

fn report_output_error(to: &str, e: &io::Error, path: Option<&PathBuf>) {
    match path {
        Some(p) => eprintln!("outbox: cannot write to {to} ({e}); the full output is kept at {}", p.display()),
        None => eprintln!("outbox: cannot write to {to} ({e}); the full output could not be kept either"),
    }
}

/// `CMD | outbox`: envelope standard input.
pub fn run_stdin(args: &RunOptions) -> anyhow::Result<u8> {
    if args.stderr == StderrMode::Separate {
        anyhow::bail!(
            "--stderr separate needs a command to run (outbox --stderr separate -- CMD [ARGS...]); \
`CMD | outbox` reads one stream, and the command's stderr never reaches it"
        );
    }
    crate::stream::interrupt::install();
    let mut session = Session::start(args, "stdin")?;
    {
        use std::io::IsTerminal;
        // `outbox` typed alone waits for input that a person may not know
        // it wants; say so where that person is looking.
        if io::stdin().is_terminal() && io::stderr().is_terminal() {
            eprintln!(
                "outbox: reading standard input from the terminal; end it with Ctrl-D \
(to run a command and envelope its output: outbox -- CMD [ARGS...])"
            );
        }
    }
    let reader = Reader::stdin(args.mmap);
    let ingest = session.ingest(reader);
    Ok(session.finish(ingest, None).exit_code())
}
