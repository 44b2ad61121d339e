//! `--progress`: bytes, lines, rate and elapsed time on stderr while
//! reading; with a regular file on stdin also the percentage and the time
//! left. Drawn by indicatif at most a few times a second, only when stderr
//! is a terminal (a log file or an agent's capture never receives
//! carriage-return noise), and cleared before the envelope prints so the
//! envelope is never interleaved with a half-drawn bar.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::stream::ingest::Progress;

pub struct Meter {
    bar: ProgressBar,
}

impl Meter {
    /// A meter on stderr, or None when stderr is not a terminal.
    pub fn stderr() -> Option<Meter> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(5));
        bar.set_style(streaming_style());
        bar.set_message("0");
        bar.enable_steady_tick(Duration::from_millis(200));
        // A first frame at once: a short run still shows what it read.
        bar.tick();
        Some(Meter { bar })
    }
}

fn streaming_style() -> ProgressStyle {
    ProgressStyle::with_template("outbox: {binary_bytes} read, {msg} lines, {binary_bytes_per_sec}, {elapsed}")
        .expect("a valid progress template")
}

fn file_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "outbox: {binary_bytes}/{binary_total_bytes} ({percent}%), {msg} lines, {binary_bytes_per_sec}, {elapsed}, {eta} left",
    )
    .expect("a valid progress template")
}

impl Progress for Meter {
    fn total(&mut self, bytes: Option<u64>) {
        if let Some(n) = bytes.filter(|&n| n > 0) {
            self.bar.set_length(n);
            self.bar.set_style(file_style());
            self.bar.tick();
        }
    }

    fn update(&mut self, bytes: u64, lines: u64) {
        self.bar.set_position(bytes);
        self.bar.set_message(lines.to_string());
    }

    fn done(&mut self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        // An interrupted run must not leave a bar drawn over the envelope.
        if !self.bar.is_finished() {
            self.bar.finish_and_clear();
        }
    }
}
