//! GAPBS, the GAP Benchmark Suite's reference build, beside kith in `kith bench analytics`:
//! its `pr` (fixed iterations) and `tc` on the very graphs kith runs on, the same threads,
//! kernel time on both sides, and the agreement of the results.
//!
//! What each side's time includes:
//! - GAPBS: its own "Trial Time", the kernel call only: for `pr`, allocating the scores and
//!   contributions and the iterations; for `tc`, its relabelling by degree (when its
//!   heuristic chooses it) and the count. Reading and building the graph are outside.
//! - kith: the call of `kith_analytics::pagerank` (allocation, cutting the vertices into
//!   chunks, building the tiles when it gathers through them, and the iterations) on an
//!   `InGraph` already built, and of `kith_analytics::triangle_count` (ranking the vertices,
//!   building the higher-neighbour lists, the count). Loading and building the `InGraph`, and
//!   relabelling it by degree for the prepared order, are outside, and the relabelling is
//!   timed and reported on its own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use kith_analytics::{Formulation, InGraph, PageRankConfig, Precision};
use kith_graph::VertexId;
use serde_json::{Value, json};

use crate::bench::median;

/// GAPBS built in a cache directory.
pub(super) struct Gapbs {
    dir: PathBuf,
}

impl Gapbs {
    /// Copies GAPBS's sources from `source` into `~/.cache/kith/gapbs` (newer files only, so
    /// `make` rebuilds only what changed), builds `pr`, `tc` and `converter` with GAPBS's own
    /// Makefile (`-O3 -fopenmp`), and the score dumper `bench/gapbs_pr_scores.cc` beside them
    /// with the same flags.
    pub(super) fn build(source: &Path) -> Result<Gapbs> {
        ensure!(
            source.join("src/pr.cc").is_file() && source.join("Makefile").is_file(),
            "{}: not a GAPBS source tree (src/pr.cc and Makefile expected; --gapbs names it)",
            source.display()
        );
        let dir = cache_dir()?.join("gapbs");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut from = source.as_os_str().to_owned();
        from.push("/.");
        run(Command::new("cp").arg("-rup").arg(from).arg(&dir), "copying GAPBS's sources")?;
        run(
            Command::new("make").arg("-C").arg(&dir).args(["pr", "tc", "converter"]),
            "building GAPBS (needs make and g++: apt install make g++)",
        )?;
        let dumper = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/gapbs_pr_scores.cc");
        let mut cc = Command::new("g++");
        cc.args(["-std=c++11", "-O3", "-Wall", "-fopenmp", "-I"]).arg(dir.join("src"));
        cc.arg(&dumper).arg("-o").arg(dir.join("pr_scores"));
        run(&mut cc, "building bench/gapbs_pr_scores.cc")?;
        Ok(Gapbs { dir })
    }

    /// GAPBS's Kronecker graph of 2^`scale` vertices and degree `degree` (`converter -g
    /// scale -k degree -e`), as an edge list, generated once into the cache.
    pub(super) fn kronecker(&self, scale: u32, degree: u32) -> Result<PathBuf> {
        let path = self.dir.join(format!("kron{scale}-k{degree}.el"));
        if !path.is_file() {
            let partial = path.with_extension("el.partial");
            let mut c = Command::new(self.dir.join("converter"));
            c.arg(format!("-g{scale}")).arg(format!("-k{degree}")).arg("-e").arg(&partial);
            run(&mut c, "generating the Kronecker graph with GAPBS's converter")?;
            std::fs::rename(&partial, &path)?;
        }
        Ok(path)
    }

    /// `graph` in GAPBS's serialized format at `out` (each in-link `u → v` as an edge; an
    /// undirected graph's edges once each, symmetrized by the converter).
    pub(super) fn serialize(&self, graph: &InGraph, undirected: bool, out: &Path) -> Result<()> {
        let el = out.with_extension("el");
        write_in_links(graph, undirected, &el)?;
        let mut c = Command::new(self.dir.join("converter"));
        c.arg("-f").arg(&el);
        if undirected {
            c.arg("-s");
        }
        c.arg("-b").arg(out);
        let done = run(&mut c, "converting an edge list for GAPBS");
        let _ = std::fs::remove_file(&el);
        done.map(|_| ())
    }

    /// Runs `kernel` `trials` times on `threads` threads on a graph of `vertices`; its trial
    /// times and its stdout.
    fn trials(
        &self,
        kernel: &str,
        graph: &Path,
        args: &[&str],
        vertices: usize,
        (threads, trials): (usize, usize),
    ) -> Result<(Vec<f64>, String)> {
        let mut c = Command::new(self.dir.join(kernel));
        c.arg("-f").arg(graph).args(args).args(["-n", &trials.to_string()]);
        c.env("OMP_NUM_THREADS", threads.to_string());
        let out = run(&mut c, &format!("running GAPBS's {kernel}"))?;
        let times: Vec<f64> = out
            .lines()
            .filter_map(|l| l.strip_prefix("Trial Time:"))
            .filter_map(|t| t.trim().parse().ok())
            .collect();
        ensure!(times.len() == trials, "GAPBS's {kernel} printed {} trial times", times.len());
        let seen = out.lines().find_map(|l| {
            l.strip_prefix("Graph has ")?.split_whitespace().next()?.parse::<usize>().ok()
        });
        ensure!(
            seen == Some(vertices),
            "GAPBS's {kernel} saw {seen:?} vertices where kith's graph has {vertices}"
        );
        Ok((times, out))
    }

    /// GAPBS's PageRank scores after `iterations` (tolerance 0: all of them).
    fn scores(&self, graph: &Path, iterations: usize, threads: usize) -> Result<Vec<f32>> {
        let file = tempfile::NamedTempFile::new()?;
        let mut c = Command::new(self.dir.join("pr_scores"));
        c.arg("-f").arg(graph).args(["-i", &iterations.to_string(), "-t", "0"]);
        c.env("OMP_NUM_THREADS", threads.to_string()).env("KITH_SCORES_OUT", file.path());
        run(&mut c, "running GAPBS's PageRank for its scores")?;
        let bytes = std::fs::read(file.path())?;
        Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }
}

/// `$XDG_CACHE_HOME/kith`, else `~/.cache/kith`.
fn cache_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(dir).join("kith"));
    }
    let home = std::env::var_os("HOME").context("neither XDG_CACHE_HOME nor HOME is set")?;
    Ok(PathBuf::from(home).join(".cache/kith"))
}

/// Runs `command`; its stdout, or an error naming `what` with the end of its stderr.
fn run(command: &mut Command, what: &str) -> Result<String> {
    let out = command.output().with_context(|| format!("{what}: cannot start {command:?}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let mut tail: Vec<&str> = err.lines().rev().take(5).collect();
        tail.reverse();
        bail!("{what}: {command:?} failed ({}): {}", out.status, tail.join(" / "));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `graph`'s in-links as `u v` lines (`u → v`); undirected, each edge once (`u < v`). GAPBS
/// counts the vertices of an edge list up to its highest id, so a self-loop on the last
/// vertex ends the list: GAPBS drops self-loops after counting, and so sees all n vertices,
/// isolated ones included.
fn write_in_links(graph: &InGraph, undirected: bool, path: &Path) -> Result<()> {
    use std::io::Write;
    let file = std::fs::File::create(path)
        .with_context(|| format!("{}: cannot create", path.display()))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    for v in 0..graph.num_vertices() as VertexId {
        for &u in graph.in_links(v) {
            if !undirected || u < v {
                writeln!(out, "{u} {v}")?;
            }
        }
    }
    if let Some(last) = graph.num_vertices().checked_sub(1) {
        writeln!(out, "{last} {last}")?;
    }
    out.flush()?;
    Ok(())
}

fn l1<A: Copy + Into<f64>, B: Copy + Into<f64>>(a: &[A], b: &[B]) -> f64 {
    a.iter().zip(b).map(|(&x, &y)| (x.into() - y.into()).abs()).sum()
}

/// `trials` timed calls of `f`: their seconds, and the last result.
fn time<T>(trials: usize, mut f: impl FnMut() -> T) -> (Vec<f64>, T) {
    let mut times = Vec::with_capacity(trials);
    let mut last = None;
    for _ in 0..trials {
        let t = Instant::now();
        last = Some(f());
        times.push(t.elapsed().as_secs_f64());
    }
    (times, last.expect("at least one trial"))
}

/// What one graph's comparison needs.
pub(super) struct Inputs<'a> {
    pub name: &'a str,
    /// The graph PageRank runs on (the directed one when the data is directed).
    pub pr: &'a InGraph,
    pub pr_undirected: bool,
    /// The friendships, for triangles.
    pub friends: &'a InGraph,
    pub threads: usize,
    pub trials: usize,
}

/// kith beside GAPBS on one graph: PageRank in the input order and in degree order on both
/// sides, triangles in the input order (GAPBS relabels by degree itself), the ratios
/// (GAPBS's median seconds over kith's) and the agreement of the results.
pub(super) fn compare(
    gapbs: &Gapbs,
    inputs: &Inputs<'_>,
    progress: &dyn Fn(&str),
) -> Result<Value> {
    let Inputs { name, pr, pr_undirected, friends, threads, trials } = *inputs;
    let dir = tempfile::tempdir()?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;

    progress(&format!("{name}: relabelling by degree"));
    let t = Instant::now();
    let by_degree = pool.install(|| pr.relabel(&pr.degree_order()));
    let relabel_s = t.elapsed().as_secs_f64();

    progress(&format!("{name}: GAPBS's graphs"));
    let input_sg = dir.path().join("input.sg");
    gapbs.serialize(pr, pr_undirected, &input_sg)?;
    let degree_sg = dir.path().join("degree.sg");
    gapbs.serialize(&by_degree, pr_undirected, &degree_sg)?;
    let friends_sg = if pr_undirected {
        input_sg.clone()
    } else {
        let path = dir.path().join("friends.sg");
        gapbs.serialize(friends, true, &path)?;
        path
    };

    // PageRank: 20 iterations, tolerance 0, on both sides.
    let pr_args = ["-i", "20", "-t", "0"];
    let f64_config = PageRankConfig::default();
    let f32_config = PageRankConfig { precision: Precision::F32, ..f64_config };
    let mut pagerank = serde_json::Map::new();
    for (order, graph, sg) in [("input", pr, &input_sg), ("degree", &by_degree, &degree_sg)] {
        progress(&format!("{name}: PageRank, {order} order: GAPBS"));
        let (gapbs_times, _) =
            gapbs.trials("pr", sg, &pr_args, graph.num_vertices(), (threads, trials))?;
        progress(&format!("{name}: PageRank, {order} order: kith"));
        let (kith_f64, exact) =
            pool.install(|| time(trials, || kith_analytics::pagerank(graph, f64_config)));
        let (kith_f32, rounded) =
            pool.install(|| time(trials, || kith_analytics::pagerank(graph, f32_config)));
        let (g, k64, k32) = (
            median(&mut gapbs_times.clone()),
            median(&mut kith_f64.clone()),
            median(&mut kith_f32.clone()),
        );
        pagerank.insert(
            order.into(),
            json!({
                "gapbs_s": g, "gapbs_trials_s": gapbs_times,
                "kith_f64_s": k64, "kith_f64_trials_s": kith_f64,
                "kith_f32_s": k32, "kith_f32_trials_s": kith_f32,
                "speedup_f64": g / k64, "speedup_f32": g / k32,
                "f32_l1_error": l1(&rounded.0, &exact.0),
            }),
        );
    }
    let reference = pagerank["input"]["gapbs_s"].as_f64().unwrap_or(f64::NAN);
    let prepared = pagerank["degree"]["kith_f32_s"].as_f64().unwrap_or(f64::NAN);

    progress(&format!("{name}: PageRank vectors"));
    let agreement = pagerank_agreement(gapbs, pr, &input_sg, &pool, threads)?;

    progress(&format!("{name}: triangles: GAPBS"));
    let (gapbs_tc, out) =
        gapbs.trials("tc", &friends_sg, &["-a"], friends.num_vertices(), (threads, trials))?;
    let gapbs_count: Option<u64> =
        out.lines().find_map(|l| l.strip_suffix(" triangles").and_then(|c| c.trim().parse().ok()));
    progress(&format!("{name}: triangles: kith"));
    let (kith_tc, count) =
        pool.install(|| time(trials, || kith_analytics::triangle_count(friends)));
    let (per_vertex, (_, per_total)) =
        pool.install(|| time(1, || kith_analytics::triangles(friends)));
    ensure!(per_total == count, "{name}: kith's two triangle counts differ");
    let (g, k) = (median(&mut gapbs_tc.clone()), median(&mut kith_tc.clone()));

    Ok(json!({
        "graph": name,
        "threads": threads,
        "trials": trials,
        "pagerank": {
            "iterations": 20,
            "orders": Value::Object(pagerank),
            "relabel_by_degree_s": relabel_s,
            "speedup_prepared_vs_reference": reference / prepared,
            "speedup_prepared_with_relabel_vs_reference": reference / (prepared + relabel_s),
            "agreement": agreement,
        },
        "triangles": {
            "gapbs_s": g, "gapbs_trials_s": gapbs_tc, "gapbs_count": gapbs_count,
            "kith_s": k, "kith_trials_s": kith_tc, "kith_count": count,
            "kith_per_vertex_s": per_vertex[0],
            "speedup": g / k,
            "counts_agree": gapbs_count == Some(count),
        },
    }))
}

/// GAPBS's PageRank is `(1 - d)/n + d · Σ pr(u)/out(u)` from `1/n`, without the dangling
/// mass, and Gauss-Seidel (a vertex sees the values already updated in its step): kith's
/// LFGraph formulation over n is the same iteration done Jacobi-style. So after 20
/// iterations the two differ by how far each is from the common fixed point; run to
/// convergence (200 iterations each) they must agree up to GAPBS's `f32` scores.
fn pagerank_agreement(
    gapbs: &Gapbs,
    graph: &InGraph,
    sg: &Path,
    pool: &rayon::ThreadPool,
    threads: usize,
) -> Result<Value> {
    let n = graph.num_vertices().max(1) as f64;
    let kith = |iterations: usize| -> Vec<f64> {
        let config = PageRankConfig {
            formulation: Formulation::LfGraph,
            iterations,
            ..PageRankConfig::default()
        };
        let (ranks, _, _) = pool.install(|| kith_analytics::pagerank(graph, config));
        ranks.into_iter().map(|r| r / n).collect()
    };
    let (kith_20, kith_fixed) = (kith(20), kith(200));
    let gapbs_20 = gapbs.scores(sg, 20, threads)?;
    let gapbs_fixed = gapbs.scores(sg, 200, threads)?;
    ensure!(
        gapbs_20.len() == graph.num_vertices() && gapbs_fixed.len() == graph.num_vertices(),
        "GAPBS returned {} scores for {} vertices",
        gapbs_20.len(),
        graph.num_vertices()
    );
    let converged = l1(&gapbs_fixed, &kith_fixed);
    Ok(json!({
        "l1_kith_gapbs_20": l1(&kith_20, &gapbs_20),
        "l1_kith_20_to_fixed_point": l1(&kith_20, &kith_fixed),
        "l1_gapbs_20_to_fixed_point": l1(&gapbs_20, &kith_fixed),
        "l1_converged": converged,
        "agrees": converged < 1e-4,
    }))
}
