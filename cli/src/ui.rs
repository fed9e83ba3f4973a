//! Output for people (stderr: status lines like cargo's, progress bars on a
//! terminal, plain lines otherwise) and for programs (`--json` on stdout).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How to talk to the user.
#[derive(Debug, Clone)]
pub struct Ui {
    pub json: bool,
    pub quiet: bool,
    pub verbose: u8,
    pub color: bool,
    tty: bool,
}

impl Ui {
    pub fn new(json: bool, quiet: bool, verbose: u8, color: bool) -> Ui {
        Ui { json, quiet, verbose, color, tty: std::io::stderr().is_terminal() }
    }

    /// `   Resolving net, meter` — a right-aligned verb, like cargo.
    pub fn status(&self, verb: &str, msg: impl std::fmt::Display) {
        self.statuses([(verb, msg)]);
    }

    /// Several status lines, written at once: a resolution can lock thousands of
    /// packages, and stderr is unbuffered.
    pub fn statuses<'v, M: std::fmt::Display>(&self, lines: impl IntoIterator<Item = (&'v str, M)>) {
        use std::fmt::Write as _;
        if self.quiet {
            return;
        }
        let mut text = String::new();
        for (verb, msg) in lines {
            let _ = if self.color {
                writeln!(text, "\x1b[1;32m{verb:>12}\x1b[0m {msg}")
            } else {
                writeln!(text, "{verb:>12} {msg}")
            };
        }
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }

    pub fn warn(&self, msg: impl std::fmt::Display) {
        let mut err = std::io::stderr().lock();
        if self.color {
            let _ = writeln!(err, "\x1b[1;33mwarning\x1b[0m: {msg}");
        } else {
            let _ = writeln!(err, "warning: {msg}");
        }
    }

    /// `note: …`: worth knowing, nothing wrong (quiet hides it).
    pub fn note(&self, msg: impl std::fmt::Display) {
        if self.quiet {
            return;
        }
        let mut err = std::io::stderr().lock();
        if self.color {
            let _ = writeln!(err, "\x1b[1;36mnote\x1b[0m: {msg}");
        } else {
            let _ = writeln!(err, "note: {msg}");
        }
    }

    /// A line of human output on stdout (suppressed with --json: the JSON is the output).
    pub fn out(&self, msg: impl std::fmt::Display) {
        if !self.json {
            stdout(&format!("{msg}\n"));
        }
    }

    /// Prints `value` as JSON on stdout.
    pub fn json(&self, value: &impl serde::Serialize) -> anyhow::Result<()> {
        stdout(&format!("{}\n", serde_json::to_string_pretty(value)?));
        Ok(())
    }

    /// A progress bar of `len` steps on a terminal; nothing otherwise (status lines
    /// say what happens).
    pub fn progress(&self, verb: &str, len: u64) -> Progress {
        if self.quiet || !self.tty || self.json {
            return Progress(None);
        }
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(&format!("{verb:>12} [{{bar:30}}] {{pos}}/{{len}} {{msg}}"))
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress(Some(bar))
    }
}

impl Ui {
    /// A byte-counting bar for an upload on a terminal, as a callback for the
    /// HTTP client; `None` otherwise.
    pub fn upload_bar(&self, verb: &str) -> Option<ebpkg_sources::Progress> {
        if self.quiet || !self.tty || self.json {
            return None;
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(&format!(
            "{verb:>12} [{{bar:30}}] {{bytes}}/{{total_bytes}} {{bytes_per_sec}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        Some(std::sync::Arc::new(move |sent: u64, total: u64| {
            bar.set_length(total);
            bar.set_position(sent);
            if sent >= total {
                bar.finish_and_clear();
            }
        }))
    }
}

/// Writes to stdout. A reader that went away (`ebpkg status | head`) is not an
/// error worth a panic: the rest of the output is simply not wanted.
pub fn stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Writes to stderr, ignoring a reader that went away (`ebpkg tree 2>&1 | head`).
pub fn stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// A progress bar, or nothing.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    pub fn inc(&self, msg: impl Into<String>) {
        if let Some(b) = &self.0 {
            b.set_message(msg.into());
            b.inc(1);
        }
    }

    pub fn message(&self, msg: impl Into<String>) {
        if let Some(b) = &self.0 {
            b.set_message(msg.into());
        }
    }

    /// Prints a line above the bar (or just the line without one).
    pub fn println(&self, ui: &Ui, verb: &str, msg: impl std::fmt::Display) {
        match &self.0 {
            Some(b) => b.suspend(|| ui.status(verb, msg)),
            None => ui.status(verb, msg),
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
