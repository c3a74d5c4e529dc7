//! `kith experiment all --out DIR [--quick]`: every step of the reproduction
//! ([`registry`](super::registry)) as a child `kith` process, with one progress bar over the
//! steps and a time estimate, a manifest that lets a stopped run resume, and
//! `reproduction.md`: every published result beside kith's number.
//!
//! Each step runs in its own process group, writes `DIR/<step>/` (its stdout as
//! `stdout.txt`), and logs its stderr to `DIR/logs/<step>.log`. A step that fails, or
//! runs past `--timeout-factor` times its estimate, is recorded as failed and the run goes
//! on; Ctrl-C stops the current step's whole group and keeps what is done.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail, ensure};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};

use super::registry::{self, BONDHU_EXAMPLE, Ctx, Step};
use super::table::{duration, render};
use crate::machine::{Machine, datasets_dir, git_commit, utc_now};

#[derive(Debug, clap::Args)]
pub struct AllArgs {
    /// Where every step writes (`DIR/<step>/`), with the logs, `manifest.json` and
    /// `reproduction.md`.
    #[arg(long)]
    pub(super) out: PathBuf,
    /// Every step at a tiny size on email-Eu-core, in a few minutes: checks that each
    /// experiment runs and the table fills, not a reproduction.
    #[arg(long)]
    quick: bool,
    /// Run only these steps (comma-separated names; `--list` prints them).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Skip these steps.
    #[arg(long, value_delimiter = ',')]
    skip: Vec<String>,
    /// Keep the steps that `DIR/manifest.json` records as done with the same command line,
    /// and run the rest.
    #[arg(long)]
    resume: bool,
    /// Print the steps, their commands and estimates, and exit.
    #[arg(long)]
    list: bool,
    /// The shared datasets (default: $KITH_DATASETS, else shared/datasets beside the
    /// checkout).
    #[arg(long)]
    datasets: Option<PathBuf>,
    /// Also write the table here (e.g. docs/reproduction.md); refused with --quick.
    #[arg(long)]
    doc: Option<PathBuf>,
    /// A step running longer than this many times its estimate (and at least 10 minutes)
    /// is stopped and recorded as failed.
    #[arg(long, default_value_t = 4.0)]
    timeout_factor: f64,
}

/// What happened to a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum Status {
    Ok,
    Failed,
    /// Not run: an input is missing.
    Skipped,
    /// Not selected (`--only`, `--skip`) or not reached.
    NotRun,
}

impl Status {
    pub(super) fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
            Status::NotRun => "not run",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct StepRecord {
    pub(super) name: String,
    pub(super) reproduces: String,
    pub(super) argv: Vec<String>,
    pub(super) status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) started: Option<String>,
    /// The commit it ran at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) commit: Option<String>,
    pub(super) seconds: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) peak_rss_mb: Option<f64>,
    /// What the step wrote, relative to its directory.
    pub(super) files: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Manifest<'a> {
    benchmark: &'static str,
    date: String,
    commit: Option<String>,
    machine: &'a Machine,
    quick: bool,
    datasets: String,
    /// Seconds of the steps this invocation ran.
    run_s: f64,
    /// Seconds of every step recorded as done, earlier invocations (`--resume`) included.
    total_s: f64,
    steps: &'a [StepRecord],
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Runs the reproduction.
pub fn run(args: AllArgs) -> Result<()> {
    ensure!(
        !(args.quick && args.doc.is_some()),
        "--doc with --quick: a quick run reproduces nothing"
    );
    ensure!(args.timeout_factor >= 1.0, "--timeout-factor must be at least 1");
    let datasets = args.datasets.clone().unwrap_or_else(datasets_dir);
    let datasets = std::fs::canonicalize(&datasets).unwrap_or(datasets);
    let ctx = Ctx { datasets, out: args.out.clone(), quick: args.quick };
    let steps = registry::steps();
    for name in args.only.iter().chain(&args.skip) {
        if !steps.iter().any(|s| s.name == name) {
            let names: Vec<&str> = steps.iter().map(|s| s.name).collect();
            bail!("no step named {name:?}; the steps are {}", names.join(", "));
        }
    }
    if args.list {
        for s in &steps {
            let est = if args.quick { s.estimate_s.1 } else { s.estimate_s.0 };
            println!("{:<24} ~{:>6}  {}", s.name, duration(est), s.reproduces);
            println!("    kith {}", (s.argv)(&ctx, s.name).join(" "));
        }
        return Ok(());
    }
    std::fs::create_dir_all(args.out.join("logs"))
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    std::fs::create_dir_all(args.out.join("inputs"))?;
    std::fs::write(args.out.join("inputs/bondhu-example.txt"), BONDHU_EXAMPLE)?;

    let manifest_path = args.out.join("manifest.json");
    let previous = read_previous(&manifest_path, args.quick)?;
    let selected = |s: &Step| {
        (args.only.is_empty() || args.only.iter().any(|n| n == s.name))
            && !args.skip.iter().any(|n| n == s.name)
    };
    let mut records: Vec<StepRecord> = steps
        .iter()
        .map(|s| {
            let argv = (s.argv)(&ctx, s.name);
            let old = previous.iter().find(|r| r.name == s.name && r.argv == argv);
            match old {
                Some(r) if !selected(s) || (args.resume && r.status == Status::Ok) => r.clone(),
                _ => StepRecord {
                    name: s.name.to_owned(),
                    reproduces: s.reproduces.to_owned(),
                    argv,
                    status: Status::NotRun,
                    reason: Some(if selected(s) { "not reached" } else { "not selected" }.into()),
                    started: None,
                    commit: None,
                    seconds: 0.0,
                    peak_rss_mb: None,
                    files: Vec::new(),
                },
            }
        })
        .collect();
    // Estimates: a previous run's measured seconds where it has them.
    let estimate = |s: &Step| {
        previous
            .iter()
            .find(|r| r.name == s.name && r.status == Status::Ok)
            .map_or(if args.quick { s.estimate_s.1 } else { s.estimate_s.0 }, |r| r.seconds)
            .max(1.0)
    };
    let todo: Vec<usize> = (0..steps.len())
        .filter(|&i| selected(&steps[i]) && records[i].status != Status::Ok)
        .collect();
    let total_est: f64 = todo.iter().map(|&i| estimate(&steps[i])).sum();

    // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let machine = Machine::describe();
    let bar = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("[{elapsed_precise}] [{bar:30}] {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let started = Instant::now();
    let (mut done_est, mut done_actual) = (0.0, 0.0);
    for (n, &i) in todo.iter().enumerate() {
        if INTERRUPTED.load(Ordering::SeqCst) {
            break;
        }
        let step = &steps[i];
        let est = estimate(step);
        let progress = Progress { bar: &bar, n: n + 1, of: todo.len(), est, done_est, total_est };
        let speed = if done_est > 0.0 { (done_actual / done_est).clamp(0.25, 4.0) } else { 1.0 };
        let record = run_step(&ctx, step, &records[i].argv, &args, est, speed, &progress)?;
        done_est += est;
        done_actual += record.seconds;
        let line = match record.status {
            Status::Ok => format!("{:<24} ok      {}", step.name, duration(record.seconds)),
            _ => format!(
                "{:<24} {:<7} {}",
                step.name,
                record.status.label(),
                record.reason.as_deref().unwrap_or("")
            ),
        };
        bar.suspend(|| eprintln!("{line}"));
        records[i] = record;
        write_manifest(&manifest_path, &machine, &ctx, started, &records)?;
        write_doc(&args, &ctx, &records)?;
    }
    bar.finish_and_clear();
    write_manifest(&manifest_path, &machine, &ctx, started, &records)?;
    let doc = write_doc(&args, &ctx, &records)?;
    let failed: Vec<&str> =
        records.iter().filter(|r| r.status == Status::Failed).map(|r| r.name.as_str()).collect();
    let skipped = records.iter().filter(|r| r.status == Status::Skipped).count();
    crate::say!(
        "{} of {} steps done ({} this time, in {}){}; the table is {}",
        records.iter().filter(|r| r.status == Status::Ok).count(),
        records.len(),
        todo.len(),
        duration(started.elapsed().as_secs_f64()),
        if skipped > 0 { format!(", {skipped} skipped for missing inputs") } else { String::new() },
        doc.display()
    );
    if INTERRUPTED.load(Ordering::SeqCst) {
        bail!("interrupted; `--resume` goes on from the steps not done");
    }
    ensure!(
        failed.is_empty(),
        "failed: {} (logs in {})",
        failed.join(", "),
        args.out.join("logs").display()
    );
    Ok(())
}

/// The previous manifest's steps, if there is one for the same kind of run.
fn read_previous(path: &Path, quick: bool) -> Result<Vec<StepRecord>> {
    let Ok(text) = std::fs::read_to_string(path) else { return Ok(Vec::new()) };
    let doc: serde_json::Value = serde_json::from_str(&text).with_context(|| {
        format!("{}: not a manifest; remove it to start afresh", path.display())
    })?;
    if doc["quick"].as_bool() != Some(quick) {
        bail!(
            "{} records a {} run; use another --out",
            path.display(),
            if quick { "full" } else { "--quick" }
        );
    }
    serde_json::from_value(doc["steps"].clone())
        .with_context(|| format!("{}: unreadable steps", path.display()))
}

struct Progress<'a> {
    bar: &'a ProgressBar,
    n: usize,
    of: usize,
    est: f64,
    done_est: f64,
    total_est: f64,
}

impl Progress<'_> {
    /// Draws the bar `elapsed` seconds into the current step; `speed` scales the remaining
    /// estimates by how the finished steps compared with theirs.
    fn draw(&self, name: &str, elapsed: f64, speed: f64, tail: &str) {
        let current = elapsed.min(self.est);
        let at = (self.done_est + current) / self.total_est.max(1.0);
        self.bar.set_position((at * 1000.0) as u64);
        let left = ((self.total_est - self.done_est - current) * speed).max(0.0);
        let mut tail: String = tail.chars().take(60).collect();
        if !tail.is_empty() {
            tail.insert_str(0, " · ");
        }
        self.bar.set_message(format!(
            "step {}/{} {name} {} of ~{} · ETA {}{tail}",
            self.n,
            self.of,
            duration(elapsed),
            duration(self.est),
            duration(left)
        ));
    }
}

fn run_step(
    ctx: &Ctx,
    step: &Step,
    argv: &[String],
    args: &AllArgs,
    est: f64,
    speed: f64,
    progress: &Progress<'_>,
) -> Result<StepRecord> {
    let mut record = StepRecord {
        name: step.name.to_owned(),
        reproduces: step.reproduces.to_owned(),
        argv: argv.to_vec(),
        status: Status::Skipped,
        reason: None,
        started: Some(utc_now()),
        commit: git_commit(),
        seconds: 0.0,
        peak_rss_mb: None,
        files: Vec::new(),
    };
    let missing: Vec<String> = (step.datasets)(ctx)
        .into_iter()
        .map(|f| ctx.datasets.join(f))
        .filter(|p| !p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    if !missing.is_empty() {
        record.reason = Some(format!("missing {}", missing.join(", ")));
        return Ok(record);
    }
    let dir = ctx.out.join(step.name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    let log_path = ctx.out.join("logs").join(format!("{}.log", step.name));
    let rss_path = ctx.out.join("logs").join(format!("{}.rss", step.name));
    let _ = std::fs::remove_file(&rss_path);
    let exe = std::env::current_exe().context("cannot locate the kith executable")?;
    let log = std::fs::File::create(&log_path)?;
    let since = SystemTime::now() - Duration::from_secs(1);
    let start = Instant::now();
    let mut child = {
        use std::os::unix::process::CommandExt as _;
        Command::new(&exe)
            .args(argv)
            .env("KITH_PEAK_RSS_OUT", &rss_path)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("stdout.txt"))?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start {}", exe.display()))?
    };
    let limit = (est * args.timeout_factor).max(600.0);
    let outcome = loop {
        if let Some(status) = child.try_wait()? {
            break if status.success() { Ok(()) } else { Err(format!("exit status {status}")) };
        }
        let elapsed = start.elapsed().as_secs_f64();
        if INTERRUPTED.load(Ordering::SeqCst) {
            stop_group(&mut child);
            break Err("interrupted".to_owned());
        }
        if elapsed > limit {
            stop_group(&mut child);
            break Err(format!("stopped after {} (--timeout-factor)", duration(elapsed)));
        }
        progress.draw(step.name, elapsed, speed, &last_line(&log_path));
        std::thread::sleep(Duration::from_millis(250));
    };
    record.seconds = start.elapsed().as_secs_f64();
    record.peak_rss_mb = std::fs::read_to_string(&rss_path)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .map(|kib| kib / 1024.0);
    record.files = super::files_since(&dir, since)
        .unwrap_or_default()
        .iter()
        .map(|p| p.strip_prefix(&dir).unwrap_or(p).display().to_string())
        .collect();
    match outcome {
        Ok(()) => {
            record.status = Status::Ok;
        }
        Err(why) => {
            record.status = Status::Failed;
            let tail = last_line(&log_path);
            record.reason = Some(if tail.is_empty() { why } else { format!("{why}: {tail}") });
        }
    }
    Ok(record)
}

/// SIGTERM to the step's process group (the step and any servers it started), then SIGKILL
/// after 10 s.
fn stop_group(child: &mut Child) {
    let group = child.id() as libc::pid_t;
    // SAFETY: signalling a process group we created; no memory is involved.
    unsafe { libc::kill(-group, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: as above; also reaches servers that outlived the step.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let _ = child.wait();
}

/// The last non-empty line of a log (progress bars' `\r` updates included).
fn last_line(path: &Path) -> String {
    let Ok(mut f) = std::fs::File::open(path) else { return String::new() };
    let len = f.metadata().map_or(0, |m| m.len());
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(512)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let line = text.split(['\n', '\r']).map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("");
    // Drop terminal escapes.
    line.chars().filter(|c| !c.is_control()).collect()
}

fn write_manifest(
    path: &Path,
    machine: &Machine,
    ctx: &Ctx,
    started: Instant,
    records: &[StepRecord],
) -> Result<()> {
    let manifest = Manifest {
        benchmark: "reproduction",
        date: utc_now(),
        commit: git_commit(),
        machine,
        quick: ctx.quick,
        datasets: ctx.datasets.display().to_string(),
        run_s: started.elapsed().as_secs_f64(),
        total_s: records.iter().filter(|r| r.status == Status::Ok).map(|r| r.seconds).sum(),
        steps: records,
    };
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(&manifest)? + "\n")
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// Writes `DIR/reproduction.md` (and `--doc`); returns its path.
fn write_doc(args: &AllArgs, ctx: &Ctx, records: &[StepRecord]) -> Result<PathBuf> {
    let text = render(ctx, records, &super::results::results());
    let path = args.out.join("reproduction.md");
    std::fs::write(&path, &text).with_context(|| format!("cannot write {}", path.display()))?;
    if let Some(doc) = &args.doc {
        std::fs::write(doc, &text).with_context(|| format!("cannot write {}", doc.display()))?;
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_log_line_skips_progress_redraws_and_blank_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("l.log");
        std::fs::write(&log, "first\nbuilding 1/3\rbuilding 2/3\r\n\n").unwrap();
        assert_eq!(last_line(&log), "building 2/3");
        assert_eq!(last_line(&dir.path().join("none")), "");
    }
}
