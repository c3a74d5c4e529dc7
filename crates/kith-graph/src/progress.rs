//! A spinner naming the current stage of long work, drawn on stderr only when it is a
//! terminal; shared by every crate of kith so that long work looks the same everywhere.

use std::borrow::Cow;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};

/// A spinner with a fixed prefix (what is running) and a message (the current stage).
#[derive(Debug)]
pub struct Stages(ProgressBar);

impl Stages {
    /// A spinner labelled `what`; hidden when `show` is false.
    pub fn new(show: bool, what: &str) -> Stages {
        if !show {
            return Stages(ProgressBar::hidden());
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
            .with_finish(ProgressFinish::AndClear);
        bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix}: {msg} ({elapsed})")
                .expect("valid template"),
        );
        bar.set_prefix(what.to_owned());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        Stages(bar)
    }

    /// Names the stage now running.
    pub fn stage(&self, message: impl Into<Cow<'static, str>>) {
        self.0.set_message(message);
    }

    /// Clears the spinner.
    pub fn finish(&self) {
        self.0.finish_and_clear();
    }
}
