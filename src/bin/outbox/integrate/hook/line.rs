//! The one grammar every agent's hook uses to decide what is safe to
//! rewrite: the lines agents type most, read with the whitelist tokenizer
//! of words.rs, and nothing else.
//!
//! ```text
//! line    := [cd] command [cut]
//! cd      := 'cd' word '&&'                     (the shell's own cd, kept as typed)
//! command := assign* name word* ['2>&1']        (assign: NAME=value, no glob, no `~`)
//! cut     := '|' ('head' | 'tail') [count]      (count: -N, -n N, -nN, --lines=N, --lines N)
//! ```
//!
//! Invariants:
//! - The text of the line is kept byte for byte in the rewrite; only the
//!   cut is replaced (by the envelope), so the agent's shell reads the `cd`,
//!   the assignments, the command and its globs exactly as it would have.
//! - The command's name is a plain word (no quotes, no glob, no `=`), and
//!   the words the wrapping rule reads (subcommands, `never` arguments) are
//!   never globs: a glob may expand to anything.
//! - `head`/`tail` with anything but one line count (`-c`, `-f`, `-n +N`,
//!   `-n -N`, a file name) is not a cut outbox can replace: no rewrite.

use super::words::{self, Token, Word};

/// The part of a pipeline outbox replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// `| head -N`: the reader wanted the first N lines.
    Head(usize),
    /// `| tail -N`: the reader wanted the last N lines.
    Tail(usize),
}

impl Cut {
    /// The option that tells outbox about it: `head:50`, `tail:30`.
    pub fn option(self) -> String {
        match self {
            Cut::Head(n) => format!("head:{n}"),
            Cut::Tail(n) => format!("tail:{n}"),
        }
    }
}

/// A line the grammar accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    /// `cd DIR && ` as typed (up to and including `&&` and the blanks after
    /// it), or "".
    pub cd: &'a str,
    /// The command as typed: assignments, name, arguments and a trailing
    /// `2>&1` when there is one.
    pub command: &'a str,
    /// The command's name.
    pub name: String,
    /// Its arguments (after the name).
    pub args: Vec<Word>,
    /// Names of the `NAME=value` assignments before the command.
    pub assigned: Vec<String>,
    /// The command's stderr joins its stdout (`2>&1`).
    pub merges_stderr: bool,
    /// `| head -N` or `| tail -N` after the command.
    pub cut: Option<Cut>,
}

/// Reads `text` as a line of the grammar; None for anything else.
pub fn parse(text: &str) -> Option<Line<'_>> {
    let toks = words::tokens(text, true)?;
    let mut rest: &[Token] = &toks;
    // cd DIR &&
    let mut cd = "";
    if let [Token::Word(c), Token::Word(dir), Token::And, after @ ..] = rest {
        if c.plain && c.value == "cd" && !dir.glob && !dir.value.starts_with('-') {
            let next = match after.first() {
                Some(Token::Word(w)) => w.start,
                _ => return None,
            };
            cd = &text[c.start..next];
            rest = after;
        }
    }
    // The command: up to `|` or the end.
    let split = rest.iter().position(|t| *t == Token::Pipe).unwrap_or(rest.len());
    let (cmd, tail) = rest.split_at(split);
    let (cmd, merges_stderr) = match cmd {
        [head @ .., Token::MergeStderr] => (head, true),
        c => (c, false),
    };
    let mut cmd_words = Vec::with_capacity(cmd.len());
    for t in cmd {
        match t {
            Token::Word(w) => cmd_words.push(w),
            _ => return None,
        }
    }
    let mut assigned = Vec::new();
    let mut i = 0;
    while let Some(w) = cmd_words.get(i) {
        match assignment(text, w) {
            Some(name) if !w.glob => assigned.push(name),
            Some(_) => return None,
            None => break,
        }
        i += 1;
    }
    let (name_word, args) = cmd_words[i..].split_first()?;
    if !name_word.plain || name_word.glob || name_word.value.contains('=') {
        return None;
    }
    let first = cmd_words.first()?;
    let last = cmd.last()?;
    let end = match last {
        Token::Word(w) => w.end,
        _ => return None,
    };
    let end = if merges_stderr { end_of_merge(text, end)? } else { end };
    let command = &text[first.start..end];
    let cut = match tail {
        [] => None,
        [Token::Pipe, rest @ ..] => Some(cut(rest)?),
        _ => return None,
    };
    Some(Line {
        cd,
        command,
        name: name_word.value.clone(),
        args: args.iter().map(|w| (*w).clone()).collect(),
        assigned,
        merges_stderr,
        cut,
    })
}

/// Where the `2>&1` after position `from` ends.
fn end_of_merge(text: &str, from: usize) -> Option<usize> {
    let at = from + text[from..].find("2>&1")?;
    Some(at + 4)
}

/// `NAME=...` typed unquoted at the start of the word: the variable's name.
fn assignment(text: &str, w: &Word) -> Option<String> {
    let raw = &text[w.start..w.end];
    let eq = raw.find('=')?;
    let name = &raw[..eq];
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then(|| name.to_string())
}

/// `head`/`tail` and one line count, nothing else.
fn cut(toks: &[Token]) -> Option<Cut> {
    let mut words = Vec::new();
    for t in toks {
        match t {
            Token::Word(w) if w.plain && !w.glob => words.push(w.value.as_str()),
            _ => return None,
        }
    }
    let (tool, opts) = words.split_first()?;
    let count = |s: &str| -> Option<usize> {
        let n: usize = s.parse().ok()?;
        (s.bytes().all(|b| b.is_ascii_digit())).then_some(n)
    };
    let n = match opts {
        [] => Some(10),
        [o] => match o.strip_prefix("--lines=") {
            Some(v) => count(v),
            None => o.strip_prefix("-n").filter(|v| !v.is_empty()).or_else(|| o.strip_prefix('-')).and_then(count),
        },
        ["-n" | "--lines", v] => count(v),
        _ => None,
    }?;
    match *tool {
        "head" => Some(Cut::Head(n)),
        "tail" => Some(Cut::Tail(n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut_of(s: &str) -> Option<Option<Cut>> {
        parse(s).map(|l| l.cut)
    }

    #[test]
    fn plain_lines() {
        let l = parse("grep -rn foo src").unwrap();
        assert_eq!((l.cd, l.command, l.name.as_str(), l.cut), ("", "grep -rn foo src", "grep", None));
        let l = parse("  cargo test 2>&1  ").unwrap();
        assert_eq!((l.command, l.merges_stderr), ("cargo test 2>&1", true));
    }

    #[test]
    fn cuts() {
        assert_eq!(cut_of("grep -rn foo src | head -50"), Some(Some(Cut::Head(50))));
        assert_eq!(cut_of("grep x f|head"), Some(Some(Cut::Head(10))));
        assert_eq!(cut_of("cargo test 2>&1 | tail -30"), Some(Some(Cut::Tail(30))));
        assert_eq!(cut_of("cargo test 2>&1|tail -n 30"), Some(Some(Cut::Tail(30))));
        assert_eq!(cut_of("git log | head -n5"), Some(Some(Cut::Head(5))));
        assert_eq!(cut_of("git log | head --lines=7"), Some(Some(Cut::Head(7))));
        for bad in [
            "grep x f | head -c 10",
            "grep x f | tail -f",
            "grep x f | tail -n +3",
            "grep x f | head -n -3",
            "grep x f | head -5 other.txt",
            "grep x f | head -5 | wc -l",
            "grep x f | wc -l",
            "grep x f | 'head' -5",
            "grep x f || head -5",
            "grep x f |& head -5",
            "grep x f | head -5x",
            "grep x f | head -",
        ] {
            assert_eq!(cut_of(bad), None, "{bad:?}");
        }
        let l = parse("cargo test 2>&1 | tail -30").unwrap();
        assert_eq!((l.command, l.merges_stderr), ("cargo test 2>&1", true));
    }

    #[test]
    fn cd_and_assignments() {
        let l = parse("cd sub && make -j4").unwrap();
        assert_eq!((l.cd, l.command, l.name.as_str()), ("cd sub && ", "make -j4", "make"));
        let l = parse("cd 'my dir'&&grep x f | head -3").unwrap();
        assert_eq!((l.cd, l.command, l.cut), ("cd 'my dir'&&", "grep x f", Some(Cut::Head(3))));
        let l = parse("LC_ALL=C sort big.txt | head").unwrap();
        assert_eq!(
            (l.command, l.name.as_str(), l.assigned.clone()),
            ("LC_ALL=C sort big.txt", "sort", vec!["LC_ALL".into()])
        );
        let l = parse("A=1 B='x y' grep z f").unwrap();
        assert_eq!(l.assigned, ["A", "B"]);
        for bad in [
            "cd && grep x f",
            "cd a b && grep x f",
            "cd a && cd b && grep x f",
            "cd * && grep x f",
            "cd -P a && grep x f",
            "grep x f && cd a",
            "A=*.c grep x f",
            "A=~/x grep x f",
            "A=$B grep x f",
            "'A'=1 grep x f",
            "A=1",
            "2>&1",
            "grep x f 2>&1 y",
            "grep x 2>&1 2>&1",
            "grep x f 2>&1>o",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn globs_are_words_the_shell_expands() {
        let l = parse("grep -n foo src/*.rs | head -20").unwrap();
        assert!(l.args.iter().any(|w| w.glob && w.value == "src/*.rs"));
        assert_eq!(l.command, "grep -n foo src/*.rs");
        assert!(parse("gr*p foo f").is_none(), "the command's name is never a glob");
        assert!(parse("[ -f x ]").is_none());
        assert!(parse("grep x f{a,b}").is_none(), "braces stay refused");
    }
}
