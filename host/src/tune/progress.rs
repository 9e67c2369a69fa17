//! The terminal progress of a sweep: a bar with the evaluations made, the ETA and the
//! best config so far (indicatif, on stderr, only when stderr is a terminal); without a
//! terminal, one line per evaluation on stderr instead, so logs show the sweep too.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::runner::{Evaluation, Runner};
use super::space::SearchSpace;
use crate::error::Result;

/// A [`Runner`] that reports every evaluation of the runner it wraps.
pub struct Progress<'r> {
    inner: &'r mut dyn Runner,
    bar: ProgressBar,
    lines: bool,
    best: Option<(f64, String)>,
    done: u64,
}

impl<'r> Progress<'r> {
    /// Reports on `inner`, whose search will make at most `total` evaluations. `quiet`
    /// reports nothing.
    pub fn new(inner: &'r mut dyn Runner, total: usize, quiet: bool) -> Progress<'r> {
        let target = if quiet { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr() };
        let bar = ProgressBar::with_draw_target(Some(total as u64), target);
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} ETA {eta} | {msg}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        let lines = !quiet && bar.is_hidden();
        Progress { inner, bar, lines, best: None, done: 0 }
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
        if let Some(t) = e.time_ms
            && self.best.as_ref().is_none_or(|(b, _)| t < *b)
        {
            self.best = Some((t, space.describe(index)));
        }
        let best = match &self.best {
            Some((t, d)) => format!("best {t:.4} ms ({d})"),
            None => "no verified config yet".into(),
        };
        self.bar.set_position(self.done);
        self.bar.set_message(best.clone());
        if self.lines {
            let what = match (&e.time_ms, &e.error) {
                (Some(t), _) => format!("{t:.4} ms"),
                (None, Some(err)) => format!("FAILED: {err}"),
                (None, None) => "FAILED".into(),
            };
            let source = if e.cached { " (cached)" } else { "" };
            eprintln!("[{}] {}: {what}{source}; {best}", self.done, space.describe(index));
        }
        Ok(e)
    }
}
