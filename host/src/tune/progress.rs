//! The terminal progress of a sweep: a bar with the evaluations made, the ETA and the
//! best config so far (indicatif, on stderr, only when stderr is a terminal); without a
//! terminal, one line per evaluation on stderr instead, so logs show the sweep too.
//!
//! A worker of a sharded sweep reports to the process that started it instead: one
//! [`WORKER_PREFIX`] line per evaluation on stderr, `@progress DONE TOTAL BEST`, which
//! that process draws as one bar per worker.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::runner::{Evaluation, Runner};
use super::space::SearchSpace;
use crate::error::Result;

/// The start of a worker's progress lines.
pub const WORKER_PREFIX: &str = "@progress ";

/// How a sweep shows its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// Nothing.
    Quiet,
    /// A bar on a terminal, else a line per evaluation.
    Human,
    /// A [`WORKER_PREFIX`] line per evaluation, for the process that started this worker.
    Worker,
}

/// A [`Runner`] that reports every evaluation of the runner it wraps.
pub struct Progress<'r> {
    inner: &'r mut dyn Runner,
    bar: ProgressBar,
    lines: bool,
    worker: bool,
    total: usize,
    best: Option<(f64, String)>,
    done: u64,
    /// The unit of the scores shown (the objective's).
    pub unit: &'static str,
}

/// The style of a sweep's bar (also each worker's bar in a sharded sweep).
pub fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} ETA {eta} | {prefix}{msg}")
        .expect("a valid template")
        .progress_chars("=> ")
}

impl<'r> Progress<'r> {
    /// Reports on `inner`, whose search will make at most `total` evaluations.
    pub fn new(inner: &'r mut dyn Runner, total: usize, report: Report) -> Progress<'r> {
        let target = if report == Report::Human { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(Some(total as u64), target);
        bar.set_style(bar_style());
        let lines = report == Report::Human && bar.is_hidden();
        let worker = report == Report::Worker;
        if worker {
            eprintln!("{WORKER_PREFIX}0 {total} no verified config yet");
        }
        Progress { inner, bar, lines, worker, total, best: None, done: 0, unit: "ms" }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Runner for Progress<'_> {
    fn evaluate(&mut self, space: &SearchSpace, index: usize) -> Result<Evaluation> {
        let e = self.inner.evaluate(space, index)?;
        self.done += 1;
        if let Some(t) = e.score
            && self.best.as_ref().is_none_or(|(b, _)| t < *b)
        {
            self.best = Some((t, space.describe(index)));
        }
        let best = match &self.best {
            Some((t, d)) => format!("best {t:.4} {} ({d})", self.unit),
            None => "no verified config yet".into(),
        };
        self.bar.set_position(self.done);
        self.bar.set_message(best.clone());
        if self.worker {
            eprintln!("{WORKER_PREFIX}{} {} {best}", self.done, self.total);
        }
        if self.lines {
            let what = match (&e.score, &e.error) {
                (Some(t), _) => format!("{t:.4} {}", self.unit),
                (None, Some(err)) => format!("FAILED: {err}"),
                (None, None) => "FAILED".into(),
            };
            let source = if e.cached { " (cached)" } else { "" };
            eprintln!("[{}] {}: {what}{source}; {best}", self.done, space.describe(index));
        }
        Ok(e)
    }
}

/// A worker's progress line, parsed: (done, total, best so far).
pub fn parse_worker_line(line: &str) -> Option<(u64, u64, &str)> {
    let mut it = line.strip_prefix(WORKER_PREFIX)?.splitn(3, ' ');
    let done = it.next()?.parse().ok()?;
    let total = it.next()?.parse().ok()?;
    Some((done, total, it.next().unwrap_or("")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn worker_lines_parse() {
        assert_eq!(
            super::parse_worker_line("@progress 3 12 best 0.1000 ms (block=32)"),
            Some((3, 12, "best 0.1000 ms (block=32)"))
        );
        assert_eq!(super::parse_worker_line("[3] block=32: 0.1 ms"), None);
        assert_eq!(super::parse_worker_line("@progress x 12 y"), None);
    }
}
