//! Progress bars on stderr for long builds (hidden when not asked for).

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `total` steps named `what`, or a hidden one.
pub(crate) fn bar(show: bool, total: u64, what: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({per_sec}, {eta} left)")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}
