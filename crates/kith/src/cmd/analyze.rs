//! `kith analyze ...`: graph analytics on one machine (vertex programs and triangle
//! counting), with optional sequential verification.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result, bail, ensure};
use clap::{Args, Subcommand};
use kith_analytics::{Formulation, InGraph, PageRankConfig, UNREACHABLE};
use serde_json::{Value, json};

use super::analyze_dist::{self as dist, DistArgs};
use super::graph::GraphInput;

#[derive(Debug, Subcommand)]
pub(crate) enum AnalyzeCommand {
    /// PageRank (the normalised formulation with dangling mass, or LFGraph's).
    Pagerank(PageRankArgs),
    /// Hop distances from one user along edge direction.
    Sssp(SsspArgs),
    /// Connected components (weakly connected for a directed graph).
    Cc(CcArgs),
    /// Triangles, in total and through each user (on the undirected graph).
    Triangles(TriangleArgs),
    /// Mutual friends of every friendship, and people-you-may-know for a user (on the
    /// undirected graph).
    MutualFriends(MutualArgs),
    /// Local clustering coefficients and their average (on the undirected graph).
    Clustering(CommonArgs),
    /// Core numbers, k-core decomposition (on the undirected graph).
    Kcore(CommonArgs),
    /// The MapReduce formulations (map, shuffle with spilled sorted runs, merge, reduce),
    /// with per-phase times, an I/O profile and a storage recommendation.
    #[command(subcommand)]
    Mr(super::analyze_mr::MrJob),
    /// LFGraph's communication model: values sent per vertex per iteration under Pregel,
    /// GraphLab, PowerGraph and LFGraph, and computation balance, for 2…256 servers.
    CommOverhead(super::analyze_comm::CommArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CommonArgs {
    #[command(flatten)]
    input: GraphInput,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Check the result against a sequential implementation.
    #[arg(long)]
    verify: bool,
    /// Relabel the graph by this layout file (from `kith layout compute`) before running:
    /// users placed together get neighbouring ids, so their values share cache lines.
    #[arg(long)]
    order: Option<PathBuf>,
    /// Write per-user results as CSV (original id, value).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dist: DistArgs,
}

#[derive(Debug, Args)]
pub(crate) struct PageRankArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// At most this many iterations.
    #[arg(long, default_value_t = 20)]
    iterations: usize,
    /// Stop when a step changes the ranks by less than this in L1 (0: all iterations).
    #[arg(long, default_value_t = 0.0)]
    tolerance: f64,
    /// Damping factor.
    #[arg(long, default_value_t = 0.85)]
    damping: f64,
    /// normalized (networkx's) or lfgraph.
    #[arg(long, default_value = "normalized", value_parser = ["normalized", "lfgraph"])]
    formulation: String,
}

#[derive(Debug, Args)]
pub(crate) struct SsspArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The source user (an original id).
    #[arg(long)]
    source: u64,
    /// Weighted distances: `source target weight` lines (the graph file itself when its
    /// third column is a weight). Links not listed weigh 1; negative weights are refused.
    #[arg(long)]
    weights: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct TriangleArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// merge (degree-ordered merge intersection, the fast path) or lists (LFGraph's
    /// list-valued vertex program).
    #[arg(long, default_value = "merge", value_parser = ["merge", "lists"])]
    method: String,
}

#[derive(Debug, Args)]
pub(crate) struct MutualArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Also rank people this user may know (an original id) by common friends.
    #[arg(long)]
    user: Option<u64>,
    /// How many people to suggest.
    #[arg(long, default_value_t = 10)]
    top: usize,
}

#[derive(Debug, Args)]
pub(crate) struct CcArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// label-propagation (the vertex program) or union-find (the fast path).
    #[arg(long, default_value = "label-propagation", value_parser = ["label-propagation", "union-find"])]
    method: String,
}

/// Worker threads: the given count (at least 1), or all cores.
pub(crate) fn thread_count(threads: Option<usize>) -> Result<usize> {
    Ok(match threads {
        Some(0) => bail!("--threads must be at least 1"),
        Some(t) => t,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    })
}

/// A spinner on stderr while a long computation runs (hidden when stderr is not a terminal).
pub(crate) fn spinner(what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new_spinner().with_style(
        indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
            .expect("a valid template"),
    );
    bar.set_message(what.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

pub(crate) fn run(command: AnalyzeCommand) -> Result<()> {
    if let AnalyzeCommand::Mr(job) = command {
        return super::analyze_mr::run(job);
    }
    if let AnalyzeCommand::CommOverhead(args) = &command {
        return super::analyze_comm::run(args);
    }
    let common = match &command {
        AnalyzeCommand::Mr(_) | AnalyzeCommand::CommOverhead(_) => unreachable!("handled above"),
        AnalyzeCommand::Pagerank(a) => &a.common,
        AnalyzeCommand::Sssp(a) => &a.common,
        AnalyzeCommand::Cc(a) => &a.common,
        AnalyzeCommand::Triangles(a) => &a.common,
        AnalyzeCommand::MutualFriends(a) => &a.common,
        AnalyzeCommand::Clustering(a) | AnalyzeCommand::Kcore(a) => a,
    };
    if common.dist.is_distributed() {
        match &command {
            AnalyzeCommand::Clustering(_) => dist::unsupported("clustering")?,
            AnalyzeCommand::Kcore(_) => dist::unsupported("kcore")?,
            AnalyzeCommand::Cc(a) if a.method == "union-find" => {
                dist::unsupported("cc --method union-find")?;
            }
            _ => {}
        }
    }
    if common.dist.is_launcher() {
        return dist::launch(common.dist.processes.unwrap_or(1));
    }
    let cluster = if common.dist.is_distributed() {
        // One worker thread per process unless told otherwise: local clusters share cores.
        Some(common.dist.member(thread_count(Some(common.threads.unwrap_or(1)))?)?)
    } else {
        None
    };
    let threads = thread_count(common.threads)?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    pool.install(|| analyze(&command, common, threads, cluster.as_ref()))
}

fn command_name(command: &AnalyzeCommand) -> &'static str {
    match command {
        AnalyzeCommand::Pagerank(_) => "pagerank",
        AnalyzeCommand::Sssp(_) => "sssp",
        AnalyzeCommand::Cc(_) => "cc",
        AnalyzeCommand::Triangles(_) => "triangles",
        AnalyzeCommand::MutualFriends(_) => "mutual-friends",
        AnalyzeCommand::Clustering(_) => "clustering",
        AnalyzeCommand::Kcore(_) => "kcore",
        AnalyzeCommand::Mr(_) => "mr",
        AnalyzeCommand::CommOverhead(_) => "comm-overhead",
    }
}

fn analyze(
    command: &AnalyzeCommand,
    common: &CommonArgs,
    threads: usize,
    cluster: Option<&kith_distributed::Cluster>,
) -> Result<()> {
    let graph = match command {
        AnalyzeCommand::Cc(_)
        | AnalyzeCommand::Triangles(_)
        | AnalyzeCommand::MutualFriends(_)
        | AnalyzeCommand::Clustering(_)
        | AnalyzeCommand::Kcore(_) => common.input.load_undirected()?,
        _ => common.input.load()?,
    };
    let busy = spinner(&format!(
        "{} on {} users, {} edges",
        command_name(command),
        graph.num_nodes(),
        graph.num_edges()
    ));
    if cluster.is_some_and(|c| c.process != 0) {
        busy.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let start = Instant::now();
    let mut ig = InGraph::new(&graph);
    let mut position: Option<Vec<u32>> = None;
    let mut order_s = json!({});
    if let Some(path) = &common.order {
        let t = Instant::now();
        let layout = kith_layout::read_layout(path, &graph)?;
        let read_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        ig = ig.relabel(layout.order());
        order_s = json!({"read_layout_s": read_s, "relabel_s": t.elapsed().as_secs_f64()});
        position = Some(layout.positions().to_vec());
    }
    let ig = Arc::new(ig);
    let prepare_s = start.elapsed().as_secs_f64();
    let ids = ig.original_ids().to_vec();
    let mut dist_report: Option<kith_distributed::Report> = None;
    let mut header = "uid,value";
    let (name, summary, per_user, verified, steps): (
        &str,
        Value,
        Vec<String>,
        Option<bool>,
        Option<usize>,
    ) = match command {
        AnalyzeCommand::Pagerank(a) => {
            ensure!(a.iterations > 0, "--iterations must be at least 1");
            ensure!(
                a.tolerance >= 0.0 && a.tolerance.is_finite(),
                "--tolerance must not be negative"
            );
            ensure!(a.damping > 0.0 && a.damping < 1.0, "--damping must be between 0 and 1");
            let formulation = if a.formulation == "lfgraph" {
                Formulation::LfGraph
            } else {
                Formulation::Normalized
            };
            let config = PageRankConfig {
                formulation,
                damping: a.damping,
                iterations: a.iterations,
                tolerance: a.tolerance,
            };
            // `run_s`: the steps' wall time (phases and global aggregates; distributed, the
            // initial exchange too).
            let (pr, steps, compute_s, run_s, delta) = match cluster {
                None => {
                    let (pr, stats, delta) = kith_analytics::pagerank(&ig, config);
                    (pr, stats.steps, stats.compute_s, stats.steps_s, delta)
                }
                Some(c) => {
                    let program = kith_distributed::PageRank::new(config, ig.num_vertices());
                    let Some(out) = dist::run(&ig, program, c)? else { return Ok(()) };
                    let r = dist_report.insert(out.report);
                    (out.values, r.steps, r.compute_s, r.steps_s, out.last.delta)
                }
            };
            let verified = common.verify.then(|| {
                if cluster.is_some() {
                    // Equal to the single-machine engine, up to the order of global sums.
                    let (want, _, _) = kith_analytics::pagerank(&ig, config);
                    pr.iter().zip(&want).all(|(x, y)| (x - y).abs() <= 1e-12 * y.abs())
                } else {
                    let want = kith_analytics::pagerank_sequential(&ig, config, steps);
                    pr.iter().zip(&want).map(|(x, y)| (x - y).abs()).sum::<f64>()
                        < 1e-9 * pr.len().max(1) as f64
                }
            });
            let mut order: Vec<usize> = (0..pr.len()).collect();
            order.sort_by(|&x, &y| pr[y].total_cmp(&pr[x]).then(x.cmp(&y)));
            let top: Vec<Value> =
                order.iter().take(10).map(|&v| json!({"uid": ids[v], "rank": pr[v]})).collect();
            let rows = pr.iter().enumerate().map(|(v, r)| format!("{},{r}", ids[v])).collect();
            (
                "pagerank",
                json!({"top": top, "iterations": steps, "last_delta": delta, "formulation": a.formulation, "run_s": run_s,
                       "edges_per_s": (ig.num_in_links() * steps) as f64 / compute_s.max(1e-12)}),
                rows,
                verified,
                Some(steps),
            )
        }
        AnalyzeCommand::Sssp(a) => {
            let source = graph
                .dense_id(a.source)
                .with_context(|| format!("--source {} is not a user of the graph", a.source))?;
            let source = position.as_ref().map_or(source, |p| p[source as usize]);
            if let Some(path) = &a.weights {
                let (weighted, read) =
                    kith_analytics::read_weights(&ig, graph.is_directed(), path)?;
                let weighted = Arc::new(weighted);
                let (dist, steps) = match cluster {
                    None => {
                        let (dist, stats) = kith_analytics::sssp_weighted(&weighted, source)?;
                        (dist, stats.steps)
                    }
                    Some(c) => {
                        let program = kith_distributed::Distances { source };
                        let Some(out) = dist::run(&weighted, program, c)? else { return Ok(()) };
                        (out.values, dist_report.insert(out.report).steps)
                    }
                };
                let verified = common.verify.then(|| {
                    kith_analytics::sssp_weighted_sequential(&weighted, source)
                        .is_ok_and(|want| want == dist)
                });
                let reached: Vec<f64> = dist.iter().copied().filter(|d| d.is_finite()).collect();
                let max = reached.iter().copied().fold(0.0, f64::max);
                let rows = dist
                    .iter()
                    .enumerate()
                    .filter(|&(_, d)| d.is_finite())
                    .map(|(v, d)| format!("{},{d}", ids[v]))
                    .collect();
                (
                    "sssp",
                    json!({"source": a.source, "reachable": reached.len(), "max_distance": max,
                           "weighted": true, "weight_lines": read.lines,
                           "links_weighted": read.weighted_links, "links_default_1": read.default_links}),
                    rows,
                    verified,
                    Some(steps),
                )
            } else {
                let (dist, steps) = match cluster {
                    None => {
                        let (dist, stats) = kith_analytics::sssp(&ig, source);
                        (dist, stats.steps)
                    }
                    Some(c) => {
                        let program = kith_distributed::Hops { source };
                        let Some(out) = dist::run(&ig, program, c)? else { return Ok(()) };
                        (out.values, dist_report.insert(out.report).steps)
                    }
                };
                let verified =
                    common.verify.then(|| dist == kith_analytics::sssp_sequential(&ig, source));
                let reachable = dist.iter().filter(|&&d| d != UNREACHABLE).count();
                let max = dist.iter().filter(|&&d| d != UNREACHABLE).max().copied().unwrap_or(0);
                let rows = dist
                    .iter()
                    .enumerate()
                    .filter(|&(_, &d)| d != UNREACHABLE)
                    .map(|(v, d)| format!("{},{d}", ids[v]))
                    .collect();
                (
                    "sssp",
                    json!({"source": a.source, "reachable": reachable, "max_distance": max, "weighted": false}),
                    rows,
                    verified,
                    Some(steps),
                )
            }
        }
        AnalyzeCommand::Cc(a) => {
            let (labels, steps) = if let Some(c) = cluster {
                let Some(out) = dist::run(&ig, kith_distributed::MinLabel, c)? else {
                    return Ok(());
                };
                (out.values, Some(dist_report.insert(out.report).steps))
            } else if a.method == "union-find" {
                (kith_analytics::components_union_find(&ig), None)
            } else {
                let (l, s) = kith_analytics::components_label_propagation(&ig);
                (l, Some(s.steps))
            };
            let verified =
                common.verify.then(|| labels == kith_analytics::components_union_find(&ig));
            let (components, largest) = kith_analytics::summarize(&labels);
            let rows = labels
                .iter()
                .enumerate()
                .map(|(v, &l)| format!("{},{}", ids[v], ids[l as usize]))
                .collect();
            (
                "cc",
                json!({"components": components, "largest": largest, "method": a.method}),
                rows,
                verified,
                steps,
            )
        }
        AnalyzeCommand::Clustering(_) => {
            let (per, _) = kith_analytics::triangles(&ig);
            let (local, average) = kith_analytics::clustering(&ig, &per);
            let verified = common.verify.then(|| {
                let (want, _) =
                    kith_analytics::clustering(&ig, &kith_analytics::triangles_sequential(&ig));
                want == local
            });
            let rows = local.iter().enumerate().map(|(v, c)| format!("{},{c}", ids[v])).collect();
            ("clustering", json!({"average_clustering": average}), rows, verified, None)
        }
        AnalyzeCommand::Kcore(_) => {
            let (cores, stats) = kith_analytics::core_numbers(&ig);
            let verified =
                common.verify.then(|| cores == kith_analytics::core_numbers_sequential(&ig));
            let max = cores.iter().copied().max().unwrap_or(0);
            let in_max = cores.iter().filter(|&&c| c == max).count();
            let rows = cores.iter().enumerate().map(|(v, c)| format!("{},{c}", ids[v])).collect();
            (
                "kcore",
                json!({"max_core": max, "max_core_users": in_max}),
                rows,
                verified,
                Some(stats.steps),
            )
        }
        AnalyzeCommand::Mr(_) | AnalyzeCommand::CommOverhead(_) => {
            unreachable!("run by their own modules")
        }
        AnalyzeCommand::Triangles(a) => {
            let (per, total, steps) = if let Some(c) = cluster {
                let Some(out) = dist::run(&ig, kith_distributed::TriangleLists, c)? else {
                    return Ok(());
                };
                let per = kith_distributed::triangle_counts(&out.values);
                let total = per.iter().sum::<u64>() / 3;
                (per, total, Some(dist_report.insert(out.report).steps))
            } else if a.method == "lists" {
                let (per, stats) = kith_analytics::triangles_vertex_program(&ig);
                let total = per.iter().sum::<u64>() / 3;
                (per, total, Some(stats.steps))
            } else {
                let (per, total) = kith_analytics::triangles(&ig);
                (per, total, None)
            };
            let verified = common.verify.then(|| per == kith_analytics::triangles_sequential(&ig));
            let rows = per.iter().enumerate().map(|(v, t)| format!("{},{t}", ids[v])).collect();
            let method = if cluster.is_some() { "lists" } else { a.method.as_str() };
            ("triangles", json!({"triangles": total, "method": method}), rows, verified, steps)
        }
        AnalyzeCommand::MutualFriends(a) => {
            let user = a
                .user
                .map(|uid| {
                    graph
                        .dense_id(uid)
                        .with_context(|| format!("--user {uid} is not a user of the graph"))
                        .map(|v| position.as_ref().map_or(v, |p| p[v as usize]))
                })
                .transpose()?;
            let (mf, steps) = match cluster {
                None => {
                    let (mf, stats) = kith_analytics::mutual_friends(&ig);
                    (mf, stats.steps)
                }
                Some(c) => {
                    let Some(out) = dist::run(&ig, kith_distributed::MutualLists, c)? else {
                        return Ok(());
                    };
                    let mf = kith_distributed::mutual_friends(&out.values);
                    (mf, dist_report.insert(out.report).steps)
                }
            };
            let suggestions = user.map(|v| kith_analytics::people_you_may_know(&ig, v, a.top));
            let verified = common.verify.then(|| {
                mf == kith_analytics::mutual_friends_sequential(&ig)
                    && user.is_none_or(|v| {
                        suggestions.as_ref()
                            == Some(&kith_analytics::people_you_may_know_sequential(&ig, v, a.top))
                    })
            });
            let most = mf.iter().max_by(|x, y| x.1.len().cmp(&y.1.len()).then(y.0.cmp(&x.0)));
            let pair = |(p, q): (u32, u32)| {
                let (a, b) = (ids[p as usize], ids[q as usize]);
                (a.min(b), a.max(b))
            };
            let mut summary = json!({
                "friendships": mf.len(),
                "total_common": mf.total(),
                "max_common": most.map(|(p, l)| {
                    let (a, b) = pair(p);
                    json!({"a": a, "b": b, "common": l.len()})
                }),
            });
            if let (Some(uid), Some(s)) = (a.user, &suggestions) {
                summary["user"] = json!(uid);
                summary["people_you_may_know"] =
                    s.iter().map(|&(w, c)| json!({"uid": ids[w as usize], "common": c})).collect();
            }
            let mut rows: Vec<(u64, u64, String)> = mf
                .iter()
                .map(|(p, list)| {
                    let (a, b) = pair(p);
                    let mut common: Vec<u64> = list.iter().map(|&w| ids[w as usize]).collect();
                    common.sort_unstable();
                    let text: Vec<String> = common.iter().map(u64::to_string).collect();
                    (a, b, format!("{a},{b},{},{}", common.len(), text.join(" ")))
                })
                .collect();
            rows.sort_unstable_by_key(|r| (r.0, r.1));
            header = "a,b,count,common_friends";
            (
                "mutual-friends",
                summary,
                rows.into_iter().map(|r| r.2).collect(),
                verified,
                Some(steps),
            )
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    busy.finish_and_clear();
    if let Some(path) = &common.out {
        let mut text = format!("{header}\n");
        for r in &per_user {
            text.push_str(r);
            text.push('\n');
        }
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let mut report = json!({"algorithm": name, "seconds": seconds, "threads": threads,
        "users": graph.num_nodes(), "edges": graph.num_edges(), "steps": steps,
        "order": common.order.as_ref().map(|p| p.display().to_string()),
        "prepare_s": prepare_s, "ordering": order_s});
    if let Some(v) = verified {
        report["verified"] = json!(v);
    }
    if let (Some(c), Some(r)) = (cluster, &dist_report) {
        for (k, v) in dist::report_json(c, r, &graph).as_object().expect("an object") {
            report[k] = v.clone();
        }
        report["threads"] = json!(c.threads);
    }
    for (k, v) in summary.as_object().expect("summary is an object") {
        report[k] = v.clone();
    }
    if common.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "{name} on {} users, {} edges, {threads} threads: {seconds:.3} s",
            graph.num_nodes(),
            graph.num_edges()
        );
        for (k, v) in summary.as_object().expect("object") {
            println!("  {k}: {v}");
        }
        if let Some(v) = verified {
            println!("  verified: {v}");
        }
        if let (Some(c), Some(r)) = (cluster, &dist_report) {
            dist::print_steps(c, r);
        }
    }
    ensure!(verified != Some(false), "{name}: the result differs from the sequential verifier");
    Ok(())
}
