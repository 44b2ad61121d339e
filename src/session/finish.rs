//! The end of a run, as visible steps: gather the run's facts, settle the
//! strategy (trying the JSON fold, which may fall back to text), commit the
//! stored copy once with the settled strategy, render, print, and report
//! the outcome.
//!
//! Invariants: the metadata is written once, after the strategy is known,
//! so it never has to be rewritten; every header is written from one
//! [`RunFacts`]; what is printed is never longer than the budget the header
//! states (raised above `--budget` only when the store path is too long for
//! it, and then said on stderr).

use std::io;
use std::path::PathBuf;

use crate::json::ndjson::NdjsonFolder;
use crate::json::{FoldContext, JsonCollector};
use crate::render::envelope;
use crate::render::facts::{CommandInfo, RunFacts, Strategy, Stream};
use crate::session::{history, report_output_error, write_stderr, write_stdout, EnvelopeMode, Outcome, Session};
use crate::store::{self, Meta};
use crate::stream::ingest::Ingest;
use crate::stream::input::Stop;
use crate::stream::scan::Scanned;

/// What the settled strategy prints.
enum Body {
    /// `--envelope never`: the input was copied while it was read.
    Tee,
    /// Small input, made safe to print, to this stream's own descriptor.
    Passthrough(String),
    /// The JSON fold, made while settling (it names the path the commit
    /// is about to give the stored copy).
    Json(String),
    /// The NDJSON fold, rendered once the facts are final.
    Ndjson(Box<NdjsonFolder>),
    /// The text envelope.
    Text,
}

impl Session {
    /// Commits the spill, prints the envelope (or the input itself) and
    /// reports how it went. Problems with outbox go to stderr as well.
    pub fn finish(mut self, mut ingest: Ingest, command: Option<CommandInfo>) -> Outcome {
        let tee_error = ingest.tee_error.take();
        // The command may name the listing's tool, which the layout (and so
        // whether the scan is read again) takes into account.
        self.sinks.scanner.set_command(command.as_ref().map(|c| c.command.as_str()));
        self.finish_scan(&ingest);
        let json = self.sinks.json.take();
        let ndjson = self.sinks.ndjson.take();
        let sc = self.scanned();
        if let Some(outcome) = self.quiet_when_empty(&sc, &ingest) {
            return outcome;
        }
        let mut facts = self.facts(&sc, &ingest, command);
        // Before settling: the JSON fold's header carries the history too.
        let (observation, pending) = self.observe_history(&sc, &ingest, &mut facts).unzip();
        let (asked, budget) = self.budget(&sc, &facts);
        // A JSON document too large to hold is folded from the stored copy.
        let stored = ingest.spill.temp.as_deref().filter(|_| ingest.spill.error.is_none());
        let body = self.settle(&sc, &mut facts, json, ndjson, budget, stored);
        let predicted = facts.full_output.clone();
        let full_output = self.commit(&sc, &ingest, &mut facts);
        // The header names the final path: a store that named the entry
        // otherwise (or failed) may need a different budget.
        let budget = budget.max(self.budget(&sc, &facts).1);
        let mut failed = report(&ingest, &facts);
        if budget > asked && !matches!(body, Body::Tee | Body::Passthrough(_)) {
            crate::say!(
                "note: --budget {asked} cannot hold a header naming the store path ({} characters); \
the envelope uses a budget of {budget} (a shorter --dir needs less)",
                facts.full_output.as_deref().map_or(0, |p| p.chars().count())
            );
        }
        let body = match body {
            // The fold named a stored copy that the commit did not make
            // there: its header would name a path that does not exist.
            Body::Json(_) if facts.full_output != predicted => {
                facts.strategy = Strategy::TextEnvelope;
                Body::Text
            }
            b => b,
        };
        let chars = |t: &str| t.chars().count() as u64;
        let (printed, to, shown) = match body {
            Body::Tee => (tee_error.map_or(Ok(()), Err), self.raw_output(), sc.chars),
            Body::Passthrough(text) => (print(self.raw_output(), text.as_bytes()), self.raw_output(), chars(&text)),
            Body::Json(text) => (print(Stream::Stdout, text.as_bytes()), Stream::Stdout, chars(&text)),
            Body::Ndjson(nd) => {
                let text = nd.render(&self.fold_context(&sc, &facts, budget));
                (print(Stream::Stdout, text.as_bytes()), Stream::Stdout, chars(&text))
            }
            Body::Text => {
                let text = envelope::render(&sc, &self.budgets(budget), &facts, &self.signal);
                (print(self.envelope_to, text.as_bytes()), self.envelope_to, chars(&text))
            }
        };
        // The run's record, with what the reader was given (`outbox stats`).
        if let Some(p) = pending {
            let id = if full_output.is_some() { facts.id.as_str() } else { "" };
            if let Err(e) = p.append(shown, facts.strategy.as_str(), id) {
                crate::say!("could not record this run in the history: {e}");
            }
        }
        if to == self.raw_output() && facts.strategy == Strategy::Passthrough {
            if let Some(t) = observation.as_ref().and_then(|o| o.trend.as_ref()).filter(|t| t.is_near(NEAR_RUNS)) {
                warn_near_boundary(&self.label, t);
            }
        }
        if let Err(e) = printed {
            // A reader that went away (`| head`) is not a failure: the spill
            // is already safe.
            if e.kind() != io::ErrorKind::BrokenPipe {
                failed = true;
                report_output_error(to, &e, full_output.as_ref());
            }
        }
        Outcome { failed, interrupted: facts.interrupted, full_output }
    }

    /// Empty output prints nothing and keeps no entry (`grep -q` in a loop,
    /// a search with no hit, `git diff` with no change): a header larger
    /// than nothing would be noise. `--envelope always` still states it, and
    /// an interrupted or failed read is still reported.
    fn quiet_when_empty(&self, sc: &Scanned, ingest: &Ingest) -> Option<Outcome> {
        let interrupted = matches!(ingest.stop, Some(Stop::Signal(_)));
        if sc.bytes != 0 || self.args.envelope == EnvelopeMode::Always || interrupted || ingest.read_error.is_some() {
            return None;
        }
        crate::stream::interrupt::set_temp_path(self.stream.map_or(0, Stream::temp_slot), None);
        let mut failed = false;
        if let (Ok(store), Some(temp)) = (&self.store, ingest.spill.temp.as_ref()) {
            if let Err(e) = store.discard(temp) {
                failed = true;
                crate::say!("could not remove an empty temporary file: {e}");
            }
        }
        Some(Outcome { failed, interrupted: None, full_output: None })
    }

    /// The facts known before the strategy is settled; `full_output` is the
    /// path the commit will give the stored copy (or None with the reason
    /// when the store or the spill already failed).
    fn facts(&self, sc: &Scanned, ingest: &Ingest, command: Option<CommandInfo>) -> RunFacts {
        let id = store::entry_id(&self.label, &ingest.spill.digest);
        let (full_output, spill_error) = match (&self.store, ingest.spill.temp.as_ref(), ingest.spill.error.as_ref()) {
            (Err(e), _, _) => (None, Some(e.clone())),
            (Ok(_), _, Some(e)) => (None, Some(format!("writing the spill failed: {e}"))),
            (Ok(_), None, None) => (None, Some("the spill file was lost".to_string())),
            (Ok(store), Some(_), None) => (Some(store.data_path(&id).to_string_lossy().into_owned()), None),
        };
        let mut notes = self.notes.clone();
        if let Some(e) = &ingest.read_error {
            notes.push(format!("reading the input failed after {} bytes: {e}", sc.bytes));
        }
        let mut extra = extra(sc);
        if command.as_ref().is_some_and(|c| c.timed_out) {
            extra.insert("timed_out".into(), true.into());
        }
        let mut facts = RunFacts {
            label: self.label.clone(),
            id,
            full_output,
            spill_error,
            strategy: self.sinks.planned_strategy(),
            stream: self.stream,
            detected: self.sinks.detected.map(crate::json::Detected::as_str),
            command,
            interrupted: match ingest.stop {
                Some(Stop::Signal(sig)) => Some(sig),
                _ => None,
            },
            notes,
            extra,
            new_shapes: Vec::new(),
        };
        if crate::session::layout::annotate(&mut facts, sc) {
            return facts;
        }
        if let Some(engine) = &self.families {
            let command = facts.command.clone();
            crate::session::family::annotate(&mut facts, sc, engine, command.as_ref());
        }
        facts
    }

    /// Appends this run to its command's series and puts what the series
    /// says in the header. The id is the one the commit will use unless
    /// another entry holds these digits (then the record names the short
    /// one). A history that cannot be written must not fail a run whose
    /// output is safe: it is said on stderr.
    fn observe_history(
        &self,
        sc: &Scanned,
        ingest: &Ingest,
        facts: &mut RunFacts,
    ) -> Option<(history::Observation, history::Pending)> {
        // Runs are compared only where the series key names a command
        // (wrap mode, the wrappers, the hook, `--label`): unlabelled pipes
        // in one directory are unrelated commands, never one series.
        if self.args.label.is_none() && facts.command.is_none() {
            return None;
        }
        let store = self.store.as_ref().ok()?;
        ingest.spill.temp.as_ref()?;
        let kinds: Vec<u64> = sc.signals.kinds_seen().map(|k| k.0).collect();
        let names: Vec<String> = sc
            .signals
            .kinds_seen()
            .map(|k| crate::render::kinds::label_of(k.1, k.2, crate::history::series::NAME_CHARS))
            .collect();
        let run = history::RunFigures {
            label: &self.label,
            command: facts.command.as_ref(),
            chars: sc.chars,
            bytes: sc.bytes,
            lines: sc.lines,
            signals: sc.signals.hits(),
            errors: sc.signals.count(crate::family::Severity::Error),
            warnings: sc.signals.count(crate::family::Severity::Warning),
            shapes: &kinds,
            names: &names,
            id: &facts.id,
            digest: &store::digest_hex(&ingest.spill.digest),
            complete: facts.interrupted.is_none() && ingest.read_error.is_none(),
        };
        let (observation, pending) = match history::observe(store, &self.args, &run) {
            Ok(o) => o,
            Err(e) => {
                crate::say!("could not record this run in the history: {e}");
                return None;
            }
        };
        if observation.says_anything() {
            facts.extra.insert("history".into(), observation.to_json());
        }
        if let Some(c) = &observation.change {
            facts.new_shapes = c.new_shapes.clone();
            // What is gone, named in one line (a kind is named as its run
            // recorded it: its code, or its template).
            if !c.gone_names.is_empty() && c.same_as.is_none() {
                facts.notes.push(format!("gone since the previous run: {}", c.gone_names.join(", ")));
            }
        }
        // The summary line says it too: `same as 3 min ago`, new shapes,
        // the boundary ahead.
        if let (Some(phrase), Some(summary)) =
            (observation.phrase(), facts.notes.first_mut().filter(|n| n.starts_with("summary: ")))
        {
            summary.push_str("; ");
            summary.push_str(&phrase);
        }
        Some((observation, pending))
    }

    /// This stream's budget as asked (its share, with `--stderr
    /// separate`), and as used: raised only as far as a header naming the
    /// whole store path needs.
    fn budget(&self, sc: &Scanned, facts: &RunFacts) -> (usize, usize) {
        let asked = self.plan.map_or(self.args.budget, |p| p.budget);
        (asked, envelope::min_budget(sc, &self.budgets(asked), facts))
    }

    /// Decides how the output is made: a raw copy, passthrough, the JSON
    /// fold (or the text envelope it falls back to, with the reason in the
    /// header), the NDJSON fold or the text envelope.
    fn settle(
        &self,
        sc: &Scanned,
        facts: &mut RunFacts,
        json: Option<JsonCollector>,
        ndjson: Option<NdjsonFolder>,
        budget: usize,
        stored: Option<&std::path::Path>,
    ) -> Body {
        let (strategy, body) = if self.args.envelope == EnvelopeMode::Never {
            (Strategy::Tee, Body::Tee)
        } else if let Some(text) = self.passthrough(sc, facts) {
            (Strategy::Passthrough, Body::Passthrough(text))
        } else if let Some(json) = json {
            facts.strategy = Strategy::JsonShape;
            match json.fold(&self.fold_context(sc, facts, budget), stored) {
                Ok(text) => (Strategy::JsonShape, Body::Json(text)),
                Err(fallback) => {
                    // Not JSON (or too large to fold): the text envelope,
                    // with the reason in the header.
                    let mut why = serde_json::Map::new();
                    why.insert("reason".into(), fallback.reason.clone().into());
                    why.insert("line".into(), fallback.line.into());
                    why.insert("column".into(), fallback.column.into());
                    facts.extra.insert("json_error".into(), why.into());
                    // In wrap mode stderr shares the stream unless kept apart.
                    let hint = if facts.command.is_some() && self.stream.is_none() {
                        " (the command's stderr is in the same stream; --stderr separate keeps it out)"
                    } else {
                        ""
                    };
                    facts.notes.push(format!("not folded as JSON: {fallback}{hint}; the text envelope follows"));
                    (Strategy::TextEnvelope, Body::Text)
                }
            }
        } else if let Some(nd) = ndjson {
            (Strategy::NdjsonShape, Body::Ndjson(Box::new(nd)))
        } else {
            (Strategy::TextEnvelope, Body::Text)
        };
        facts.strategy = strategy;
        body
    }

    /// The safe copy to print instead of an envelope, when the plan (for
    /// two streams) or the contract's rule (for one) says so.
    fn passthrough(&self, sc: &Scanned, facts: &RunFacts) -> Option<String> {
        match self.plan {
            Some(p) if p.passthrough => Some(envelope::safe_copy(sc.head)),
            Some(_) => None,
            None if self.args.envelope == EnvelopeMode::Auto && facts.interrupted.is_none() => {
                envelope::passthrough(sc, self.args.budget)
            }
            None => None,
        }
    }

    /// Stores the spill once, with the settled strategy; on failure the
    /// facts say why and name no path.
    fn commit(&self, sc: &Scanned, ingest: &Ingest, facts: &mut RunFacts) -> Option<PathBuf> {
        let result = match (&self.store, ingest.spill.temp.as_ref()) {
            (Ok(store), Some(temp)) if facts.spill_error.is_none() => {
                let mut meta = meta(sc, ingest, facts, store.ttl_seconds());
                store.commit(temp, &mut meta).and_then(|entry| {
                    store::maybe_collect(store, &entry.id);
                    // Collection spares this run's entry and every young
                    // one; should anything else have removed it meanwhile,
                    // the envelope must not name a file that is gone.
                    if !store.holds_entry(&entry.id) {
                        return Err(io::Error::other(format!(
                            "the stored copy {} was removed right after it was made (by outbox rm or gc in \
                             another process); re-run the command to keep it",
                            entry.id
                        )));
                    }
                    // Longer than predicted when another entry holds the
                    // short id's digits.
                    facts.id = entry.id;
                    Ok(entry.path)
                })
            }
            _ => Err(io::Error::other("no stored copy")),
        };
        crate::stream::interrupt::set_temp_path(self.stream.map_or(0, Stream::temp_slot), None);
        match result {
            Ok(path) => {
                facts.full_output = Some(path.to_string_lossy().into_owned());
                Some(path)
            }
            Err(e) => {
                if facts.spill_error.is_none() {
                    facts.spill_error = Some(e.to_string());
                }
                facts.full_output = None;
                None
            }
        }
    }
}

/// Problems with outbox itself go to stderr too; true when the run failed.
fn report(ingest: &Ingest, facts: &RunFacts) -> bool {
    let mut failed = false;
    if let Some(e) = &facts.spill_error {
        failed = true;
        crate::say!("the full output could not be kept: {e}");
    }
    if let Some(e) = &ingest.read_error {
        failed = true;
        crate::say!("reading the input failed: {e}");
    }
    failed
}

impl Session {
    fn fold_context<'a>(&self, sc: &Scanned, facts: &'a RunFacts, budget: usize) -> FoldContext<'a> {
        FoldContext { facts, bytes: sc.bytes, chars: sc.chars, budget, samples: self.args.samples }
    }
}

/// The store's metadata, built from the run's facts.
fn meta(sc: &Scanned, ingest: &Ingest, facts: &RunFacts, ttl_seconds: u64) -> Meta {
    Meta {
        id: facts.id.clone(),
        label: facts.label.clone(),
        strategy: facts.strategy.as_str().into(),
        created: store::now_secs(),
        ttl_seconds,
        bytes: sc.bytes,
        chars: sc.chars,
        lines: sc.lines,
        complete: facts.interrupted.is_none() && ingest.read_error.is_none(),
        interrupted_by: facts.interrupted_name(),
        // The metadata keeps the command whole; headers shorten it.
        command: facts.command.as_ref().map(|c| c.command.clone()),
        exit_status: facts.exit_status(),
        signal: facts.command.as_ref().and_then(|c| c.killed_by_signal),
        duration_ms: facts.duration_ms(),
        digest: store::digest_hex(&ingest.spill.digest),
    }
}

/// Header facts every run carries: an estimate of tokens, with its method
/// (Codex's: bytes / 4), beside chars and bytes.
fn extra(sc: &Scanned) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("tokens_est".into(), sc.bytes.div_ceil(4).into());
    m.insert("tokens_method".into(), "bytes/4".into());
    m
}

/// Runs ahead within which a rising series is reported near its boundary.
const NEAR_RUNS: f64 = 20.0;

/// One line on stderr when output passed through unchanged but its series
/// is near the boundary or heading for it: the day it crosses, the reader
/// will suddenly see an envelope instead.
fn warn_near_boundary(label: &str, t: &crate::history::trend::Trend) {
    let unit = t.unit.name();
    match (t.runs_left, t.slope_per_run) {
        (Some(left), Some(slope)) => crate::say!(
            "{label}: output is growing {slope:+} {unit} a run (now about {} of a {}-{unit} boundary); it crosses in about {} runs",
            t.level,
            t.boundary,
            left.round()
        ),
        _ => crate::say!("{label}: output is at {} of a {}-{unit} boundary", t.level, t.boundary),
    }
}

fn print(to: Stream, bytes: &[u8]) -> io::Result<()> {
    match to {
        Stream::Stdout => write_stdout(bytes),
        Stream::Stderr => write_stderr(bytes),
    }
}
