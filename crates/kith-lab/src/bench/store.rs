//! `kith bench store`: the store on real graphs. Device pages per "list all friends" for
//! every layout and data size (cold), beside kith-layout's model of them; read and
//! durable-write throughput, and fsyncs per write.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use kith_graph::Graph;
use kith_layout::metrics::mean_pages_of;
use kith_layout::{LayoutConfig, Method, compute};
use kith_store::{
    BuildOptions, CacheMode, DataSpec, FriendsBench, OpenOptions, Store, Ticker, build,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;

use crate::cli::GraphInput;
use crate::experiment::FIXED_BLOCKS;
use crate::machine::{Machine, datasets_dir, git_commit, utc_now, write_json};
use crate::plot::bar_chart;

#[derive(Debug, Args)]
pub struct StoreBenchArgs {
    /// The real datasets (default: $KITH_DATASETS, else shared/datasets beside the checkout).
    #[arg(long)]
    datasets: Option<PathBuf>,
    /// Graphs to measure (file names in the datasets directory).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "facebook_combined.txt.gz,soc-brightkite.mtx.gz,soc-Slashdot0902.txt.gz"
    )]
    graphs: Vec<String>,
    /// Layout methods.
    #[arg(long, value_delimiter = ',', default_value = "default,random,parcom,gorder,kith")]
    methods: Vec<Method>,
    /// Data sizes.
    #[arg(long, value_delimiter = ',', default_value = "40,400,4096,40960")]
    sizes: Vec<u64>,
    /// Users queried per store (cold, one run each: pages do not vary between runs).
    #[arg(long, default_value_t = 500)]
    users: usize,
    /// Seconds per throughput measurement.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Where to write the JSON results (default: bench/results/store-<date>.json).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct StoreBench {
    benchmark: &'static str,
    date: String,
    commit: Option<String>,
    machine: Machine,
    cold_means: String,
    pages: Vec<PagesCase>,
    throughput: Throughput,
}

#[derive(Debug, Serialize)]
struct PagesCase {
    graph: String,
    size_bytes: u64,
    method: String,
    users: usize,
    /// Pages (4 KiB RocksDB blocks) read from files per query, as RocksDB counts them.
    pages_read_mean: f64,
    /// Of those, friends' data pages (Bondhu's measure, the friend list in memory).
    data_pages_read_mean: f64,
    /// Distinct 4 KiB file pages the reads touched per query.
    device_pages_mean: f64,
    bytes_read_mean: f64,
    median_ms: f64,
    /// kith-layout's model of the same: the data blocks of the store's entries (see
    /// `kith_store::PageModel`), plus the index block.
    modelled_pages: f64,
    /// The model's data pages alone.
    modelled_data_pages: f64,
    /// pages_read_mean over parcom's and random's at the same size.
    vs_parcom: Option<f64>,
    vs_random: Option<f64>,
    /// data_pages_read_mean over parcom's and random's at the same size.
    data_vs_parcom: Option<f64>,
    data_vs_random: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Throughput {
    graph: String,
    /// Warm get_friends_list(limit 100), 2 reader threads.
    friends_list_ops_per_s: f64,
    /// Durable add_friend with 8 writer threads.
    add_friend_8_writers_ops_per_s: f64,
    /// WAL fsyncs per acknowledged add_friend with 8 writers (group commit shares them).
    add_friend_8_writers_fsyncs_per_op: f64,
    /// Durable add_friend with 1 writer, for comparison.
    add_friend_1_writer_ops_per_s: f64,
    add_friend_1_writer_fsyncs_per_op: f64,
}

/// Runs `op` on `threads` threads for `seconds`; returns the rate of calls that did
/// something (`op` returns whether it did).
fn timed_threads(
    threads: usize,
    seconds: f64,
    seed: u64,
    op: impl Fn(&mut Pcg64Mcg) -> Result<bool> + Sync,
) -> Result<f64> {
    let stop = AtomicBool::new(false);
    let count = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|s| -> Result<()> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, count, op) = (&stop, &count, &op);
                s.spawn(move || -> Result<()> {
                    let mut rng =
                        Pcg64Mcg::seed_from_u64(seed ^ (t as u64 + 1).wrapping_mul(0x9e37_79b9));
                    while !stop.load(Ordering::Relaxed) {
                        if op(&mut rng)? {
                            count.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
        for h in handles {
            h.join().map_err(|_| anyhow::anyhow!("a benchmark thread panicked"))??;
        }
        Ok(())
    })?;
    Ok(count.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64())
}

fn throughput(graph_name: &str, graph: &Graph, seconds: f64, tmp: &Path) -> Result<Throughput> {
    let dir = tmp.join("throughput");
    let layout = compute(graph, &LayoutConfig::default())?.layout;
    drop(build(
        &dir,
        graph,
        &layout,
        kith_store::LayoutMeta::of(&LayoutConfig::default()),
        &BuildOptions::default(),
    )?);
    let store = Store::open(&dir, &OpenOptions::default())?;
    let uids = graph.original_ids();
    let pick = |rng: &mut Pcg64Mcg| uids[rng.random_range(0..uids.len())];
    let reads = timed_threads(2, seconds, 1, |rng| {
        store.get_friends_list(pick(rng), 0, 100)?;
        Ok(true)
    })?;
    // Only calls that add a new friendship write (and sync); the rates count those.
    let writes = |threads: usize, seed: u64| -> Result<(f64, f64)> {
        let synced0 = store.ticker(Ticker::WalFileSynced);
        let ops = AtomicU64::new(0);
        let rate = timed_threads(threads, seconds, seed, |rng| {
            let (u, v) = (pick(rng), pick(rng));
            let wrote = u != v && store.add_friend(u, v)?;
            if wrote {
                ops.fetch_add(1, Ordering::Relaxed);
            }
            Ok(wrote)
        })?;
        let synced = store.ticker(Ticker::WalFileSynced) - synced0;
        Ok((rate, synced as f64 / ops.load(Ordering::Relaxed).max(1) as f64))
    };
    let (w8, f8) = writes(8, 2)?;
    let (w1, f1) = writes(1, 3)?;
    Ok(Throughput {
        graph: graph_name.to_string(),
        friends_list_ops_per_s: reads,
        add_friend_8_writers_ops_per_s: w8,
        add_friend_8_writers_fsyncs_per_op: f8,
        add_friend_1_writer_ops_per_s: w1,
        add_friend_1_writer_fsyncs_per_op: f1,
    })
}

/// One grouped bar chart per data size under 4 KiB: pages per query, graphs by methods.
fn plot_pages(json: &Path, pages: &[PagesCase], methods: &[Method]) -> Result<()> {
    let mut sizes: Vec<u64> = pages.iter().map(|c| c.size_bytes).filter(|&s| s < 4096).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut graphs: Vec<String> = Vec::new();
    for c in pages {
        if !graphs.contains(&c.graph) {
            graphs.push(c.graph.clone());
        }
    }
    let names: Vec<String> = methods.iter().map(ToString::to_string).collect();
    for size in sizes {
        let values: Vec<Vec<f64>> = graphs
            .iter()
            .map(|g| {
                names
                    .iter()
                    .map(|m| {
                        pages
                            .iter()
                            .find(|c| &c.graph == g && &c.method == m && c.size_bytes == size)
                            .map_or(0.0, |c| c.pages_read_mean)
                    })
                    .collect()
            })
            .collect();
        let path = json.with_file_name(format!("store-pages-{size}.png"));
        bar_chart(
            &path,
            &format!("cold \"list all friends\": pages read from RocksDB, {size}-byte data"),
            "pages (4 KiB blocks) per query",
            &graphs,
            &names,
            &values,
        )?;
        crate::say!("wrote {}", path.display());
    }
    Ok(())
}

fn ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.3}"))
}

pub(super) fn run(args: StoreBenchArgs) -> Result<()> {
    let datasets = args.datasets.clone().unwrap_or_else(datasets_dir);
    let tmp = tempfile::tempdir_in(std::env::temp_dir())?;
    let mut pages = Vec::new();
    let mut first_graph = None;
    for name in &args.graphs {
        let path = datasets.join(name);
        let input = GraphInput::file(path.clone());
        let graph =
            input.load_undirected().with_context(|| format!("loading {}", path.display()))?;
        let short = name.split('.').next().unwrap_or(name).to_string();
        let mut fixed = Vec::new();
        for &size in &args.sizes {
            let mut cases: Vec<PagesCase> = Vec::new();
            for &method in &args.methods {
                let config = kith_store::paged_config(
                    LayoutConfig { method, ..LayoutConfig::default() },
                    size,
                    kith_store::DEFAULT_CHUNK_BYTES,
                );
                let layout = match fixed.iter().find(|(m, _)| *m == method) {
                    Some((_, l)) => kith_layout::Layout::clone(l),
                    None => {
                        let l = compute(&graph, &config)?.layout;
                        if method != Method::Kith {
                            fixed.push((method, l.clone()));
                        }
                        l
                    }
                };
                let dir = tmp.path().join(format!("{short}-{method}-{size}"));
                eprintln!("bench store: {short}, {method}, {size} B");
                let options = BuildOptions {
                    data: DataSpec::Fixed(size),
                    progress: true,
                    ..BuildOptions::default()
                };
                drop(build(&dir, &graph, &layout, kith_store::LayoutMeta::of(&config), &options)?);
                let store = Store::open(
                    &dir,
                    &OpenOptions { mode: CacheMode::Cold, ..OpenOptions::default() },
                )?;
                let bench = FriendsBench {
                    users: args.users,
                    repeat: 1,
                    progress: true,
                    ..FriendsBench::default()
                };
                let s = store.bench_friends(&bench)?.summary;
                drop(store);
                let _ = std::fs::remove_dir_all(&dir);
                let modelled =
                    mean_pages_of(&graph, &layout, config.record_bytes, config.page_bytes);
                cases.push(PagesCase {
                    graph: short.clone(),
                    size_bytes: size,
                    method: method.to_string(),
                    users: s.users,
                    pages_read_mean: s.pages_read_mean,
                    data_pages_read_mean: s.data_pages_read_mean,
                    device_pages_mean: s.device_pages_mean,
                    bytes_read_mean: s.bytes_read_mean,
                    median_ms: s.median_ms,
                    modelled_pages: modelled + FIXED_BLOCKS,
                    modelled_data_pages: modelled,
                    vs_parcom: None,
                    vs_random: None,
                    data_vs_parcom: None,
                    data_vs_random: None,
                });
            }
            let find = |m: &str, cases: &[PagesCase]| {
                cases
                    .iter()
                    .find(|c| c.method == m)
                    .map(|c| (c.pages_read_mean, c.data_pages_read_mean))
            };
            let (parcom, random) = (find("parcom", &cases), find("random", &cases));
            for c in &mut cases {
                c.vs_parcom = parcom.map(|p| c.pages_read_mean / p.0);
                c.vs_random = random.map(|r| c.pages_read_mean / r.0);
                c.data_vs_parcom = parcom.map(|p| c.data_pages_read_mean / p.1);
                c.data_vs_random = random.map(|r| c.data_pages_read_mean / r.1);
            }
            pages.extend(cases);
        }
        if first_graph.is_none() {
            first_graph = Some((short, graph));
        }
    }
    let (name, graph) = first_graph.context("no graphs given")?;
    eprintln!("bench store: throughput on {name}");
    let throughput = throughput(&name, &graph, args.seconds, tmp.path())?;
    let report = StoreBench {
        benchmark: "store",
        date: utc_now(),
        commit: git_commit(),
        machine: Machine::describe(),
        cold_means:
            "direct reads, 4 MiB block cache emptied and files fadvised out before every query"
                .into(),
        pages,
        throughput,
    };
    let out = args.out.unwrap_or_else(|| {
        PathBuf::from(format!("bench/results/store-{}.json", &report.date[..10]))
    });
    write_json(&out, &report)?;
    crate::say!("wrote {}", out.display());
    plot_pages(&out, &report.pages, &args.methods)?;
    for c in &report.pages {
        crate::say!(
            "{:<18} {:>6} B {:<8} pages {:>7.2} (model {:>6.2}) vs parcom {:>5} vs random {:>5} | \
             data pages {:>7.2} vs parcom {:>5} vs random {:>5} | median {:.3} ms",
            c.graph,
            c.size_bytes,
            c.method,
            c.pages_read_mean,
            c.modelled_pages,
            ratio(c.vs_parcom),
            ratio(c.vs_random),
            c.data_pages_read_mean,
            ratio(c.data_vs_parcom),
            ratio(c.data_vs_random),
            c.median_ms
        );
    }
    let t = &report.throughput;
    crate::say!(
        "throughput on {}: get_friends_list(100) {:.0}/s on 2 threads; add_friend {:.0}/s with 8 writers \
         ({:.3} fsyncs/op), {:.0}/s with 1 ({:.3} fsyncs/op)",
        t.graph,
        t.friends_list_ops_per_s,
        t.add_friend_8_writers_ops_per_s,
        t.add_friend_8_writers_fsyncs_per_op,
        t.add_friend_1_writer_ops_per_s,
        t.add_friend_1_writer_fsyncs_per_op
    );
    Ok(())
}
