//! `kith workload generate`: a SONETOR trace for the users of a graph, and optionally raw
//! draws of each distribution to check them.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use kith_lab::cli::GraphInput;
use kith_workload::{Activity, Preset, SonetorConfig};
use serde::Serialize;

#[derive(Debug, Args)]
pub(crate) struct GenerateArgs {
    #[command(flatten)]
    input: GraphInput,
    /// The trace to write.
    #[arg(short, long)]
    out: PathBuf,
    /// A TOML file of model parameters; missing keys take the preset's (see
    /// docs/workload.md).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The defaults: `sonetor` (SONETOR's example configuration) or `twibo` (Twibo's Table 2
    /// and load driver).
    #[arg(long, default_value = "sonetor")]
    preset: Preset,
    /// The trace's length in seconds (overrides the configuration's time_limit_s).
    #[arg(long)]
    duration_s: Option<f64>,
    /// SONETOR's behaviour: a user's sessions all start from time 0 and overlap.
    #[arg(long)]
    compat: bool,
    /// Random seed: the same seed gives the same trace on any machine and thread count.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also write up to 100,000 raw draws of each distribution as JSON (to check them).
    #[arg(long)]
    samples_out: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Summary {
    users: usize,
    activities: usize,
    publishes: usize,
    retrieves: usize,
    publish_share: f64,
    active_users: usize,
    duration_s: f64,
    seed: u64,
    compat: bool,
    seconds: f64,
    out: String,
}

#[derive(Debug, Serialize)]
struct SamplesJson<'a> {
    config: &'a SonetorConfig,
    inter_session: &'a [f64],
    inter_activity: &'a [f64],
    session_length: &'a [u64],
    sessions_per_user: &'a [u64],
    post_size_raw: &'a [u64],
}

pub(super) fn run(args: GenerateArgs) -> Result<()> {
    let mut config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            SonetorConfig::from_toml_over(&text, &path.display().to_string(), args.preset)?
        }
        None => SonetorConfig::preset(args.preset),
    };
    if let Some(d) = args.duration_s {
        anyhow::ensure!(d.is_finite() && d > 0.0, "--duration-s must be positive, got {d}");
        config.time_limit_s = d;
    }
    config.compat |= args.compat;
    let graph = args.input.load()?;
    let users = graph.original_ids();
    let start = Instant::now();
    let keep = if args.samples_out.is_some() { 100_000 } else { 0 };
    let (events, samples) = kith_workload::generate(users, &config, args.seed, keep);
    kith_workload::write_trace(&args.out, &events)?;
    let seconds = start.elapsed().as_secs_f64();
    if let Some(path) = &args.samples_out {
        let json = SamplesJson {
            config: &config,
            inter_session: &samples.inter_session,
            inter_activity: &samples.inter_activity,
            session_length: &samples.session_length,
            sessions_per_user: &samples.sessions_per_user,
            post_size_raw: &samples.post_size_raw,
        };
        std::fs::write(path, serde_json::to_vec(&json)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let publishes = events.iter().filter(|e| e.activity == Activity::Publish).count();
    let active: std::collections::HashSet<u64> = events.iter().map(|e| e.user).collect();
    let summary = Summary {
        users: users.len(),
        activities: events.len(),
        publishes,
        retrieves: events.len() - publishes,
        publish_share: publishes as f64 / events.len().max(1) as f64,
        active_users: active.len(),
        duration_s: config.time_limit_s,
        seed: args.seed,
        compat: config.compat,
        seconds,
        out: args.out.display().to_string(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        println!(
            "{} activities ({} publishes, {:.1} %) of {} users over {:.0} s written to {} in {:.2} s",
            summary.activities,
            summary.publishes,
            100.0 * summary.publish_share,
            summary.active_users,
            summary.duration_s,
            summary.out,
            seconds
        );
    }
    Ok(())
}
