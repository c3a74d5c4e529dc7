//! `kith workload run`: the load driver's command line, report and charts.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use clap::Args;
use kith_graph::WeightModel;
use kith_lab::cli::GraphInput;
use kith_lab::machine::{Machine, git_commit, utc_now};
use kith_lab::plot::{LineChart, Series, line_chart};
use kith_workload::{FriendAccess, LinkBench, RunConfig, RunReport, Source, TraceSource};
use serde::Serialize;

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["trace", "mix"])))]
pub(crate) struct RunArgs {
    /// A SONETOR trace to replay (Publish → POST /posts, Retrieve → GET /users/{u}/feed).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// A request mix.
    #[arg(long, value_parser = ["linkbench", "bondhu-uniform", "bondhu-preferential", "bondhu-overlap"])]
    mix: Option<String>,
    /// The servers, comma-separated: requests are spread over them, and one that fails
    /// (no answer, or 503) is sent again to the next.
    #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:7070")]
    target: Vec<String>,
    /// Closed-loop client counts to sweep (with --rate: the most requests in flight).
    #[arg(long, value_delimiter = ',', default_value = "8")]
    clients: Vec<usize>,
    /// Open loop: requests per second, latency measured from each request's scheduled time.
    #[arg(long)]
    rate: Option<f64>,
    /// Measured seconds per run.
    #[arg(long, default_value_t = 10.0)]
    duration_s: f64,
    /// Seconds before each run's measurement, not reported.
    #[arg(long, default_value_t = 2.0)]
    warmup_s: f64,
    /// The store's friendship graph, for the bondhu mixes (friends drawn by edge weight).
    #[arg(long)]
    graph: Option<PathBuf>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Write the report as JSON here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write charts (throughput vs clients, latency CDF per operation) into this directory.
    #[arg(long)]
    plot: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Report {
    benchmark: &'static str,
    date: String,
    commit: Option<String>,
    machine: Machine,
    targets: Vec<String>,
    source: String,
    runs: Vec<RunReport>,
}

async fn all_users(targets: &[String]) -> Result<Vec<u64>> {
    let http = reqwest::Client::new();
    kith_workload::check_targets(&http, targets).await?;
    // From the first server that answers; every server serves the same store.
    let mut target = targets[0].as_str();
    for t in targets {
        if kith_workload::check_target(&http, t).await.is_ok() {
            target = t;
            break;
        }
    }
    let mut users = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut url = format!("{}/users?limit=1000", target.trim_end_matches('/'));
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let page: serde_json::Value =
            http.get(&url).send().await?.error_for_status()?.json().await?;
        for u in page["users"].as_array().context("listing users: no `users` array")? {
            users.push(u["uid"].as_u64().context("listing users: a uid is not a number")?);
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return Ok(users),
        }
    }
}

pub(super) fn run(args: RunArgs) -> Result<()> {
    ensure!(args.duration_s > 0.0 && args.duration_s.is_finite(), "--duration-s must be positive");
    ensure!(args.warmup_s >= 0.0 && args.warmup_s.is_finite(), "--warmup-s must not be negative");
    ensure!(args.clients.iter().all(|&c| c > 0), "--clients must all be at least 1");
    if let Some(r) = args.rate {
        ensure!(r > 0.0 && r.is_finite(), "--rate must be positive");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let (source, name): (Arc<dyn Source>, String) = match (&args.trace, args.mix.as_deref()) {
        (Some(path), _) => {
            let events = kith_workload::read_trace(path)?;
            ensure!(!events.is_empty(), "{}: the trace is empty", path.display());
            (Arc::new(TraceSource::new(events)), format!("trace {}", path.display()))
        }
        (None, Some("linkbench")) => {
            let users = runtime.block_on(all_users(&args.target))?;
            (Arc::new(LinkBench::new(users, args.seed)?), "linkbench".into())
        }
        (None, Some(mix)) => {
            let model = match mix {
                "bondhu-uniform" => WeightModel::Uniform,
                "bondhu-preferential" => WeightModel::Preferential,
                _ => WeightModel::Overlap,
            };
            let path = args.graph.clone().with_context(|| {
                format!("--mix {mix} needs --graph, the store's friendship graph")
            })?;
            let graph = GraphInput::file(path).load_undirected()?;
            (Arc::new(FriendAccess::new(&graph, model)?), mix.to_string())
        }
        (None, None) => bail!("give --trace or --mix"),
    };
    let mut runs = Vec::new();
    for &clients in &args.clients {
        let config = RunConfig {
            targets: args.target.clone(),
            clients,
            rate: args.rate,
            duration: Duration::from_secs_f64(args.duration_s),
            warmup: Duration::from_secs_f64(args.warmup_s),
            seed: args.seed,
            timeout: Duration::from_secs(30),
        };
        eprintln!(
            "workload run: {name}, {clients} clients{}",
            args.rate.map_or(String::new(), |r| format!(", open loop at {r}/s"))
        );
        let report = runtime.block_on(kith_workload::run(source.clone(), &config))?;
        if !args.json {
            print_run(&report);
        }
        runs.push(report);
    }
    let report = Report {
        benchmark: "workload",
        date: utc_now(),
        commit: git_commit(),
        machine: Machine::describe(),
        targets: args.target.clone(),
        source: name,
        runs,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    if let Some(out) = &args.out {
        if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(out, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("writing {}", out.display()))?;
    }
    if let Some(dir) = &args.plot {
        plot(dir, &report)?;
    }
    Ok(())
}

fn print_run(r: &RunReport) {
    println!(
        "{} clients, {} loop{}: {:.0} requests/s over {:.1} s",
        r.clients,
        r.mode,
        r.rate.map_or(String::new(), |x| format!(" at {x}/s")),
        r.total.throughput,
        r.measured_s
    );
    println!(
        "  {:<14}{:>10}{:>8}{:>11}{:>9}{:>9}{:>9}{:>9}{:>9}",
        "operation", "ops", "errors", "req/s", "p50 ms", "p95 ms", "p99 ms", "p999 ms", "max ms"
    );
    for o in r.ops.iter().chain(std::iter::once(&r.total)) {
        println!(
            "  {:<14}{:>10}{:>8}{:>11.0}{:>9.2}{:>9.2}{:>9.2}{:>9.2}{:>9.2}",
            o.op, o.ops, o.errors, o.throughput, o.p50_ms, o.p95_ms, o.p99_ms, o.p999_ms, o.max_ms
        );
        if !o.errors_by_status.is_empty() && o.op != "all" {
            println!("  {:<14}errors by status: {:?}", "", o.errors_by_status);
        }
    }
}

fn plot(dir: &std::path::Path, report: &Report) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut names: Vec<String> =
        report.runs.iter().flat_map(|r| r.ops.iter().map(|o| o.op.clone())).collect();
    names.sort();
    names.dedup();
    let mut series: Vec<Series> = vec![Series {
        name: "all".into(),
        points: report.runs.iter().map(|r| (r.clients as f64, r.total.throughput)).collect(),
    }];
    for n in &names {
        series.push(Series {
            name: n.clone(),
            points: report
                .runs
                .iter()
                .filter_map(|r| {
                    r.ops.iter().find(|o| &o.op == n).map(|o| (r.clients as f64, o.throughput))
                })
                .collect(),
        });
    }
    series.truncate(6);
    let title = format!("{}: throughput", report.source);
    line_chart(
        &dir.join("throughput.png"),
        &LineChart { title: &title, x_label: "clients", y_label: "requests/s", log2_x: true },
        &series,
    )?;
    if let Some(last) = report.runs.last() {
        let series: Vec<Series> = last
            .ops
            .iter()
            .take(6)
            .map(|o| Series {
                name: o.op.clone(),
                points: o.cdf.iter().map(|&(ms, q)| (ms, q)).collect(),
            })
            .collect();
        let title = format!("{}: latency CDF, {} clients", report.source, last.clients);
        line_chart(
            &dir.join("latency-cdf.png"),
            &LineChart {
                title: &title,
                x_label: "latency (ms)",
                y_label: "fraction of requests",
                log2_x: false,
            },
            &series,
        )?;
    }
    Ok(())
}
