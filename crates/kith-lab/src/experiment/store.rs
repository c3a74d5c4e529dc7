//! `kith experiment bondhu-datasize`: Bondhu's response-time experiments (Figs. 3–8) on real
//! RocksDB stores: "list all friends" of random users against data size, for stores of the
//! same graph under different layouts.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use kith_graph::{Graph, WeightModel, edge_weights};
use kith_layout::metrics::{friend_reads, mean_pages_of, per_user_costs};
use kith_layout::{Layout, LayoutConfig, Method, compute};
use kith_store::{
    BuildOptions, CacheMode, DataSpec, DeviceModel, FriendsBench, FriendsReport, OpenOptions,
    Store, build,
};

use crate::cli::GraphInput;
use crate::plot::{LineChart, Series, line_chart, scatter_chart};

#[derive(Debug, Args)]
pub struct DatasizeArgs {
    /// The graph (any format `kith graph import` reads).
    #[arg(long)]
    graph: PathBuf,
    /// Where to write CSVs, PNGs and (temporarily) the stores.
    #[arg(long)]
    pub(super) out: PathBuf,
    /// Layouts to compare; the first is the baseline improvements are measured against. A
    /// method may name its parameter: `parcom@K` (K METIS parts, else --communities),
    /// `modcom@L` (Louvain level L, 0 = finest, else the coarsest).
    #[arg(long, value_delimiter = ',', default_value = "default,parcom,kith")]
    methods: Vec<Variant>,
    /// Data block sizes in bytes (with --partial: bytes fetched per friend).
    #[arg(long, value_delimiter = ',', default_value = "4,40,400,4096,40960,409600")]
    sizes: Vec<u64>,
    /// Keep caches between runs (Bondhu Fig. 8) instead of reading from the device.
    #[arg(long)]
    warm: bool,
    /// Power-law data blocks (`--data-dist`), fetching the first X bytes of each friend's
    /// block for every X in --sizes (Bondhu Fig. 6).
    #[arg(long)]
    partial: bool,
    /// The block-size distribution for --partial.
    #[arg(long, default_value = "powerlaw:4,409600")]
    data_dist: String,
    /// Random users queried.
    #[arg(long, default_value_t = 1500)]
    users: usize,
    /// Runs per user; the fastest counts.
    #[arg(long, default_value_t = 6)]
    repeat: usize,
    /// parcom's part count.
    #[arg(long, default_value_t = 64)]
    communities: usize,
    /// Seed of layouts, data and the users drawn.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Keep the stores after measuring them (they can be large).
    #[arg(long)]
    keep_stores: bool,
}

/// A layout method with its parameter, as `--methods` names it: `parcom@64`, `modcom@0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Variant {
    method: Method,
    communities: Option<usize>,
    level: Option<usize>,
}

impl std::str::FromStr for Variant {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Variant, String> {
        let (name, param) = match s.split_once('@') {
            Some((n, p)) => (n, Some(p)),
            None => (s, None),
        };
        let method: Method = name.parse().map_err(|e: kith_layout::Error| e.to_string())?;
        let mut v = Variant { method, communities: None, level: None };
        let Some(param) = param else { return Ok(v) };
        let number = |what: &str| {
            param.parse::<usize>().map_err(|_| format!("{s:?}: {what} must be a whole number"))
        };
        match method {
            Method::Parcom => {
                let k = number("the number of communities")?;
                if k < 2 {
                    return Err(format!("{s:?}: parcom needs at least 2 communities"));
                }
                v.communities = Some(k);
            }
            Method::Modcom => v.level = Some(number("the Louvain level")?),
            _ => return Err(format!("{s:?}: only parcom@K and modcom@L take a parameter")),
        }
        Ok(v)
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.method)?;
        if let Some(k) = self.communities {
            write!(f, "@{k}")?;
        }
        if let Some(l) = self.level {
            write!(f, "@{l}")?;
        }
        Ok(())
    }
}

impl Variant {
    /// The layout configuration of this variant.
    fn config(&self, args: &DatasizeArgs) -> LayoutConfig {
        LayoutConfig {
            method: self.method,
            communities: self.communities.unwrap_or(args.communities),
            level: self.level,
            seed: args.seed,
            progress: true,
            ..LayoutConfig::default()
        }
    }
}

struct Cell {
    size: u64,
    method: Variant,
    modelled_pages: f64,
    /// The layout model's read requests for the friends' data (runs of adjacent blocks).
    modelled_data_requests: f64,
    report: FriendsReport,
}

fn store_for(
    args: &DatasizeArgs,
    graph: &Graph,
    layout: &Layout,
    config: &LayoutConfig,
    data: DataSpec,
    dir: &Path,
) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    let options = BuildOptions { data, seed: args.seed, progress: true, ..BuildOptions::default() };
    drop(build(dir, graph, layout, kith_store::LayoutMeta::of(config), &options)?);
    Ok(())
}

/// Refuses to build a size's stores that would not fit on the disk under `--out`: each holds
/// every user's block of about `data` bytes, profile and friend list, with RocksDB's overhead
/// (a quarter more, for the files a compaction rewrites).
fn room_for_stores(args: &DatasizeArgs, graph: &Graph, data: f64) -> Result<()> {
    let per_user =
        data + 256.0 + 8.0 * graph.num_edges() as f64 * 2.0 / graph.num_nodes().max(1) as f64;
    let need = 1.25 * per_user * graph.num_nodes() as f64 * args.methods.len() as f64;
    let free = super::free_bytes(&args.out)? as f64;
    if need > free {
        bail!(
            "{} stores of {} users with {data:.0} B blocks need about {:.1} GB under {}, and \
             {:.1} GB are free: use fewer --methods, smaller --sizes or a smaller graph",
            args.methods.len(),
            graph.num_nodes(),
            need / 1e9,
            args.out.display(),
            free / 1e9
        );
    }
    Ok(())
}

/// Measures the stores in `dirs` together, users interleaved (one report each, in order).
fn measure(args: &DatasizeArgs, dirs: &[&Path], fetch: Option<u64>) -> Result<Vec<FriendsReport>> {
    let mode = if args.warm { CacheMode::Warm } else { CacheMode::Cold };
    let stores = dirs
        .iter()
        .map(|dir| Store::open(dir, &OpenOptions { mode, ..OpenOptions::default() }))
        .collect::<std::result::Result<Vec<Store>, _>>()?;
    let bench = FriendsBench {
        users: args.users,
        repeat: args.repeat,
        fetch_bytes: fetch,
        device: Some(DeviceModel::Hdd(kith_store::Hdd::default())),
        seed: args.seed,
        keep_trace: true,
        progress: true,
        queries: None,
    };
    let refs: Vec<&Store> = stores.iter().collect();
    Ok(kith_store::bench_friends_interleaved(&refs, &bench)?)
}

pub(super) fn run(args: DatasizeArgs) -> Result<()> {
    if args.methods.is_empty() || args.sizes.is_empty() {
        bail!("--methods and --sizes need at least one value each");
    }
    if let Some(&s) = args.sizes.iter().find(|&&s| s == 0 || s > kith_store::MAX_DATA_BYTES) {
        bail!("size {s} outside 1..={} bytes", kith_store::MAX_DATA_BYTES);
    }
    let graph = GraphInput::file(args.graph.clone()).load_undirected()?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let stores = args.out.join("stores");
    let partial_spec = if args.partial { Some(DataSpec::parse(&args.data_dist)?) } else { None };
    let mut cells: Vec<Cell> = Vec::new();
    // Layouts are computed once per method, except kith's, which packs pages for a record
    // size and so is computed per size (with --partial: for the mean block).
    let mut fixed: Vec<(Variant, Layout)> = Vec::new();
    for (i, &size) in args.sizes.iter().enumerate() {
        if partial_spec.is_none() || i == 0 {
            let data = partial_spec.map_or(size as f64, |spec| spec.mean());
            room_for_stores(&args, &graph, data)?;
        }
        // Every method's store of this size, then one measurement over all of them with
        // the users interleaved, so that drift in the device's speed hits every layout alike.
        let mut built: Vec<(Variant, PathBuf, f64, f64)> = Vec::new();
        for &method in &args.methods {
            let record = match partial_spec {
                Some(spec) => spec.mean().round() as u64,
                None => size,
            };
            let config = kith_store::paged_config(
                method.config(&args),
                record.max(1),
                kith_store::DEFAULT_CHUNK_BYTES,
            );
            let layout = match fixed.iter().find(|(m, _)| *m == method) {
                Some((_, l)) => l.clone(),
                None => {
                    let l = compute(&graph, &config)?.layout;
                    if method.method != Method::Kith || partial_spec.is_some() {
                        fixed.push((method, l.clone()));
                    }
                    l
                }
            };
            let dir =
                stores.join(format!("{method}-{}", if partial_spec.is_some() { 0 } else { size }));
            let data = partial_spec.unwrap_or(DataSpec::Fixed(size));
            // With --partial one store per method serves every fetch size.
            if partial_spec.is_none() || i == 0 {
                eprintln!("bondhu-datasize: building {} ({} B)", dir.display(), size);
                store_for(&args, &graph, &layout, &config, data, &dir)?;
            }
            // Modelled pages: the data blocks the layout model predicts for the store's
            // entries and blocks (plus the index block every query reads).
            let modelled_pages =
                mean_pages_of(&graph, &layout, config.record_bytes, config.page_bytes)
                    + FIXED_BLOCKS;
            let modelled_data_requests =
                friend_reads(&graph, &layout, config.record_bytes, config.page_bytes).requests;
            built.push((method, dir, modelled_pages, modelled_data_requests));
        }
        eprintln!("bondhu-datasize: {size} B, {} stores, users interleaved", built.len());
        let dirs: Vec<&Path> = built.iter().map(|b| b.1.as_path()).collect();
        let reports = measure(&args, &dirs, partial_spec.map(|_| size))?;
        let last = partial_spec.is_some() && i + 1 < args.sizes.len();
        for ((method, dir, modelled_pages, modelled_data_requests), report) in
            built.into_iter().zip(reports)
        {
            cells.push(Cell { size, method, modelled_pages, modelled_data_requests, report });
            if !args.keep_stores && !last {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
    if !args.keep_stores {
        let _ = std::fs::remove_dir_all(&stores);
    }
    let name = if args.partial {
        "bondhu-partial"
    } else if args.warm {
        "bondhu-datasize-warm"
    } else {
        "bondhu-datasize"
    };
    write_outputs(&args, &graph, name, &cells)
}

/// Blocks every "list all friends" reads besides the friends' data: the user's index entry,
/// which holds the friend list.
pub(crate) const FIXED_BLOCKS: f64 = 1.0;

fn write_outputs(args: &DatasizeArgs, graph: &Graph, name: &str, cells: &[Cell]) -> Result<()> {
    let baseline = args.methods[0];
    let base_of = |size: u64| cells.iter().find(|c| c.size == size && c.method == baseline);
    let mut csv = String::from(
        "size_bytes,method,mode,users,median_ms,p5_ms,p95_ms,mean_ms,pages_read_mean,\
         data_pages_read_mean,device_pages_mean,bytes_read_mean,modelled_pages,hdd_model_median_ms,\
         hdd_model_mean_ms,hdd_model_data_mean_ms,median_improvement,hdd_model_improvement,\
         hdd_model_data_improvement,requests_mean,data_requests_mean,data_median_ms,\
         data_median_improvement,modelled_data_requests\n",
    );
    for c in cells {
        let s = &c.report.summary;
        let base = base_of(c.size).map(|b| &b.report.summary);
        let improvement = base.map_or(f64::NAN, |b| 1.0 - s.median_ms / b.median_ms);
        let model_improvement =
            base.and_then(|b| Some(1.0 - s.model_mean_ms? / b.model_mean_ms?)).unwrap_or(f64::NAN);
        let data_improvement = base
            .and_then(|b| Some(1.0 - s.model_data_mean_ms? / b.model_data_mean_ms?))
            .unwrap_or(f64::NAN);
        let data_time_improvement =
            base.map_or(f64::NAN, |b| 1.0 - s.data_median_ms / b.data_median_ms);
        writeln!(
            csv,
            "{},{},{},{},{:.4},{:.4},{:.4},{:.4},{:.3},{:.3},{:.3},{:.0},{:.3},{:.3},{:.3},{:.3},{:.4},{:.4},{:.4},{:.3},{:.3},{:.4},{:.4},{:.3}",
            c.size,
            c.method,
            if args.warm { "warm" } else { "cold" },
            s.users,
            s.median_ms,
            s.p5_ms,
            s.p95_ms,
            s.mean_ms,
            s.pages_read_mean,
            s.data_pages_read_mean,
            s.device_pages_mean,
            s.bytes_read_mean,
            c.modelled_pages,
            s.model_median_ms.unwrap_or(f64::NAN),
            s.model_mean_ms.unwrap_or(f64::NAN),
            s.model_data_mean_ms.unwrap_or(f64::NAN),
            improvement,
            model_improvement,
            data_improvement,
            s.requests_mean,
            s.data_requests_mean,
            s.data_median_ms,
            data_time_improvement,
            c.modelled_data_requests
        )?;
    }
    let csv_path = args.out.join(format!("{name}.csv"));
    std::fs::write(&csv_path, csv)
        .with_context(|| format!("cannot write {}", csv_path.display()))?;
    let x_label = if args.partial { "bytes fetched per friend" } else { "data block size (bytes)" };
    let series = |f: &dyn Fn(&Cell) -> f64| -> Vec<Series> {
        args.methods
            .iter()
            .map(|&m| Series {
                name: m.to_string(),
                points: cells
                    .iter()
                    .filter(|c| c.method == m)
                    .map(|c| (c.size as f64, f(c)))
                    .collect(),
            })
            .collect()
    };
    let mode = if args.warm { "warm" } else { "cold" };
    line_chart(
        &args.out.join(format!("{name}.png")),
        &LineChart {
            title: &format!("list all friends, median response time ({mode})"),
            x_label,
            y_label: "median ms",
            log2_x: true,
        },
        &series(&|c| c.report.summary.median_ms),
    )?;
    line_chart(
        &args.out.join(format!("{name}-pages.png")),
        &LineChart {
            title: &format!("list all friends: pages (4 KiB blocks) read ({mode})"),
            x_label,
            y_label: "pages per query",
            log2_x: true,
        },
        &series(&|c| c.report.summary.pages_read_mean),
    )?;
    line_chart(
        &args.out.join(format!("{name}-hdd-model.png")),
        &LineChart {
            title: "friends' data reads on a modelled 7,200 rpm disk (friend lists in memory)",
            x_label,
            y_label: "mean ms per query",
            log2_x: true,
        },
        &series(&|c| c.report.summary.model_data_mean_ms.unwrap_or(f64::NAN)),
    )?;
    scatter_per_user(args, graph, name, cells)?;
    block_access(args, name, cells)?;
    crate::say!("wrote {} and its charts", csv_path.display());
    Ok(())
}

/// The size the per-user and block-access pictures are drawn at: 400 B if measured (where
/// layouts differ most in pages read), else the first.
fn picture_size(args: &DatasizeArgs) -> u64 {
    if args.sizes.contains(&400) { 400 } else { args.sizes[0] }
}

/// Fig. 7: per user, the layout's cost improvement (eq. 1) against its response-time
/// improvement, over the baseline. The chart clips cost improvements below -1 (users the
/// baseline already placed next to their friends); the CSV has them all.
fn scatter_per_user(args: &DatasizeArgs, graph: &Graph, name: &str, cells: &[Cell]) -> Result<()> {
    let size = picture_size(args);
    let Some(base) = cells.iter().find(|c| c.size == size && c.method == args.methods[0]) else {
        return Ok(());
    };
    let weights = edge_weights(graph, WeightModel::Uniform)?;
    let config =
        |m: Variant| LayoutConfig { record_bytes: size, progress: false, ..m.config(args) };
    let base_costs =
        per_user_costs(graph, &compute(graph, &config(args.methods[0]))?.layout, &weights);
    let mut series = Vec::new();
    let mut csv = String::from("method,uid,cost_improvement,time_improvement\n");
    for &m in &args.methods[1..] {
        let Some(cell) = cells.iter().find(|c| c.size == size && c.method == m) else { continue };
        let costs = per_user_costs(graph, &compute(graph, &config(m))?.layout, &weights);
        let mut points = Vec::new();
        for (run, b) in cell.report.runs.iter().zip(&base.report.runs) {
            let Some(v) = graph.dense_id(run.uid) else { continue };
            let (c0, c1) = (base_costs[v as usize], costs[v as usize]);
            if c0 <= 0.0 || b.ms <= 0.0 {
                continue;
            }
            let (ci, ti) = (1.0 - c1 / c0, 1.0 - run.ms / b.ms);
            writeln!(csv, "{m},{},{ci:.4},{ti:.4}", run.uid)?;
            points.push((ci.max(-1.0), ti.max(-1.0)));
        }
        series.push(Series { name: m.to_string(), points });
    }
    std::fs::write(args.out.join(format!("{name}-per-user.csv")), csv)?;
    scatter_chart(
        &args.out.join(format!("{name}-per-user.png")),
        &LineChart {
            title: &format!("per user at {size} B: cost improvement vs response-time improvement"),
            x_label: "cost improvement over the baseline (eq. 1; clipped at -1)",
            y_label: "response-time improvement",
            log2_x: false,
        },
        &series,
    )
}

/// Figs. 3–4: the device addresses of one query's reads of friends' data, in issue order,
/// baseline vs each layout: the user of the sample with the most friends.
fn block_access(args: &DatasizeArgs, name: &str, cells: &[Cell]) -> Result<()> {
    let size = picture_size(args);
    let at_size: Vec<&Cell> = cells.iter().filter(|c| c.size == size).collect();
    let Some(first) = at_size.first() else { return Ok(()) };
    let Some(busiest) = first.report.runs.iter().max_by_key(|r| r.friends).map(|r| r.uid) else {
        return Ok(());
    };
    let mut series = Vec::new();
    let mut csv = String::from("method,uid,read,at_us,address_kib,len\n");
    for c in &at_size {
        let Some(run) = c.report.runs.iter().find(|r| r.uid == busiest) else { continue };
        let lo = run.trace.iter().map(|r| r.address).min().unwrap_or(0);
        let mut points = Vec::new();
        for (i, r) in run.trace.iter().enumerate() {
            let kib = (r.address - lo) as f64 / 1024.0;
            writeln!(csv, "{},{busiest},{i},{:.1},{kib:.1},{}", c.method, r.at_us, r.len)?;
            points.push((i as f64, kib));
        }
        series.push(Series { name: format!("{} ({} reads)", c.method, run.trace.len()), points });
    }
    std::fs::write(args.out.join(format!("{name}-block-access.csv")), csv)?;
    scatter_chart(
        &args.out.join(format!("{name}-block-access.png")),
        &LineChart {
            title: &format!("friends' data blocks read for user {busiest} ({size} B records)"),
            x_label: "read number (in issue order)",
            y_label: "device address - lowest (KiB)",
            log2_x: false,
        },
        &series,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_name_their_parameter_and_refuse_others() {
        for text in ["parcom@64", "modcom@0", "organ-pipe", "kith", "default"] {
            let v: Variant = text.parse().unwrap();
            assert_eq!(v.to_string(), text);
        }
        let v: Variant = "parcom@8".parse().unwrap();
        assert_eq!((v.method, v.communities, v.level), (Method::Parcom, Some(8), None));
        for bad in ["parcom@1", "parcom@x", "kith@3", "modcom@-1", "nope"] {
            assert!(bad.parse::<Variant>().is_err(), "{bad}");
        }
    }
}
