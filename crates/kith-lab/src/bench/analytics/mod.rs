//! `kith bench analytics`: PageRank, triangles and connected components on soc-Slashdot0902,
//! GAPBS's Kronecker graph (scale 20) and R-MAT and LFR graphs of LiveJournal scale, on 1
//! and 2 threads, beside GAPBS's reference build (`gapbs.rs`), networkx, python-igraph and
//! NetworKit on the same graphs in the same run (as ratios); the effect of `--order` (kith
//! layout, input order, random); and the MapReduce jobs' per-phase table beside the vertex
//! programs.

mod gapbs;
mod mapreduce;
mod plot;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use clap::Args;
use indicatif::ProgressBar;
use kith_analytics::{InGraph, PageRankConfig};
use kith_graph::generate::{LfrConfig, RmatConfig};
use kith_graph::{Graph, LoadConfig, VertexId};
use serde_json::{Value, json};

use crate::cli::spinner;
use crate::machine::{Machine, datasets_dir, git_commit, utc_now, write_json};

#[derive(Debug, Args)]
pub struct AnalyticsBenchArgs {
    /// The real datasets (default: $KITH_DATASETS, else shared/datasets beside the checkout).
    #[arg(long)]
    datasets: Option<PathBuf>,
    /// Vertices of the LFR graph (mean degree 20: 3.5 M gives LiveJournal's 35 M edges).
    #[arg(long, default_value_t = 3_500_000)]
    lfr_nodes: usize,
    /// Vertices of the R-MAT graph (Graph500 probabilities).
    #[arg(long, default_value_t = 1 << 21)]
    rmat_nodes: usize,
    /// Mean degree of the R-MAT graph before duplicates are merged.
    #[arg(long, default_value_t = 34.0)]
    rmat_degree: f64,
    /// Thread counts to run kith (and NetworKit) with.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// The graphs: soc-Slashdot0902, GAPBS's Kronecker graph of scale 20 (`kron20`), and
    /// the generated R-MAT and LFR graphs.
    #[arg(long, value_delimiter = ',', default_value = "slashdot,kron20,rmat,lfr")]
    graphs: Vec<String>,
    /// Peers to compare with (`none` for none): GAPBS's reference build, and Python
    /// libraries (each in its own process).
    #[arg(long, value_delimiter = ',', default_value = "gapbs,networkx,igraph,networkit")]
    baselines: Vec<String>,
    /// GAPBS's sources (default: peers/gapbs beside the datasets directory); built with its
    /// own Makefile into ~/.cache/kith/gapbs.
    #[arg(long)]
    gapbs: Option<PathBuf>,
    /// Timed runs of each kernel against GAPBS, on each side (medians are compared).
    #[arg(long, default_value_t = 5)]
    trials: usize,
    /// networkx only runs on graphs with at most this many edges.
    #[arg(long, default_value_t = 2_000_000)]
    networkx_max_edges: u64,
    /// The Python interpreter for the baselines.
    #[arg(long, default_value = "python3")]
    python: String,
    /// Datasets for the MapReduce table (file names in the datasets directory).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "facebook_combined.txt.gz,email-Enron.txt.gz,soc-Slashdot0902.txt.gz"
    )]
    mr_datasets: Vec<String>,
    /// The MapReduce jobs' shuffle budget.
    #[arg(long, default_value_t = 64)]
    mr_memory_mb: u64,
    /// Skip the `--order` comparison (it computes a kith layout of each generated graph).
    #[arg(long)]
    skip_orders: bool,
    /// Where to write the JSON (default: bench/results/analytics-<date>.json); the charts
    /// go beside it.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Only draw the charts of an earlier results file.
    #[arg(long, value_name = "JSON")]
    replot: Option<PathBuf>,
}

/// A graph to measure: the friendships, and the directed graph PageRank runs on when the
/// data is directed (otherwise PageRank runs on the friendships too).
struct Case {
    name: String,
    directed: Option<Graph>,
    friends: Graph,
}

pub(super) fn run(args: AnalyticsBenchArgs) -> Result<()> {
    if let Some(path) = &args.replot {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read", path.display()))?;
        let report: Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a results file", path.display()))?;
        return plot::plots(&report, path);
    }
    ensure!(args.threads.iter().all(|&t| t >= 1), "--threads must be at least 1");
    ensure!(args.trials >= 1, "--trials must be at least 1");
    let mut baselines: Vec<String> =
        args.baselines.iter().filter(|b| !b.is_empty() && *b != "none").cloned().collect();
    for b in &baselines {
        ensure!(
            ["gapbs", "networkx", "igraph", "networkit"].contains(&b.as_str()),
            "unknown baseline {b:?}; expected gapbs, networkx, igraph, networkit or none"
        );
    }
    for g in &args.graphs {
        ensure!(
            ["slashdot", "kron20", "rmat", "lfr"].contains(&g.as_str()),
            "unknown graph {g:?}; expected slashdot, kron20, rmat or lfr"
        );
    }
    let script = baseline_script()?;
    let datasets = args.datasets.clone().unwrap_or_else(datasets_dir);
    let stages = spinner("");
    let with_gapbs = baselines.iter().any(|b| b == "gapbs");
    let gapbs = if with_gapbs || args.graphs.iter().any(|g| g == "kron20") {
        stages.set_message("building GAPBS");
        let source = args.gapbs.clone().unwrap_or_else(|| datasets.join("../peers/gapbs"));
        Some(gapbs::Gapbs::build(&source)?)
    } else {
        None
    };
    baselines.retain(|b| b != "gapbs");
    let mut graphs = Vec::new();
    for which in &args.graphs {
        stages.set_message(format!("{which}: loading or generating"));
        let case = make_case(which, &datasets, gapbs.as_ref(), &args)?;
        let peer = gapbs.as_ref().filter(|_| with_gapbs);
        graphs.push(measure_case(&case, &args, &baselines, peer, &script, &stages)?);
    }
    let mut mapreduce = Vec::new();
    let mr_threads = args.threads.iter().copied().max().unwrap_or(1);
    for name in args.mr_datasets.iter().filter(|n| !n.is_empty() && *n != "none") {
        stages.set_message(format!("MapReduce jobs on {name}"));
        mapreduce.extend(mapreduce::table(
            &datasets.join(name),
            name,
            args.mr_memory_mb,
            mr_threads,
        )?);
    }
    stages.finish_and_clear();
    let report = json!({
        "benchmark": "analytics",
        "date": utc_now(),
        "commit": git_commit(),
        "machine": Machine::describe(),
        "pagerank_iterations": 20,
        "graphs": graphs,
        "mapreduce": mapreduce,
    });
    let date = report["date"].as_str().unwrap_or("unknown").get(..10).unwrap_or("unknown");
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("bench/results/analytics-{date}.json")));
    write_json(&out, &report)?;
    print_summary(&report);
    plot::plots(&report, &out)?;
    eprintln!("wrote {}", out.display());
    Ok(())
}

/// `bench/analytics_baselines.py` in the checkout.
fn baseline_script() -> Result<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/analytics_baselines.py");
    if path.is_file() { Ok(path) } else { bail!("{} is missing", path.display()) }
}

fn make_case(
    which: &str,
    datasets: &Path,
    gapbs: Option<&gapbs::Gapbs>,
    args: &AnalyticsBenchArgs,
) -> Result<Case> {
    Ok(match which {
        "kron20" => {
            let gapbs = gapbs.context("the kron20 graph is GAPBS's: --gapbs must build")?;
            let path = gapbs.kronecker(20, 16)?;
            let config = LoadConfig { progress: true, ..Default::default() };
            let friends = kith_graph::load(&path, &config)
                .with_context(|| format!("loading {}", path.display()))?;
            Case { name: "kron20".into(), directed: None, friends }
        }
        "slashdot" => {
            let path = datasets.join("soc-Slashdot0902.txt.gz");
            let config = LoadConfig { directed: true, progress: true, ..Default::default() };
            let directed = kith_graph::load(&path, &config)
                .with_context(|| format!("loading {}", path.display()))?;
            let friends = directed.to_undirected();
            Case { name: "soc-Slashdot0902".into(), directed: Some(directed), friends }
        }
        "rmat" => {
            let config = RmatConfig {
                nodes: args.rmat_nodes,
                avg_degree: args.rmat_degree,
                directed: false,
                seed: 1,
                progress: true,
                ..RmatConfig::default()
            };
            let g = kith_graph::generate::rmat(&config)?;
            Case { name: format!("rmat-{}", args.rmat_nodes), directed: None, friends: g }
        }
        _ => {
            let config = LfrConfig {
                nodes: args.lfr_nodes,
                avg_degree: 20.0,
                seed: 1,
                progress: true,
                ..LfrConfig::default()
            };
            let g = kith_graph::generate::lfr(&config)?.graph;
            Case { name: format!("lfr-{}", args.lfr_nodes), directed: None, friends: g }
        }
    })
}

/// kith's three algorithms on `threads` threads.
fn measure_kith(pr: &InGraph, friends: &InGraph, threads: usize) -> Result<Value> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    Ok(pool.install(|| {
        let t = Instant::now();
        let (ranks, stats, _) = kith_analytics::pagerank(pr, PageRankConfig::default());
        let pagerank_s = t.elapsed().as_secs_f64();
        let rate = (pr.num_in_links() * stats.steps) as f64 / stats.compute_s.max(1e-12);
        let t = Instant::now();
        let (_, triangles) = kith_analytics::triangles(friends);
        let triangles_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let (labels, cc_stats) = kith_analytics::components_label_propagation(friends);
        let cc_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let _ = kith_analytics::components_union_find(friends);
        let union_find_s = t.elapsed().as_secs_f64();
        let (components, _) = kith_analytics::summarize(&labels);
        json!({
            "threads": threads,
            "pagerank_s": pagerank_s,
            "pagerank_edges_per_s": rate,
            "pagerank_edges_per_s_per_core": rate / threads as f64,
            "pagerank_top": top10(&ranks),
            "triangles_s": triangles_s,
            "triangles": triangles,
            "cc_s": cc_s,
            "cc_steps": cc_stats.steps,
            "cc_union_find_s": union_find_s,
            "components": components,
        })
    }))
}

fn top10(ranks: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ranks.len()).collect();
    order.sort_by(|&a, &b| ranks[b].total_cmp(&ranks[a]).then(a.cmp(&b)));
    order.truncate(10);
    order
}

fn measure_case(
    case: &Case,
    args: &AnalyticsBenchArgs,
    baselines: &[String],
    gapbs: Option<&gapbs::Gapbs>,
    script: &Path,
    stages: &ProgressBar,
) -> Result<Value> {
    let name = &case.name;
    let friends = InGraph::new(&case.friends);
    let directed = case.directed.as_ref().map(InGraph::new);
    let pr = directed.as_ref().unwrap_or(&friends);
    let mut kith = Vec::new();
    for &t in &args.threads {
        stages.set_message(format!("{name}: kith on {t} threads"));
        kith.push(measure_kith(pr, &friends, t)?);
    }
    // The baselines read the same graph as an edge list of dense ids.
    let dir = tempfile::tempdir()?;
    let mut runs = Vec::new();
    if !baselines.is_empty() {
        stages.set_message(format!("{name}: writing edge lists for the baselines"));
        let undirected = dir.path().join("undirected.txt");
        write_edges(&case.friends, &undirected)?;
        let directed = match &case.directed {
            Some(graph) => {
                let path = dir.path().join("directed.txt");
                write_edges(graph, &path)?;
                Some(path)
            }
            None => None,
        };
        for library in baselines {
            if library == "networkx" && case.friends.num_edges() > args.networkx_max_edges {
                runs.push(json!({"library": library, "skipped": format!(
                    "more than --networkx-max-edges {} edges", args.networkx_max_edges)}));
                continue;
            }
            let thread_counts: Vec<usize> =
                if library == "networkit" { args.threads.clone() } else { vec![1] };
            for t in thread_counts {
                stages.set_message(format!("{name}: {library} on {t} threads"));
                let mut command = Command::new(&args.python);
                command.arg(script).args(["--library", library, "--threads", &t.to_string()]);
                command.arg("--nodes").arg(case.friends.num_nodes().to_string());
                command.arg("--edges").arg(&undirected);
                if let Some(d) = &directed {
                    command.arg("--directed-edges").arg(d);
                }
                let output = command
                    .output()
                    .with_context(|| format!("cannot start {} for {library}", args.python))?;
                if !output.status.success() {
                    let err = String::from_utf8_lossy(&output.stderr);
                    let tail: String = err.lines().rev().take(3).collect::<Vec<_>>().join(" / ");
                    eprintln!("warning: {library} failed on {name}: {tail}");
                    runs.push(json!({"library": library, "threads": t, "error": tail}));
                    continue;
                }
                let mut result: Value = serde_json::from_slice(&output.stdout)
                    .with_context(|| format!("{library}'s output is not JSON"))?;
                add_ratios(&mut result, &kith);
                runs.push(result);
            }
        }
    }
    let gapbs = match gapbs {
        Some(peer) => {
            let inputs = gapbs::Inputs {
                name,
                pr,
                pr_undirected: case.directed.is_none(),
                friends: &friends,
                threads: args.threads.iter().copied().max().unwrap_or(1),
                trials: args.trials,
            };
            gapbs::compare(peer, &inputs, &|m| stages.set_message(m.to_string()))?
        }
        None => Value::Null,
    };
    let orders = if args.skip_orders || case.directed.is_some() {
        Value::Null
    } else {
        measure_orders(case, &friends, args, stages)?
    };
    Ok(json!({
        "name": name,
        "users": case.friends.num_nodes(),
        "edges": case.friends.num_edges(),
        "pagerank_directed": case.directed.is_some(),
        "pagerank_in_links": pr.num_in_links(),
        "kith": kith,
        "baselines": runs,
        "gapbs": gapbs,
        "orders": orders,
    }))
}

/// Speed-ups of kith over a baseline run (baseline seconds over kith's, same thread count)
/// and whether the results agree.
fn add_ratios(result: &mut Value, kith: &[Value]) {
    let threads = result["threads"].as_u64().unwrap_or(1);
    let Some(k) = kith.iter().find(|k| k["threads"].as_u64() == Some(threads)) else { return };
    let r = result["results"].clone();
    let ratio = |alg: &str, field: &str| match (r[alg]["seconds"].as_f64(), k[field].as_f64()) {
        (Some(b), Some(ours)) if ours > 0.0 => json!(b / ours),
        _ => Value::Null,
    };
    result["kith_speedup"] = json!({
        "pagerank": ratio("pagerank", "pagerank_s"),
        "triangles": ratio("triangles", "triangles_s"),
        "cc": ratio("cc", "cc_s"),
        "cc_union_find": ratio("cc", "cc_union_find_s"),
    });
    let top_agrees = match r["pagerank"]["top"].as_array() {
        Some(top) => json!(top.first() == k["pagerank_top"].as_array().and_then(|t| t.first())),
        None => Value::Null,
    };
    result["agrees"] = json!({
        "triangles": r["triangles"]["triangles"] == k["triangles"],
        "components": r["cc"]["components"] == k["components"],
        "pagerank_top1": top_agrees,
    });
}

fn write_edges(graph: &Graph, path: &Path) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(path)
            .with_context(|| format!("{}: cannot create", path.display()))?,
    );
    let directed = graph.is_directed();
    for v in 0..graph.num_nodes() as VertexId {
        for &u in graph.neighbors(v) {
            if directed || u > v {
                writeln!(out, "{v} {u}")?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// PageRank, triangles and components after relabelling by a kith layout and a random one,
/// beside the input order.
fn measure_orders(
    case: &Case,
    input: &InGraph,
    args: &AnalyticsBenchArgs,
    stages: &ProgressBar,
) -> Result<Value> {
    let mut rows = Vec::new();
    for method in ["default", "random", "kith"] {
        stages.set_message(format!("{}: --order {method}", case.name));
        let t = Instant::now();
        let (graph, layout_s) = if method == "default" {
            (input.clone(), 0.0)
        } else {
            let config = kith_layout::LayoutConfig {
                method: method.parse()?,
                progress: true,
                ..Default::default()
            };
            let computed = kith_layout::compute(&case.friends, &config)?;
            let layout_s = t.elapsed().as_secs_f64();
            (input.relabel(computed.layout.order()), layout_s)
        };
        let prepare_s = t.elapsed().as_secs_f64();
        let mut per_threads = Vec::new();
        for &threads in &args.threads {
            per_threads.push(measure_kith(&graph, &graph, threads)?);
        }
        rows.push(json!({
            "order": method,
            "layout_s": layout_s,
            "relabel_s": prepare_s - layout_s,
            "runs": per_threads,
        }));
    }
    Ok(Value::Array(rows))
}

fn print_summary(report: &Value) {
    let f = |v: &Value| v.as_f64().map_or("-".to_string(), |x| format!("{x:.3}"));
    for g in report["graphs"].as_array().into_iter().flatten() {
        crate::say!(
            "{}: {} users, {} edges",
            g["name"].as_str().unwrap_or("?"),
            g["users"],
            g["edges"]
        );
        for k in g["kith"].as_array().into_iter().flatten() {
            crate::say!(
                "  kith {} threads: pagerank {} s ({:.0} M in-links/s per core), triangles {} s, cc {} s (union-find {} s)",
                k["threads"],
                f(&k["pagerank_s"]),
                k["pagerank_edges_per_s_per_core"].as_f64().unwrap_or(0.0) / 1e6,
                f(&k["triangles_s"]),
                f(&k["cc_s"]),
                f(&k["cc_union_find_s"])
            );
        }
        for b in g["baselines"].as_array().into_iter().flatten() {
            if b.get("results").is_none() {
                crate::say!(
                    "  {}: {}",
                    b["library"],
                    b.get("skipped").or(b.get("error")).unwrap_or(&Value::Null)
                );
                continue;
            }
            let r = &b["results"];
            let s = &b["kith_speedup"];
            crate::say!(
                "  {} {} threads: pagerank {} s (kith {}x), triangles {} s (kith {}x), cc {} s (kith {}x)",
                b["library"].as_str().unwrap_or("?"),
                b["threads"],
                f(&r["pagerank"]["seconds"]),
                f(&s["pagerank"]),
                f(&r["triangles"]["seconds"]),
                f(&s["triangles"]),
                f(&r["cc"]["seconds"]),
                f(&s["cc"])
            );
        }
        let gp = &g["gapbs"];
        if !gp.is_null() {
            let p = &gp["pagerank"];
            for order in ["input", "degree"] {
                let o = &p["orders"][order];
                crate::say!(
                    "  GAPBS pagerank, {order} order: {} s; kith f64 {} s ({}x), f32 {} s ({}x, L1 error {:.1e})",
                    f(&o["gapbs_s"]),
                    f(&o["kith_f64_s"]),
                    f(&o["speedup_f64"]),
                    f(&o["kith_f32_s"]),
                    f(&o["speedup_f32"]),
                    o["f32_l1_error"].as_f64().unwrap_or(f64::NAN)
                );
            }
            crate::say!(
                "  kith in degree order (relabelled in {} s) against GAPBS in the input order: {}x; vectors agree: {} (L1 after 20 iterations {:.1e})",
                f(&p["relabel_by_degree_s"]),
                f(&p["speedup_prepared_vs_reference"]),
                p["agreement"]["agrees"],
                p["agreement"]["l1_kith_gapbs_20"].as_f64().unwrap_or(f64::NAN)
            );
            let t = &gp["triangles"];
            crate::say!(
                "  GAPBS tc: {} s; kith {} s ({}x; per vertex {} s); counts agree: {}",
                f(&t["gapbs_s"]),
                f(&t["kith_s"]),
                f(&t["speedup"]),
                f(&t["kith_per_vertex_s"]),
                t["counts_agree"]
            );
        }
        for o in g["orders"].as_array().into_iter().flatten() {
            for k in o["runs"].as_array().into_iter().flatten() {
                crate::say!(
                    "  --order {} {} threads: pagerank {:.0} M in-links/s per core, triangles {} s, cc {} s",
                    o["order"].as_str().unwrap_or("?"),
                    k["threads"],
                    k["pagerank_edges_per_s_per_core"].as_f64().unwrap_or(0.0) / 1e6,
                    f(&k["triangles_s"]),
                    f(&k["cc_s"])
                );
            }
        }
    }
    for r in report["mapreduce"].as_array().into_iter().flatten() {
        let p = &r["phases"];
        crate::say!(
            "mr {} on {}: map {} shuffle {} merge {} reduce {} s (vertex program {} s); {:.0}% sequential",
            r["job"].as_str().unwrap_or("?"),
            r["dataset"].as_str().unwrap_or("?"),
            f(&p["map_s"]),
            f(&p["shuffle_s"]),
            f(&p["merge_s"]),
            f(&p["reduce_s"]),
            f(&r["vertex_program_s"]),
            100.0 * r["io"]["sequential_fraction"].as_f64().unwrap_or(0.0)
        );
    }
}
