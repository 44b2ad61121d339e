//! One envelope run, shared by `CMD | outbox` and wrap mode: open the store,
//! ingest, then end the run in visible steps (`finish.rs`): settle the
//! strategy, commit once, render, print, and decide the exit status.
//!
//! Exit status (text mode): 0; 1 when outbox failed or the full output could
//! not be kept (the envelope is still printed); 128+N when interrupted by
//! signal N. Wrap mode maps these onto the command's status (see wrap.rs).

use std::io::{self, Write};
use std::path::PathBuf;

use regex::bytes::Regex;

pub mod family;
mod finish;
pub mod history;
pub mod layout;
pub mod options;

use crate::json::ndjson::NdjsonFolder;
use crate::json::{Detected, JsonCollector};
use crate::render::envelope::{self, Budgets};
use crate::store::{self, Store};
use crate::stream::ingest::{self, BlockSink, Ingest};
use crate::stream::input::Reader;
use crate::stream::scan::{ScanConfig, Scanner};
use crate::stream::spill::SpillTarget;
pub use options::{EnvelopeMode, Format, Harness, RunOptions, StderrMode, MIN_BUDGET};

pub use crate::render::facts::{CommandInfo, RunFacts, Strategy, Stream};

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

impl Stream {
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
    /// Print the stream itself, made safe (stdout's to stdout, stderr's to
    /// stderr).
    pub passthrough: bool,
    /// This stream's share of `--budget`.
    pub budget: usize,
}

/// What a finished stream needs, for deciding a [`Plan`].
#[derive(Debug, Clone, Copy)]
pub struct Measure {
    pub bytes: u64,
    /// Characters passthrough would print (the safe copy) when the stream
    /// is kept whole; the input's characters otherwise.
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
    /// Where this session's envelope goes: stdout, except stderr's when
    /// stdout's is a JSON document (`--format json|ndjson|auto` with
    /// `--stderr separate`), which must stay the only thing on stdout.
    envelope_to: Stream,
    /// Notes the caller adds for the envelope (before the head).
    notes: Vec<String>,
    /// The scan is ended (see `finish_scan`; `measure` and `finish` both
    /// end it).
    scan_ended: bool,
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

    /// The strategy the format asks for, before the input is judged.
    fn planned_strategy(&self) -> Strategy {
        if self.json.is_some() {
            Strategy::JsonShape
        } else if self.ndjson.is_some() {
            Strategy::NdjsonShape
        } else {
            Strategy::TextEnvelope
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
        let mut envelope_to = Stream::Stdout;
        if stream == Some(Stream::Stderr) {
            label = store::sanitize_label(&format!("{label}.stderr"), "stderr");
            if args.format != Format::Text {
                envelope_to = Stream::Stderr;
            }
            args.format = Format::Text;
        }
        let args = &args;
        let store = args
            .store
            .dir()
            .map_err(|e| e.to_string())
            .and_then(|d| usable_dir(d.to_path_buf()))
            .and_then(|_| Store::open_env(&args.store).map_err(|e| e.to_string()));
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
        // A listing's units may go unclassified only where the stored copy
        // can be read again, should the layout turn out otherwise.
        if target.is_some() {
            scanner.allow_unit_skip();
        }
        let sinks = Sinks::new(scanner, args);
        Ok(Session {
            args: args.clone(),
            label,
            store,
            target,
            sinks,
            signal,
            stream,
            plan: None,
            families,
            envelope_to,
            notes: Vec::new(),
            scan_ended: false,
        })
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// The temporary file the output is being stored in, until the input
    /// ends and it becomes the entry (for a detached run's record, so what
    /// has arrived can be read while the command runs).
    pub fn spill_path(&self) -> Option<&std::path::Path> {
        self.target.as_ref().map(|t| t.path.as_path())
    }

    /// Where this stream's own bytes go when copied or passed through:
    /// stderr's to stderr, anything else to stdout. Envelopes go to stdout
    /// (see `envelope_to` for the one exception).
    fn raw_output(&self) -> Stream {
        match self.stream {
            Some(Stream::Stderr) => Stream::Stderr,
            _ => Stream::Stdout,
        }
    }

    /// Reads the input to its end (or to an interruption).
    pub fn ingest(&mut self, reader: Reader) -> Ingest {
        let tee_mode = self.args.envelope == EnvelopeMode::Never;
        let to_stderr = self.raw_output() == Stream::Stderr;
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

    /// The finished stream's size, what passthrough would print, and the
    /// budget its envelope needs to show all of it (computed by the
    /// renderer's size rule, with a header sized for the longest path and
    /// command it may have to name).
    pub fn measure(&mut self, ingest: &Ingest) -> Measure {
        self.finish_scan(ingest);
        let sc = self.scanned();
        let text = self.sinks.planned_strategy() == Strategy::TextEnvelope;
        let printed = match sc.head_is_all && !sc.binary {
            true => envelope::safe_copy(sc.head).chars().count() as u64,
            false => sc.chars,
        };
        let whole_envelope = (sc.head_is_all && text).then(|| {
            let dir = self.store.as_ref().map_or(0, |s| s.dir().as_os_str().len());
            let facts = RunFacts {
                label: self.label.clone(),
                id: format!("{}-000000000000", self.label),
                full_output: Some("x".repeat(dir + self.label.len() + 14)),
                command: Some(CommandInfo {
                    command: "x".repeat(crate::render::facts::COMMAND_CHARS),
                    exit_status: Some(255),
                    killed_by_signal: None,
                    duration_ms: Some(u32::MAX as u64),
                    timed_out: true,
                    timeout_ms: Some(u32::MAX as u64),
                }),
                stream: Some(Stream::Stdout),
                // The widest extras a finished run can have.
                extra: [
                    ("tokens_est".to_string(), u64::MAX.into()),
                    ("tokens_method".to_string(), "bytes/4".into()),
                    ("timed_out".to_string(), true.into()),
                    ("history".to_string(), crate::history::Observation::widest_json()),
                ]
                .into_iter()
                .collect(),
                ..RunFacts::default()
            };
            let mut facts = facts;
            if !layout::annotate(&mut facts, &sc) {
                if let Some(f) = &self.families {
                    // The longest ending the summary can state.
                    let worst = CommandInfo {
                        exit_status: Some(255),
                        timed_out: true,
                        timeout_ms: Some(u64::MAX / 2),
                        ..CommandInfo::default()
                    };
                    family::annotate(&mut facts, &sc, f, Some(&worst));
                }
            }
            envelope::whole_budget(&sc, &self.budgets(0), &facts)
        });
        Measure { bytes: sc.bytes, chars: printed, binary: sc.binary, kept_whole: sc.head_is_all, whole_envelope }
    }

    /// Ends the scan; when the scanner passed over lines it took for a
    /// listing's units and the layout is not that listing after all, the
    /// stored copy is scanned again with nothing skipped (see
    /// `Scanner::allow_unit_skip`). Where that copy cannot be read, the
    /// envelope says which lines were not searched.
    fn finish_scan(&mut self, ingest: &Ingest) {
        if std::mem::replace(&mut self.scan_ended, true) {
            return;
        }
        let scanner = &mut self.sinks.scanner;
        scanner.finish();
        if !scanner.needs_rescan() {
            return;
        }
        if crate::stream::spill::debug_enabled() {
            crate::text::stderr::say(format_args!(
                "scan: lines 1-{} read as a listing's entries; the layout is not a listing: scanning the stored copy again",
                scanner.skipped_through()
            ));
        }
        let stored = ingest.spill.temp.as_deref().filter(|_| ingest.spill.error.is_none());
        let again = match stored.map(std::fs::File::open) {
            Some(Ok(mut f)) => scanner.rescan(&mut f).map_err(|e| e.to_string()),
            Some(Err(e)) => Err(e.to_string()),
            None => Err("no stored copy".to_string()),
        };
        match again {
            Ok(sc) if sc.bytes() == scanner.bytes() => *scanner = sc,
            Ok(_) => self.note_unsearched("the stored copy's size differs".into()),
            Err(e) => self.note_unsearched(e),
        }
    }

    fn note_unsearched(&mut self, why: String) {
        let lines = self.sinks.scanner.skipped_through();
        self.note(format!(
            "signal lines may be missing from lines 1-{lines} (read as listing entries; rereading failed: {why})"
        ));
    }

    /// The budgets of the text envelope, at `budget` in all. Lines the
    /// reader asked for (`keep_head_lines`, `keep_tail_lines`) raise the
    /// head's and the tail's reservations to what they take, so they come
    /// before signal lines; the envelope still never exceeds the budget.
    fn budgets(&self, budget: usize) -> Budgets {
        let mut b = Budgets {
            budget,
            tail_budget: self.args.tail_budget,
            head_budget: self.args.head_budget,
            tail_lines: self.args.tail,
            spill_limit: self.args.spill_limit,
        };
        if self.args.keep_head_lines.is_none() && self.args.keep_tail_lines.is_none() {
            return b;
        }
        let sc = self.sinks.scanner.result();
        if let Some(n) = self.args.keep_head_lines {
            b.head_budget = b.head_budget.max(head_chars(sc.head, n));
        }
        if let Some(n) = self.args.keep_tail_lines {
            b.tail_lines = b.tail_lines.max(n);
            b.tail_budget = b.tail_budget.max(tail_chars(sc.tail, n));
        }
        b
    }

    /// The scanner's result, with the lines the reader asked to see one by
    /// one (`keep_head_lines`, `keep_tail_lines`) marked unfoldable.
    fn scanned(&self) -> crate::stream::scan::Scanned<'_> {
        let mut sc = self.sinks.scanner.result();
        sc.unfolded_head = self.args.keep_head_lines.unwrap_or(0) as u64;
        sc.unfolded_tail = self.args.keep_tail_lines.unwrap_or(0) as u64;
        sc
    }

    /// Adds a note to the envelope (said before the head), such as why the
    /// input ended early.
    pub fn note(&mut self, text: String) {
        self.notes.push(text);
    }

    /// Prints as `plan` says instead of deciding alone (`--stderr separate`).
    pub fn set_plan(&mut self, plan: Plan) {
        self.plan = Some(plan);
    }
}

/// Characters the first `n` lines of `head` take when printed, markers
/// and their room for escapes included (an estimate from above).
fn head_chars(head: &[u8], n: usize) -> usize {
    let mut total = 64;
    for line in head.split(|&b| b == b'\n').take(n) {
        total += crate::text::utf8::count_chars(line) as usize + 2;
    }
    total
}

/// The same for the last `n` lines the tail ring holds.
fn tail_chars(tail: &crate::stream::tail::TailRing, n: usize) -> usize {
    use crate::stream::line::LineBody;
    let mut total = 64;
    for line in tail.lines().rev().take(n) {
        total += match line.body() {
            LineBody::Whole(b) => crate::text::utf8::count_chars(b) as usize,
            LineBody::Cut { chars, .. } => chars as usize,
        } + 2;
    }
    total
}

/// A store directory whose path is not UTF-8 cannot be named in a header
/// (`full_output` would name a path that does not exist): refused, as an
/// unusable store is.
fn usable_dir(dir: PathBuf) -> Result<PathBuf, String> {
    match dir.to_str() {
        Some(_) => Ok(dir),
        None => Err(format!(
            "the store directory {} is not valid UTF-8, so its path cannot be printed as full_output; \
use --dir or OUTBOX_DIR with a UTF-8 path",
            dir.display()
        )),
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

fn report_output_error(to: Stream, e: &io::Error, path: Option<&PathBuf>) {
    let to = to.as_str();
    match path {
        Some(p) => crate::say!("cannot write to {to} ({e}); the full output is kept at {}", store::path_text(p)),
        None => crate::say!("cannot write to {to} ({e}); the full output could not be kept either"),
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
            crate::say!(
                "reading standard input from the terminal; end it with Ctrl-D \
(to run a command and envelope its output: outbox -- CMD [ARGS...])"
            );
        }
    }
    let reader = Reader::stdin().map_err(|e| anyhow::anyhow!("cannot read standard input: {e}"))?;
    let ingest = session.ingest(reader);
    let command = args.status_file.as_deref().map(|f| status_from_file(f, session.label()));
    Ok(session.finish(ingest, command).exit_code())
}

/// `--status-file`: the agent hook's rewrite (`{ CMD; echo $? > F; } |
/// outbox --status-file F`) writes the command's status before its output
/// ends, so the file is complete when input ends. The command is named by
/// the label; an unreadable file leaves the status unknown (null).
fn status_from_file(path: &std::path::Path, label: &str) -> CommandInfo {
    let exit_status = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse::<i32>().ok());
    if exit_status.is_none() {
        crate::say!("the command's exit status could not be read from {}", store::path_text(path));
    }
    CommandInfo { command: label.to_string(), exit_status, ..CommandInfo::default() }
}
