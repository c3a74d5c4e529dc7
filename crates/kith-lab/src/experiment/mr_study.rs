//! `kith experiment mr-study`: the complex-network MapReduce study's measurements on one
//! machine. Every job (mutual friends in the study's three jobs and in one round,
//! components, triangles) on every graph of the shared datasets, with its spill files on
//! each medium this machine has (its disk and tmpfs), synced and dropped from the page cache
//! so that the medium is what is timed; the measured I/O time beside the HDD and SSD cost
//! models, and which model each medium matches. Then Hadoop's knobs (buffer, spill percent,
//! sort factor, parallel copies) one at a time around its defaults, on one graph.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, bail, ensure};
use clap::Args;
use kith_analytics::{InGraph, JobReport, MrConfig};

use super::bondhu::{progress, write_csv};
use crate::cli::GraphInput;
use crate::machine::datasets_dir;
use crate::plot::bar_chart;
use crate::say;

/// Every graph file of the shared datasets (`facebook.tar.gz` is `facebook_combined`'s
/// graph again, per SOURCES.md, and is left out).
const ALL_GRAPHS: &str = "facebook_combined.txt.gz,out.ego-twitter.gz,soc-brightkite.mtx.gz,\
wiki-Vote.txt.gz,email-Enron.txt.gz,soc-Slashdot0902.txt.gz,soc-sign-Slashdot090216.txt.gz,\
ca-GrQc.txt.gz,ca-HepTh.txt.gz,email-Eu-core.txt.gz,git_web_ml.zip";

const JOBS: [&str; 4] = ["mutual-friends-3", "mutual-friends", "cc", "triangles"];

#[derive(Debug, Args)]
pub struct MrStudyArgs {
    /// The datasets directory (default: $KITH_DATASETS, else shared/datasets).
    #[arg(long)]
    pub datasets: Option<PathBuf>,
    /// Graph files in it, comma-separated (default: every graph there).
    #[arg(long, value_delimiter = ',', default_value = ALL_GRAPHS)]
    pub graphs: Vec<String>,
    /// Jobs, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "mutual-friends-3,mutual-friends,cc,triangles"
    )]
    pub jobs: Vec<String>,
    /// Media for the spill files: `disk` (a directory under --out) and `tmpfs` (/dev/shm).
    #[arg(long, value_delimiter = ',', default_value = "disk,tmpfs")]
    pub media: Vec<String>,
    /// The buffer of every run but the buffer sweep's (Hadoop's io.sort.mb: 100).
    #[arg(long, default_value_t = 100)]
    pub memory_mb: u64,
    /// The graph of the knobs' sweep (a file in --datasets; empty: no sweep).
    #[arg(long, default_value = "soc-Slashdot0902.txt.gz")]
    pub sweep_graph: String,
    /// The job of the knobs' sweep.
    #[arg(long, default_value = "mutual-friends-3")]
    pub sweep_job: String,
    /// The buffers of the sweep, in MB.
    #[arg(long, value_delimiter = ',', default_value = "16,64,100,256")]
    pub sweep_memory_mb: Vec<u64>,
    /// Output directory: mr-study.csv, mr-study-media.png, mr-study-tunables.png.
    #[arg(long)]
    pub out: PathBuf,
}

/// One run's knobs.
#[derive(Clone, Debug)]
struct Knobs {
    memory_mb: u64,
    spill_percent: f64,
    sort_factor: usize,
    parallel_copies: usize,
}

impl Knobs {
    fn hadoop(memory_mb: u64) -> Knobs {
        let d = MrConfig::default();
        Knobs {
            memory_mb,
            spill_percent: d.spill_percent,
            sort_factor: d.sort_factor,
            parallel_copies: d.parallel_copies,
        }
    }
}

pub(super) fn run(args: &MrStudyArgs) -> Result<()> {
    for job in args.jobs.iter().chain([&args.sweep_job]) {
        ensure!(JOBS.contains(&job.as_str()), "unknown job {job}: one of {}", JOBS.join(", "));
    }
    let datasets = args.datasets.clone().unwrap_or_else(datasets_dir);
    let media: Vec<(String, PathBuf)> = args
        .media
        .iter()
        .map(|m| match m.as_str() {
            "disk" => Ok((m.clone(), args.out.join("spill"))),
            "tmpfs" => Ok((m.clone(), PathBuf::from("/dev/shm"))),
            other => bail!("unknown medium {other}: disk or tmpfs"),
        })
        .collect::<Result<_>>()?;
    let sweep = (!args.sweep_graph.is_empty()).then_some(&args.sweep_graph);
    let missing: Vec<&String> =
        args.graphs.iter().chain(sweep).filter(|g| !datasets.join(g.as_str()).is_file()).collect();
    ensure!(missing.is_empty(), "not in {}: {missing:?}", datasets.display());
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let sweep = sweep_knobs(args);
    let runs = args.graphs.len() * args.jobs.len() * media.len()
        + if args.sweep_graph.is_empty() { 0 } else { sweep.len() };
    let bar = progress(runs, "mr-study");
    let mut rows = Vec::new();
    for name in &args.graphs {
        let graph = load(&datasets, name)?;
        let ig = InGraph::new(&graph);
        for job in &args.jobs {
            // Checked against the vertex program once per graph and job.
            let mut checked = false;
            for (medium, dir) in &media {
                bar.set_message(format!("{name}: {job} on {medium}"));
                let knobs = Knobs::hadoop(args.memory_mb);
                let input_bytes = std::fs::metadata(datasets.join(name))?.len();
                let (seconds, report) = run_job(&ig, job, &knobs, dir, input_bytes, !checked)?;
                checked = true;
                rows.push(Row::new("media", name, &graph, job, medium, &knobs, seconds, &report));
                bar.inc(1);
            }
        }
    }
    if !args.sweep_graph.is_empty() {
        let graph = load(&datasets, &args.sweep_graph)?;
        let ig = InGraph::new(&graph);
        let input_bytes = std::fs::metadata(datasets.join(&args.sweep_graph))?.len();
        let dir = args.out.join("spill");
        for knobs in &sweep {
            bar.set_message(format!("{}: {} with {knobs:?}", args.sweep_graph, args.sweep_job));
            let (seconds, report) = run_job(&ig, &args.sweep_job, knobs, &dir, input_bytes, false)?;
            let (name, job) = (&args.sweep_graph, &args.sweep_job);
            rows.push(Row::new("tunables", name, &graph, job, "disk", knobs, seconds, &report));
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let _ = std::fs::remove_dir(args.out.join("spill"));
    write(args, &rows)
}

/// Hadoop's defaults, then each knob moved alone: buffer, spill percent, sort factor,
/// parallel copies.
fn sweep_knobs(args: &MrStudyArgs) -> Vec<Knobs> {
    let base = Knobs::hadoop(args.memory_mb);
    let mut all = vec![base.clone()];
    for &m in args.sweep_memory_mb.iter().filter(|&&m| m != base.memory_mb) {
        all.push(Knobs { memory_mb: m, ..base.clone() });
    }
    for p in [0.5, 1.0] {
        all.push(Knobs { spill_percent: p, ..base.clone() });
    }
    for f in [2, 5, 50, 100] {
        all.push(Knobs { sort_factor: f, ..base.clone() });
    }
    for c in [0, 1, 10] {
        all.push(Knobs { parallel_copies: c, ..base.clone() });
    }
    all
}

fn load(datasets: &Path, name: &str) -> Result<kith_graph::Graph> {
    let mut input = GraphInput::file(datasets.join(name));
    if name.ends_with(".zip") {
        input.member = Some("git_web_ml/musae_git_edges.csv".into());
    }
    input.load_undirected().with_context(|| format!("loading {name}"))
}

/// Runs one job, synced and evicted, on `dir`; with `check`, against its vertex program.
fn run_job(
    ig: &InGraph,
    job: &str,
    knobs: &Knobs,
    dir: &Path,
    input_bytes: u64,
    check: bool,
) -> Result<(f64, JobReport)> {
    let config = MrConfig {
        memory_bytes: knobs.memory_mb << 20,
        spill_percent: knobs.spill_percent,
        sort_factor: knobs.sort_factor,
        parallel_copies: knobs.parallel_copies,
        spill_dir: dir.to_path_buf(),
        input_bytes,
        uncached: true,
    };
    let t = Instant::now();
    let elapsed = || t.elapsed().as_secs_f64();
    // Each job is timed before its check against the vertex program.
    let (seconds, report, same) = match job {
        "mutual-friends-3" | "mutual-friends" => {
            let (mf, report) = if job == "mutual-friends-3" {
                kith_analytics::mr_mutual_friends_3(ig, &config)?
            } else {
                kith_analytics::mr_mutual_friends(ig, &config)?
            };
            (elapsed(), report, !check || kith_analytics::mutual_friends(ig).0 == mf)
        }
        "cc" => {
            let (labels, report) = kith_analytics::mr_components(ig, &config)?;
            (elapsed(), report, !check || kith_analytics::components_union_find(ig) == labels)
        }
        _ => {
            let (per, _, report) = kith_analytics::mr_triangles(ig, &config)?;
            (elapsed(), report, !check || kith_analytics::triangles(ig).0 == per)
        }
    };
    ensure!(same, "mr {job}: the result differs from the vertex program's");
    Ok((seconds, report))
}

/// One run's line of mr-study.csv.
struct Row {
    line: String,
    part: &'static str,
    graph: String,
    job: String,
    medium: String,
    knobs: String,
    seconds: f64,
    io_s: f64,
    hdd_s: f64,
    ssd_s: f64,
}

impl Row {
    #[allow(clippy::too_many_arguments)]
    fn new(
        part: &'static str,
        graph_name: &str,
        graph: &kith_graph::Graph,
        job: &str,
        medium: &str,
        k: &Knobs,
        seconds: f64,
        report: &JobReport,
    ) -> Row {
        let p = report.phases;
        let io = report.io;
        let (hdd_s, ssd_s) = report.io_estimates();
        let io_s = io.io_seconds();
        let closer =
            if (io_s / hdd_s).ln().abs() < (io_s / ssd_s).ln().abs() { "HDD" } else { "SSD" };
        let runs: u64 = report.rounds.iter().map(|r| r.spill_runs).sum();
        let passes: u64 = report.rounds.iter().map(|r| r.merge_passes).sum();
        let name = super::dataset_name(graph_name);
        let line = format!(
            "{part},{name},{},{},{job},{medium},{},{},{},{},{seconds:.4},{:.4},{:.4},{:.4},{:.4},\
             {runs},{passes},{:.2},{:.2},{:.4},{},{io_s:.4},{hdd_s:.4},{ssd_s:.4},{closer}\n",
            graph.num_nodes(),
            graph.num_edges(),
            k.memory_mb,
            k.spill_percent,
            k.sort_factor,
            k.parallel_copies,
            p.map_s,
            p.shuffle_s,
            p.merge_s,
            p.reduce_s,
            io.read_bytes as f64 / 1e6,
            io.written_bytes as f64 / 1e6,
            io.sequential_fraction(),
            io.random_ops,
        );
        let knobs = format!(
            "buf {} MB, spill {}, factor {}, copies {}",
            k.memory_mb, k.spill_percent, k.sort_factor, k.parallel_copies
        );
        Row {
            line,
            part,
            graph: name,
            job: job.to_owned(),
            medium: medium.to_owned(),
            knobs,
            seconds,
            io_s,
            hdd_s,
            ssd_s,
        }
    }
}

fn write(args: &MrStudyArgs, rows: &[Row]) -> Result<()> {
    let mut csv = String::from(
        "part,graph,users,edges,job,medium,memory_mb,spill_percent,sort_factor,parallel_copies,\
         seconds,map_s,shuffle_s,merge_s,reduce_s,spill_runs,merge_passes,read_mb,written_mb,\
         sequential_fraction,random_ops,io_s,hdd_model_io_s,ssd_model_io_s,closer_model\n",
    );
    for r in rows {
        csv.push_str(&r.line);
    }
    let csv_path = args.out.join("mr-study.csv");
    write_csv(&csv_path, &csv)?;
    // Media: per graph, the jobs' I/O seconds summed, measured on each medium and modelled.
    let media_rows: Vec<&Row> = rows.iter().filter(|r| r.part == "media").collect();
    if !media_rows.is_empty() {
        let mut graphs: Vec<String> = media_rows.iter().map(|r| r.graph.clone()).collect();
        graphs.dedup();
        let mut bars: Vec<String> = args.media.iter().map(|m| format!("measured on {m}")).collect();
        bars.extend(["HDD model".to_owned(), "SSD model".to_owned()]);
        let values: Vec<Vec<f64>> = graphs
            .iter()
            .map(|g| {
                let of = |m: &str| -> Vec<&&Row> {
                    media_rows.iter().filter(|r| r.graph == *g && r.medium == m).collect()
                };
                let mut v: Vec<f64> =
                    args.media.iter().map(|m| of(m).iter().map(|r| r.io_s).sum()).collect();
                let first = of(&args.media[0]);
                v.push(first.iter().map(|r| r.hdd_s).sum());
                v.push(first.iter().map(|r| r.ssd_s).sum());
                v
            })
            .collect();
        bar_chart(
            &args.out.join("mr-study-media.png"),
            "I/O seconds of all jobs per graph: measured on each medium, and the cost models",
            "seconds",
            &graphs,
            &bars,
            &values,
        )?;
    }
    let sweep: Vec<&Row> = rows.iter().filter(|r| r.part == "tunables").collect();
    if !sweep.is_empty() {
        let groups: Vec<String> = sweep.iter().map(|r| r.knobs.clone()).collect();
        let values: Vec<Vec<f64>> = sweep.iter().map(|r| vec![r.seconds, r.io_s]).collect();
        bar_chart(
            &args.out.join("mr-study-tunables.png"),
            &format!("{} on {}: Hadoop's knobs one at a time", args.sweep_job, args.sweep_graph),
            "seconds",
            &groups,
            &["job".to_owned(), "of which I/O".to_owned()],
            &values,
        )?;
    }
    for r in rows {
        say!(
            "{:<9} {:<24} {:<17} {:<6} {:<40} {:>8.2} s, I/O {:>7.3} s (HDD {:.2}, SSD {:.2})",
            r.part,
            r.graph,
            r.job,
            r.medium,
            r.knobs,
            r.seconds,
            r.io_s,
            r.hdd_s,
            r.ssd_s
        );
    }
    eprintln!("wrote {} and its charts", csv_path.display());
    Ok(())
}
