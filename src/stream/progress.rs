//! `--progress`: bytes, lines and rate on stderr while reading, redrawn at
//! most five times a second, and only when stderr is a terminal (a log file
//! or an agent's capture never receives carriage-return noise).

use std::io::Write;
use std::time::{Duration, Instant};

use crate::stream::ingest::Progress;

pub struct Meter {
    start: Instant,
    last: Instant,
    drawn: bool,
    bytes: u64,
    lines: u64,
}

impl Meter {
    /// A meter on stderr, or None when stderr is not a terminal.
    pub fn stderr() -> Option<Meter> {
        let tty = unsafe { libc::isatty(2) } == 1;
        tty.then(|| {
            let now = Instant::now();
            Meter { start: now, last: now, drawn: false, bytes: 0, lines: 0 }
        })
    }

    fn draw(&mut self) {
        let secs = self.start.elapsed().as_secs_f64().max(1e-3);
        let rate = self.bytes as f64 / secs;
        let mut err = std::io::stderr().lock();
        let _ =
            write!(err, "\r\x1b[Koutbox: {} read, {} lines, {}/s", human(self.bytes as f64), self.lines, human(rate));
        let _ = err.flush();
        self.drawn = true;
    }
}

impl Progress for Meter {
    fn update(&mut self, bytes: u64, lines: u64) {
        self.bytes = bytes;
        self.lines = lines;
        if self.last.elapsed() >= Duration::from_millis(200) {
            self.last = Instant::now();
            self.draw();
        }
    }

    fn done(&mut self) {
        if self.drawn || self.bytes > 0 {
            self.draw();
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// 1536 -> "1.5 KiB".
pub fn human(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}
