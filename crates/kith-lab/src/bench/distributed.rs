//! `kith bench distributed`: timely PageRank on P local processes beside the single-machine
//! engine. Per graph: bytes sent under fetch-once and per-edge exchange for 2…8 workers
//! (with the communication model's prediction), and COST (McSherry et al.): the fewest
//! workers whose run beats the best single-thread run. Memory: peak memory per worker on a
//! Pregel-style log-normal graph when each process reads only its own parts of a partition
//! (`kith graph partition`), beside every process loading the whole graph and beside a
//! process's own memory on an empty graph. Every run is a `kith analyze` child, so
//! processes start, connect and load the graph as a user's would.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, ensure};
use clap::Args;
use serde_json::{Value, json};

use crate::cli::spinner;
use crate::machine::{Machine, datasets_dir, git_commit, run_self, utc_now, write_json};
use crate::plot::{LineChart, Series, bar_chart, line_chart};

#[derive(Debug, Args)]
pub struct DistributedBenchArgs {
    /// The real datasets (default: $KITH_DATASETS, else shared/datasets beside the checkout).
    #[arg(long)]
    datasets: Option<PathBuf>,
    /// Vertices of the generated LFR graph (mean degree 20).
    #[arg(long, default_value_t = 500_000)]
    lfr_nodes: usize,
    /// Worker counts (one process each) for the exchange comparison and COST.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8")]
    workers: Vec<usize>,
    /// Vertices of the log-normal graph (mean out-degree 127) of the memory runs.
    #[arg(long, default_value_t = 200_000)]
    memory_nodes: usize,
    /// PageRank iterations per run.
    #[arg(long, default_value_t = 20)]
    iterations: usize,
    /// Runs of each configuration; the fastest counts (the machine is shared and noisy).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Where to write the JSON (default: bench/results/distributed-<date>.json); the charts
    /// and the communication model's CSV and charts go beside it.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Only draw the charts of an earlier results file.
    #[arg(long, value_name = "JSON")]
    replot: Option<PathBuf>,
}

/// Runs `kith analyze pagerank` with `extra` arguments `args.repeat` times; the fastest
/// run's JSON.
fn pagerank(graph: &[String], extra: &[&str], args: &DistributedBenchArgs) -> Result<Value> {
    pagerank_runs(graph, extra, args.iterations, args.repeat)
}

/// [`pagerank`] with its own iterations and repeats.
fn pagerank_runs(
    graph: &[String],
    extra: &[&str],
    iterations: usize,
    repeat: usize,
) -> Result<Value> {
    let iterations = iterations.to_string();
    let mut best: Option<Value> = None;
    for _ in 0..repeat.max(1) {
        let mut argv: Vec<&str> = vec!["analyze", "pagerank"];
        argv.extend(graph.iter().map(String::as_str));
        argv.extend(["--iterations", &iterations, "--json"]);
        argv.extend_from_slice(extra);
        let run = run_self(&argv)?;
        let mut r: Value =
            serde_json::from_str(&run.stdout).context("kith analyze printed no JSON")?;
        // Memory per worker: each process's peak (one entry for a single process).
        r["peak_rss_mb"] = if run.process_peak_rss_mb.is_empty() {
            json!([run.peak_rss_mb])
        } else {
            json!(run.process_peak_rss_mb)
        };
        if best.as_ref().is_none_or(|b| r["run_s"].as_f64() < b["run_s"].as_f64()) {
            best = Some(r);
        }
    }
    Ok(best.expect("at least one run"))
}

pub(super) fn run(args: DistributedBenchArgs) -> Result<()> {
    if let Some(path) = &args.replot {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read", path.display()))?;
        let report: Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a results file", path.display()))?;
        return plots(&report, path);
    }
    ensure!(args.workers.iter().all(|&w| w >= 1), "--workers must be at least 1");
    let datasets = args.datasets.clone().unwrap_or_else(datasets_dir);
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!("bench/results/distributed-{}.json", &utc_now()[..10]))
    });
    let bar = spinner("");
    let scratch = tempfile::tempdir()?;
    let lfr = scratch.path().join("lfr.kgraph");
    bar.set_message(format!("generating LFR with {} users", args.lfr_nodes));
    run_self(&[
        "graph",
        "generate",
        "--model",
        "lfr",
        "--nodes",
        &args.lfr_nodes.to_string(),
        "--avg-degree",
        "20",
        "--seed",
        "1",
        "-o",
        lfr.to_str().context("a UTF-8 path")?,
    ])?;
    let path = |name: &str| datasets.join(name).display().to_string();
    let cases: Vec<(String, Vec<String>)> = vec![
        ("soc-Slashdot0902".into(), vec![path("soc-Slashdot0902.txt.gz"), "--directed".into()]),
        ("wiki-Vote".into(), vec![path("wiki-Vote.txt.gz"), "--directed".into()]),
        (format!("lfr-{}", args.lfr_nodes), vec![lfr.display().to_string()]),
    ];
    let mut graphs = Vec::new();
    for (name, graph) in &cases {
        bar.set_message(format!("{name}: single machine"));
        let single = pagerank(graph, &["--threads", "1"], &args)?;
        let best_single_s = single["run_s"].as_f64().unwrap_or(f64::NAN);
        let mut runs = Vec::new();
        let mut in_process = Vec::new();
        for &w in &args.workers {
            let w_text = w.to_string();
            let mut row = json!({"workers": w});
            for mode in ["fetch-once", "per-edge"] {
                bar.set_message(format!("{name}: {w} processes, {mode}"));
                let r = pagerank(graph, &["--processes", &w_text, "--exchange", mode], &args)?;
                row[mode] = json!({
                    "bytes": r["exchange"]["bytes"], "messages": r["exchange"]["messages"],
                    "max_worker_bytes": r["exchange"]["max_worker_bytes"],
                    "mean_worker_bytes": r["exchange"]["mean_worker_bytes"],
                    "run_s": r["run_s"], "compute_s": r["compute_s"], "exchange_s": r["exchange_s"],
                    "model": r["model"], "peak_rss_mb": r["peak_rss_mb"],
                });
            }
            let ratio = row["per-edge"]["bytes"].as_f64().unwrap_or(0.0)
                / row["fetch-once"]["bytes"].as_f64().unwrap_or(f64::NAN).max(1.0);
            row["per_edge_over_fetch_once_bytes"] = json!(ratio);
            runs.push(row);
            bar.set_message(format!("{name}: 1 process, {w} threads"));
            let r = pagerank(graph, &["--processes", "1", "--threads", &w_text], &args)?;
            in_process.push(json!({"workers": w, "run_s": r["run_s"],
                "bytes": r["exchange"]["bytes"], "peak_rss_mb": r["peak_rss_mb"]}));
        }
        let cost = |rows: &[Value], key: &dyn Fn(&Value) -> Option<f64>| {
            rows.iter()
                .find(|r| key(r).is_some_and(|s| s < best_single_s))
                .and_then(|r| r["workers"].as_u64())
        };
        let cost_processes = cost(&runs, &|r| r["fetch-once"]["run_s"].as_f64());
        let cost_threads = cost(&in_process, &|r| r["run_s"].as_f64());
        graphs.push(json!({
            "name": name,
            "users": single["users"], "edges": single["edges"],
            "single_thread_run_s": best_single_s, "single_thread_peak_rss_mb": single["peak_rss_mb"][0],
            "single_thread_edges_per_s": single["edges_per_s"],
            "processes": runs,
            "threads_in_one_process": in_process,
            "cost_workers_processes": cost_processes,
            "cost_workers_threads": cost_threads,
        }));
    }
    let mut mapreduce = Vec::new();
    let slashdot = path("soc-Slashdot0902.txt.gz");
    for job in ["triangles", "cc"] {
        for processes in
            std::iter::once(None).chain(args.workers.iter().copied().filter(|&w| w <= 4).map(Some))
        {
            bar.set_message(format!("mr {job} on soc-Slashdot0902, {processes:?} processes"));
            let p_text = processes.map(|p| p.to_string());
            let mut argv = vec!["analyze", "mr", job, slashdot.as_str(), "--json"];
            if let Some(p) = &p_text {
                argv.extend(["--processes", p]);
            }
            let r: Value = serde_json::from_str(&run_self(&argv)?.stdout)?;
            mapreduce.push(json!({
                "job": job, "graph": "soc-Slashdot0902",
                "engine": if processes.is_some() { "timely" } else { "single machine (spilling)" },
                "workers": processes.unwrap_or(1),
                "seconds": r["seconds"], "phases": r["phases"], "rounds": r["rounds"].as_array().map(Vec::len),
                "shuffled_bytes": r["shuffled_bytes"],
            }));
        }
    }
    let memory = memory(&args, scratch.path(), &|m| bar.set_message(m))?;
    bar.set_message("the communication model");
    let dir = out.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut model = Vec::new();
    for (name, graph) in cases.iter().take(2) {
        let plot_dir = dir.join(format!("comm-{name}"));
        let mut argv: Vec<&str> = vec!["analyze", "comm-overhead"];
        argv.extend(graph.iter().map(String::as_str));
        argv.extend(["--json", "--plot", plot_dir.to_str().context("a UTF-8 path")?]);
        let r: Value = serde_json::from_str(&run_self(&argv)?.stdout)?;
        model.push(json!({"name": name, "servers": r["servers"]}));
    }
    bar.finish_and_clear();
    let report = json!({
        "benchmark": "distributed",
        "date": utc_now(),
        "commit": git_commit(),
        "machine": Machine::describe(),
        "algorithm": "pagerank (normalised), every value changes every step",
        "iterations": args.iterations,
        "repeat": args.repeat,
        "graphs": graphs,
        "mapreduce": mapreduce,
        "memory": memory,
        "model": model,
    });
    write_json(&out, &report)?;
    plots(&report, &out)?;
    print_summary(&report);
    eprintln!("wrote {}", out.display());
    Ok(())
}

/// Peak memory per worker, PageRank on W processes of one thread for W = 1 and each worker
/// count, on a generated log-normal graph (Pregel's, mean out-degree 127, so that links
/// outweigh per-vertex arrays): each process reading only its own parts of a partition,
/// every process loading the whole graph, and a process on an empty graph (what a process
/// of a W-process cluster takes before any graph). One run each: peaks barely vary.
fn memory(args: &DistributedBenchArgs, scratch: &Path, say: &dyn Fn(String)) -> Result<Value> {
    let text = |p: &Path| p.to_str().map(str::to_owned).context("a UTF-8 path");
    let graph = scratch.join("lognormal.kgraph");
    let nodes = args.memory_nodes.to_string();
    say(format!("memory: generating a log-normal graph of {nodes} users"));
    run_self(&[
        "graph",
        "generate",
        "--model",
        "lognormal",
        "--nodes",
        &nodes,
        "--seed",
        "1",
        "-o",
        &text(&graph)?,
    ])?;
    let empty = scratch.join("empty.txt");
    std::fs::write(&empty, "1 2\n")?;
    let max = |r: &Value| {
        r["peak_rss_mb"]
            .as_array()
            .map_or(0.0, |p| p.iter().filter_map(Value::as_f64).fold(0.0, f64::max))
    };
    let mut rows = Vec::new();
    let (mut users, mut edges) = (Value::Null, Value::Null);
    let counts = std::iter::once(1).chain(args.workers.iter().copied().filter(|&w| w > 1));
    for w in counts {
        let w_text = w.to_string();
        let cluster = ["--processes", w_text.as_str()];
        let (dir, empty_dir) =
            (scratch.join(format!("parts-{w}")), scratch.join(format!("empty-{w}")));
        say(format!("memory: cutting {w} parts"));
        let t = Instant::now();
        for (g, d) in [(&graph, &dir), (&empty, &empty_dir)] {
            run_self(&["graph", "partition", &text(g)?, "--parts", &w_text, "-o", &text(d)?])?;
        }
        let partition_s = t.elapsed().as_secs_f64();
        say(format!("memory: {w} processes, each reading its parts"));
        let own = pagerank_runs(&[text(&dir)?], &cluster, args.iterations, 1)?;
        say(format!("memory: {w} processes, each loading the whole graph"));
        let whole = pagerank_runs(&[text(&graph)?], &cluster, args.iterations, 1)?;
        say(format!("memory: {w} processes on an empty graph"));
        let base = pagerank_runs(&[text(&empty_dir)?], &cluster, 1, 1)?;
        (users, edges) = (own["users"].clone(), own["edges"].clone());
        let baseline = max(&base);
        rows.push(json!({"workers": w, "baseline_rss_mb": baseline,
            "partitioned": {"peak_rss_mb": own["peak_rss_mb"], "max_peak_rss_mb": max(&own),
                "graph_mb": max(&own) - baseline, "run_s": own["run_s"],
                "read_s": own["partition"]["read_s"],
                "in_links_read_by_process_0": own["partition"]["in_links_read"],
                "partition_s": partition_s},
            "whole": {"peak_rss_mb": whole["peak_rss_mb"], "max_peak_rss_mb": max(&whole),
                "graph_mb": max(&whole) - baseline, "run_s": whole["run_s"]}}));
        for d in [&dir, &empty_dir] {
            std::fs::remove_dir_all(d).with_context(|| format!("removing {}", d.display()))?;
        }
    }
    // Memory for the graph (above a process's own) against one process's, beside 1/W.
    let one = rows.first().and_then(|r| r["partitioned"]["graph_mb"].as_f64()).unwrap_or(f64::NAN);
    for r in &mut rows {
        let w = r["workers"].as_f64().unwrap_or(1.0);
        r["graph_mb_over_one_process"] =
            json!(r["partitioned"]["graph_mb"].as_f64().unwrap_or(0.0) / one);
        r["ideal_over_one_process"] = json!(1.0 / w);
    }
    Ok(json!({"graph": format!("lognormal-{nodes}"), "users": users, "edges": edges,
        "iterations": args.iterations, "rows": rows}))
}

fn print_summary(report: &Value) {
    let m = &report["memory"];
    for r in m["rows"].as_array().into_iter().flatten() {
        let f = |v: &Value| v.as_f64().unwrap_or(0.0);
        crate::say!(
            "memory, PageRank on {} ({} processes): largest worker {:.0} MB reading its parts, {:.0} MB loading the whole graph, {:.0} MB on an empty graph; graph memory {:.2} x one process's (1/W = {:.2})",
            m["graph"].as_str().unwrap_or("?"),
            r["workers"],
            f(&r["partitioned"]["max_peak_rss_mb"]),
            f(&r["whole"]["max_peak_rss_mb"]),
            f(&r["baseline_rss_mb"]),
            f(&r["graph_mb_over_one_process"]),
            f(&r["ideal_over_one_process"])
        );
    }
    for m in report["mapreduce"].as_array().into_iter().flatten() {
        let p = &m["phases"];
        crate::say!(
            "mr {} on {}, {} ({} workers): {:.3} s (map {:.3}, shuffle {:.3}, merge {:.3}, reduce {:.3})",
            m["job"].as_str().unwrap_or("?"),
            m["graph"].as_str().unwrap_or("?"),
            m["engine"].as_str().unwrap_or("?"),
            m["workers"],
            m["seconds"].as_f64().unwrap_or(0.0),
            p["map_s"].as_f64().unwrap_or(0.0),
            p["shuffle_s"].as_f64().unwrap_or(0.0),
            p["merge_s"].as_f64().unwrap_or(0.0),
            p["reduce_s"].as_f64().unwrap_or(0.0)
        );
    }
    for g in report["graphs"].as_array().into_iter().flatten() {
        crate::say!(
            "{}: single thread {:.3} s; COST {} workers as processes, {} as threads",
            g["name"].as_str().unwrap_or("?"),
            g["single_thread_run_s"].as_f64().unwrap_or(0.0),
            g["cost_workers_processes"],
            g["cost_workers_threads"]
        );
        for r in g["processes"].as_array().into_iter().flatten() {
            crate::say!(
                "  {} workers: fetch-once {:.1} MB in {:.3} s, per-edge {:.1} MB in {:.3} s ({:.1}x bytes); \
                 peak memory per worker {} MB",
                r["workers"],
                r["fetch-once"]["bytes"].as_f64().unwrap_or(0.0) / 1e6,
                r["fetch-once"]["run_s"].as_f64().unwrap_or(0.0),
                r["per-edge"]["bytes"].as_f64().unwrap_or(0.0) / 1e6,
                r["per-edge"]["run_s"].as_f64().unwrap_or(0.0),
                r["per_edge_over_fetch_once_bytes"].as_f64().unwrap_or(0.0),
                r["fetch-once"]["peak_rss_mb"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|m| format!("{:.0}", m.as_f64().unwrap_or(0.0)))
                    .collect::<Vec<_>>()
                    .join("/")
            );
        }
    }
}

/// Bytes by exchange mode, and run time against workers with the single-thread line.
fn plots(report: &Value, out: &Path) -> Result<()> {
    let graphs = report["graphs"].as_array().cloned().unwrap_or_default();
    // Bytes per vertex per round with values (the initial exchange and every step but the
    // last), so that graphs of different sizes share the axis.
    let rounds = report["iterations"].as_f64().unwrap_or(1.0).max(1.0);
    let (mut groups, mut values) = (Vec::new(), Vec::new());
    for g in &graphs {
        let users = g["users"].as_f64().unwrap_or(1.0).max(1.0);
        for r in g["processes"].as_array().into_iter().flatten() {
            // Short names, so that the labels fit: slashdot, wiki, lfr.
            let name = g["name"].as_str().unwrap_or("?");
            let name = name.strip_prefix("soc-").unwrap_or(name);
            let short = name.split(['-', '0']).next().unwrap_or(name).to_lowercase();
            groups.push(format!("{short} W{}", r["workers"]));
            values.push(
                ["fetch-once", "per-edge"]
                    .iter()
                    .map(|m| r[*m]["bytes"].as_f64().unwrap_or(0.0) / (users * rounds))
                    .collect(),
            );
        }
    }
    bar_chart(
        &out.with_file_name("distributed-bytes.png"),
        "PageRank: bytes sent between workers per vertex per round",
        "bytes per vertex per round",
        &groups,
        &["fetch-once".into(), "per-edge".into()],
        &values,
    )?;
    let mut series = Vec::new();
    // Graphs whose single-thread run takes under 10 ms measure start-up, not PageRank.
    for g in graphs.iter().filter(|g| g["single_thread_run_s"].as_f64() >= Some(0.01)) {
        let name = g["name"].as_str().unwrap_or("?");
        let single = g["single_thread_run_s"].as_f64().unwrap_or(0.0);
        let runs = g["processes"].as_array().cloned().unwrap_or_default();
        series.push(Series {
            name: format!("{name}: timely, W processes"),
            points: runs
                .iter()
                .filter_map(|r| {
                    Some((r["workers"].as_f64()?, r["fetch-once"]["run_s"].as_f64()? / single))
                })
                .collect(),
        });
        series.push(Series {
            name: format!("{name}: timely, W threads"),
            points: g["threads_in_one_process"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| Some((r["workers"].as_f64()?, r["run_s"].as_f64()? / single)))
                .collect(),
        });
    }
    series
        .push(Series { name: "single thread (1.0)".into(), points: vec![(2.0, 1.0), (8.0, 1.0)] });
    line_chart(
        &out.with_file_name("distributed-cost.png"),
        &LineChart {
            title: "COST: PageRank time relative to the best single-thread run (below 1 beats it)",
            x_label: "workers",
            y_label: "time / single-thread time",
            log2_x: true,
        },
        &series,
    )?;
    memory_plot(report, out)
}

/// Peak memory of the largest worker against workers on the memory runs' graph: reading
/// its own parts, loading the whole graph, on an empty graph, and one process's graph
/// memory divided by W above the empty graph's.
fn memory_plot(report: &Value, out: &Path) -> Result<()> {
    let m = &report["memory"];
    let Some(rows) = m["rows"].as_array().filter(|r| !r.is_empty()) else { return Ok(()) };
    let points = |peak: &dyn Fn(&Value) -> Option<f64>| {
        rows.iter().filter_map(|r| Some((r["workers"].as_f64()?, peak(r)?))).collect::<Vec<_>>()
    };
    let one = rows[0]["partitioned"]["graph_mb"].as_f64().unwrap_or(0.0);
    let series = vec![
        Series {
            name: "every process loads the whole graph".into(),
            points: points(&|r| r["whole"]["max_peak_rss_mb"].as_f64()),
        },
        Series {
            name: "each process reads its own parts".into(),
            points: points(&|r| r["partitioned"]["max_peak_rss_mb"].as_f64()),
        },
        Series {
            name: "empty graph + 1/W of one process's graph memory".into(),
            points: points(&|r| {
                Some(r["baseline_rss_mb"].as_f64()? + one / r["workers"].as_f64()?)
            }),
        },
        Series {
            name: "a process on an empty graph".into(),
            points: points(&|r| r["baseline_rss_mb"].as_f64()),
        },
    ];
    line_chart(
        &out.with_file_name("distributed-memory.png"),
        &LineChart {
            title: &format!(
                "PageRank on {}: peak memory of the largest worker",
                m["graph"].as_str().unwrap_or("?")
            ),
            x_label: "workers (one process each)",
            y_label: "peak RSS per worker (MB)",
            log2_x: true,
        },
        &series,
    )
}
