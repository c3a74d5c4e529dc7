//! `kith experiment ...`: the papers' experiments, each writing CSV tables and PNG charts.
//! Bondhu's layout figures on graphs (`bondhu.rs`) and on real stores (`store.rs`), and
//! Twibo's and Parker's service tables against live servers (`twibo.rs`, `parker.rs`, on
//! the set-up in `service.rs`). `all` runs every one of them, and the analyses behind the
//! other published figures, as one reproduction (`all.rs`, over the steps and results listed
//! in `registry.rs`).

mod all;
mod bondhu;
mod device;
mod lfgraph;
mod mr_study;
mod parker;
mod parker_cluster;
mod registry;
mod results;
mod service;
mod store;
mod table;
mod twibo;
mod workloads;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use clap::Subcommand;

pub(crate) use store::FIXED_BLOCKS;

/// `kith experiment [--json] <experiment>`.
#[derive(Debug, clap::Args)]
pub struct ExperimentArgs {
    /// Print what the experiment wrote as one JSON document on stdout (each CSV table as rows,
    /// each JSON file, the charts' paths); the tables and progress go to stderr.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: ExperimentCommand,
}

// The variants are the command names (`bondhu-...`); other papers' experiments join later.
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Subcommand)]
pub enum ExperimentCommand {
    /// Cost improvement over input order against the number of METIS communities, K = 2..1024
    /// (Bondhu Fig. 9).
    BondhuCommunities(bondhu::ExperimentArgs),
    /// Layouts built under each weight model, evaluated under all three (Bondhu Fig. 10).
    BondhuModels(bondhu::ExperimentArgs),
    /// A layout of the graph with 5–40 % of its edges or nodes removed, applied to the whole
    /// graph, against a fresh layout (Bondhu Fig. 11).
    BondhuEvolution(bondhu::ExperimentArgs),
    /// Layouts built under each weight model, queried on real stores by each friend-access
    /// workload: K friends' data drawn by the workload's weights (Bondhu Fig. 10, measured).
    BondhuWorkloads(workloads::WorkloadsArgs),
    /// "List all friends" response time and device pages against data size, for stores of
    /// the same graph under different layouts, cold or warm, whole or partial blocks
    /// (Bondhu Figs. 3-8).
    BondhuDatasize(store::DatasizeArgs),
    /// Sequential and random reads of this machine's disk and tmpfs with fio, beside kith's
    /// HDD and SSD models (Bondhu thesis §3.2).
    DeviceCalibration(device::DeviceArgs),
    /// Computation imbalance of hash placement over 2…256 servers on directed graphs with
    /// Zipf in-degrees, α = 1.7…2.1, with the communication model beside it (LFGraph thesis
    /// Fig. 2.4).
    LfgraphBalance(lfgraph::BalanceArgs),
    /// SSSP on Pregel's log-normal graphs at doubling sizes, up to what this machine holds:
    /// time and peak memory per vertex, on one process and on a local cluster (LFGraph thesis
    /// Fig. 4.13).
    LfgraphSssp(lfgraph::SsspArgs),
    /// The MapReduce study's jobs on every shared graph with spill files on this machine's
    /// disk and tmpfs (measured I/O beside the HDD and SSD models), and Hadoop's knobs one at
    /// a time.
    MrStudy(mr_study::MrStudyArgs),
    /// Twibo's workload (a SONETOR trace over a follow graph) against pull, push, push +
    /// cache-aside, push + write-back and hybrid feeds, in-process and on Redis, swept over
    /// client counts (Twibo Tables 3 and 4).
    Twibo(service::ServiceArgs),
    /// Cache size against throughput, hit rate and store reads per feed read (Twibo Table 5).
    TwiboCache(service::ServiceArgs),
    /// Per-call latency of every Parker endpoint from one client (Parker Table 1).
    ParkerLatency(service::ServiceArgs),
    /// Parker's scaling on the store on Cassandra: read and write throughput and latency on
    /// 1, 3 and 5 nodes, and "list all friends' profiles" under hash and kith placement.
    ParkerCluster(parker_cluster::ParkerClusterArgs),
    /// Every experiment above and the analyses behind the other published figures, each as
    /// a child process, with progress and a time estimate; writes a manifest (resumable with
    /// --resume) and reproduction.md: every published result beside kith's number.
    All(all::AllArgs),
}

/// Runs one experiment.
pub fn run(args: ExperimentArgs) -> Result<()> {
    crate::report::set_json(args.json);
    if let ExperimentCommand::All(a) = args.command {
        let manifest = a.out.join("manifest.json");
        let result = all::run(a);
        if args.json && manifest.is_file() {
            print!("{}", std::fs::read_to_string(&manifest)?);
        }
        return result;
    }
    let name = args.command.name();
    let out = args.command.out().to_path_buf();
    // Coarse file times: whatever was written within a second before the start counts.
    let started = SystemTime::now() - Duration::from_secs(1);
    run_command(args.command)?;
    if args.json {
        let doc = written(name, &out, started)?;
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    Ok(())
}

fn run_command(command: ExperimentCommand) -> Result<()> {
    match command {
        ExperimentCommand::BondhuCommunities(a) => bondhu::communities(&a),
        ExperimentCommand::BondhuModels(a) => bondhu::models(&a),
        ExperimentCommand::BondhuEvolution(a) => bondhu::evolution(&a),
        ExperimentCommand::BondhuDatasize(a) => store::run(a),
        ExperimentCommand::BondhuWorkloads(a) => workloads::run(&a),
        ExperimentCommand::DeviceCalibration(a) => device::run(&a),
        ExperimentCommand::LfgraphBalance(a) => lfgraph::balance(&a),
        ExperimentCommand::LfgraphSssp(a) => lfgraph::sssp(&a),
        ExperimentCommand::MrStudy(a) => mr_study::run(&a),
        ExperimentCommand::Twibo(a) => twibo::twibo(a),
        ExperimentCommand::TwiboCache(a) => twibo::twibo_cache(a),
        ExperimentCommand::ParkerLatency(a) => parker::run(a),
        ExperimentCommand::ParkerCluster(a) => parker_cluster::run(a),
        ExperimentCommand::All(a) => all::run(a),
    }
}

impl ExperimentCommand {
    /// The command's name.
    fn name(&self) -> &'static str {
        match self {
            ExperimentCommand::BondhuCommunities(_) => "bondhu-communities",
            ExperimentCommand::BondhuModels(_) => "bondhu-models",
            ExperimentCommand::BondhuEvolution(_) => "bondhu-evolution",
            ExperimentCommand::BondhuDatasize(_) => "bondhu-datasize",
            ExperimentCommand::BondhuWorkloads(_) => "bondhu-workloads",
            ExperimentCommand::DeviceCalibration(_) => "device-calibration",
            ExperimentCommand::LfgraphBalance(_) => "lfgraph-balance",
            ExperimentCommand::LfgraphSssp(_) => "lfgraph-sssp",
            ExperimentCommand::MrStudy(_) => "mr-study",
            ExperimentCommand::Twibo(_) => "twibo",
            ExperimentCommand::TwiboCache(_) => "twibo-cache",
            ExperimentCommand::ParkerLatency(_) => "parker-latency",
            ExperimentCommand::ParkerCluster(_) => "parker-cluster",
            ExperimentCommand::All(_) => "all",
        }
    }

    /// Where it writes.
    fn out(&self) -> &Path {
        match self {
            ExperimentCommand::BondhuCommunities(a)
            | ExperimentCommand::BondhuModels(a)
            | ExperimentCommand::BondhuEvolution(a) => &a.out,
            ExperimentCommand::BondhuDatasize(a) => &a.out,
            ExperimentCommand::BondhuWorkloads(a) => &a.out,
            ExperimentCommand::DeviceCalibration(a) => &a.out,
            ExperimentCommand::LfgraphBalance(a) => &a.out,
            ExperimentCommand::LfgraphSssp(a) => &a.out,
            ExperimentCommand::MrStudy(a) => &a.out,
            ExperimentCommand::Twibo(a)
            | ExperimentCommand::TwiboCache(a)
            | ExperimentCommand::ParkerLatency(a) => &a.out,
            ExperimentCommand::ParkerCluster(a) => &a.out,
            ExperimentCommand::All(a) => &a.out,
        }
    }
}

/// The files under `out` written since `since`: CSV tables as rows (numbers as numbers),
/// JSON files as they are, charts by path.
fn written(name: &str, out: &Path, since: SystemTime) -> Result<serde_json::Value> {
    let mut tables = serde_json::Map::new();
    let mut documents = serde_json::Map::new();
    let mut figures = Vec::new();
    for path in files_since(out, since)? {
        let key = path.strip_prefix(out).unwrap_or(&path).display().to_string();
        match path.extension().and_then(|e| e.to_str()) {
            Some("csv") => {
                tables.insert(key, csv_rows(&path)?);
            }
            Some("json") => {
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("reading {}", path.display()))?;
                let value = serde_json::from_str(&text)
                    .with_context(|| format!("{} is not JSON", path.display()))?;
                documents.insert(key, value);
            }
            Some("png" | "svg") => figures.push(serde_json::Value::String(key)),
            _ => {}
        }
    }
    Ok(serde_json::json!({
        "experiment": name,
        "out": out.display().to_string(),
        "tables": tables,
        "documents": documents,
        "figures": figures,
    }))
}

/// The files under `dir`, at any depth, modified at or after `since`, sorted.
fn files_since(dir: &Path, since: SystemTime) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))?
        {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_dir() {
                dirs.push(entry.path());
            } else if meta.modified().is_ok_and(|m| m >= since) {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    Ok(files)
}

/// A dataset file's short name for tables and charts: `soc-Slashdot0902.txt.gz` is
/// `soc-Slashdot0902`, KONECT's `out.ego-twitter.gz` is `ego-twitter`.
fn dataset_name(file: &str) -> String {
    let mut name = file.strip_prefix("out.").unwrap_or(file);
    while let Some(stem) = [".gz", ".zip", ".txt", ".mtx", ".csv", ".tsv", ".kgraph"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
    {
        name = stem;
    }
    name.to_owned()
}

/// Free bytes for an unprivileged writer on the file system holding `dir`.
fn free_bytes(dir: &Path) -> Result<u64> {
    let path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())?;
    // SAFETY: statvfs is plain old data, for which all-zero bytes are a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `st` is a valid statvfs to fill.
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        anyhow::bail!("statvfs {}: {}", dir.display(), std::io::Error::last_os_error());
    }
    Ok(st.f_bavail * st.f_frsize)
}

/// A CSV table as an array of objects keyed by its header; fields that parse as numbers are
/// numbers, empty fields null.
fn csv_rows(path: &Path) -> Result<serde_json::Value> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("reading {}", path.display()))?;
    let header = reader.headers()?.clone();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.with_context(|| format!("reading {}", path.display()))?;
        let row: serde_json::Map<String, serde_json::Value> =
            header.iter().zip(record.iter()).map(|(k, v)| (k.to_string(), cell(v))).collect();
        rows.push(serde_json::Value::Object(row));
    }
    Ok(serde_json::Value::Array(rows))
}

fn cell(v: &str) -> serde_json::Value {
    if v.is_empty() {
        return serde_json::Value::Null;
    }
    if let Ok(i) = v.parse::<i64>() {
        return i.into();
    }
    match v.parse::<f64>() {
        Ok(f) if f.is_finite() => f.into(),
        _ => v.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dataset_names_drop_extensions_and_konects_prefix() {
        assert_eq!(dataset_name("soc-Slashdot0902.txt.gz"), "soc-Slashdot0902");
        assert_eq!(dataset_name("out.ego-twitter.gz"), "ego-twitter");
        assert_eq!(dataset_name("git_web_ml.zip"), "git_web_ml");
        assert_eq!(dataset_name("soc-brightkite.mtx.gz"), "soc-brightkite");
    }

    #[test]
    fn written_reads_back_tables_documents_and_charts_made_since_the_start() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("old.csv"), "a\n1\n").unwrap();
        let since = SystemTime::now();
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(dir.path().join("t.csv"), "k,n,x,name\n2,3,0.5,\"a, b\"\n4,,x,c\n").unwrap();
        std::fs::write(dir.path().join("r.json"), "{\"ok\": true}").unwrap();
        std::fs::write(dir.path().join("c.png"), b"png").unwrap();
        let old = SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(dir.path().join("old.csv"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let doc = written("x", dir.path(), since).unwrap();
        assert_eq!(
            doc["tables"],
            serde_json::json!({"t.csv": [
                {"k": 2, "n": 3, "x": 0.5, "name": "a, b"},
                {"k": 4, "n": null, "x": "x", "name": "c"},
            ]})
        );
        assert_eq!(doc["documents"], serde_json::json!({"r.json": {"ok": true}}));
        assert_eq!(doc["figures"], serde_json::json!(["c.png"]));
    }
}
