//! Bondhu's measurement: "list all friends" of random users, each repeated and the fastest
//! kept, with what each read from the device and what a disk would have taken.

use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use rand::SeedableRng;
use rand::seq::index::sample;
use rand_pcg::Pcg64Mcg;
use serde::Serialize;

use crate::Ticker;
use crate::device::{DeviceModel, DeviceRead, Head};
use crate::device_map::DeviceMap;
use crate::error::{Error, Result};
use crate::io::{IoCounters, measure};
use crate::options::CacheMode;
use crate::store::Store;
use crate::trace;

/// What to measure.
#[derive(Clone, Debug)]
pub struct FriendsBench {
    /// Random users to query.
    pub users: usize,
    /// Runs per user; the fastest counts.
    pub repeat: usize,
    /// Bytes fetched from each friend's data block (`None` = all of it).
    pub fetch_bytes: Option<u64>,
    /// Replay each query's reads through this model.
    pub device: Option<DeviceModel>,
    /// Which users.
    pub seed: u64,
    /// Keep each query's device reads (for block-access pictures).
    pub keep_trace: bool,
    /// Show a progress bar.
    pub progress: bool,
    /// Given queries instead of random users' whole friend lists: each a user and the
    /// friends whose data it reads (Bondhu's friend-access workloads). `users` is then
    /// ignored.
    pub queries: Option<Arc<Vec<FriendsQuery>>>,
}

/// A user and the friends whose data one query reads.
pub type FriendsQuery = (u64, Vec<u64>);

impl Default for FriendsBench {
    fn default() -> Self {
        FriendsBench {
            users: 1500,
            repeat: 6,
            fetch_bytes: None,
            device: None,
            seed: 1,
            keep_trace: false,
            progress: false,
            queries: None,
        }
    }
}

/// One user's query.
#[derive(Clone, Debug, Serialize)]
pub struct UserRun {
    /// The user.
    pub uid: u64,
    /// Friends listed.
    pub friends: usize,
    /// The fastest run, ms.
    pub ms: f64,
    /// Of that run, the time of the friends' data reads (after the friend list is known), ms.
    pub data_ms: f64,
    /// Read requests (`pread` calls) that run issued: each is one block or a run of adjacent
    /// blocks RocksDB merged. 0 without the `io-trace` feature.
    pub requests: u64,
    /// Of those, the requests for friends' data.
    pub data_requests: u64,
    /// Blocks RocksDB read from files in that run: the index entry's and the data's.
    pub blocks: u64,
    /// Of those, the blocks of friends' data (Bondhu's measure: the friend list in memory).
    pub data_blocks: u64,
    /// Their bytes.
    pub block_bytes: u64,
    /// Distinct 4 KiB file pages the reads touched.
    pub pages: u64,
    /// Bytes the reads returned.
    pub read_bytes: u64,
    /// The device model's time for the first (coldest) run's reads, ms.
    pub model_ms: Option<f64>,
    /// The same for the friends' data reads alone (friend lists in memory), ms.
    pub model_data_ms: Option<f64>,
    /// The first run's reads of friends' data on the device, if kept.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<DeviceRead>,
}

/// The summary `kith bench friends` prints.
#[derive(Clone, Debug, Serialize)]
pub struct FriendsSummary {
    /// Users queried.
    pub users: usize,
    /// Runs per user.
    pub repeat: usize,
    /// cold or warm.
    pub mode: CacheMode,
    /// What cold means here, stated.
    pub cold_means: Option<String>,
    /// Bytes fetched per friend (`None` = whole blocks).
    pub fetch_bytes: Option<u64>,
    /// Median of the per-user fastest times.
    pub median_ms: f64,
    /// 5th percentile.
    pub p5_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// Mean of the per-user fastest times.
    pub mean_ms: f64,
    /// Mean pages (RocksDB blocks of 4 KiB) read from files per query, as RocksDB counts them
    /// (block-cache misses, so blocks a scan's readahead fetched count too): the friend-list
    /// and data blocks (index and filter blocks stay with the open tables).
    pub pages_read_mean: f64,
    /// Of those, the pages of friends' data: Bondhu's measure, which keeps friend lists in
    /// memory and reads only the friends' records.
    pub data_pages_read_mean: f64,
    /// Mean distinct 4 KiB file pages the `pread` calls touched per query (an unaligned
    /// block spans two).
    pub device_pages_mean: f64,
    /// Mean read requests per query (`pread` calls; RocksDB issues them one at a time and
    /// merges only adjacent blocks, so on a device without seeks time follows these more
    /// than pages). 0 without the `io-trace` feature.
    pub requests_mean: f64,
    /// Of those, the requests for friends' data.
    pub data_requests_mean: f64,
    /// Median time of the friends' data reads alone, ms: the query once the friend list is
    /// known (Bondhu's setting, friend lists in memory), measured on the device.
    pub data_median_ms: f64,
    /// Mean bytes read per query (RocksDB's block bytes).
    pub bytes_read_mean: f64,
    /// Mean friends per query.
    pub friends_mean: f64,
    /// The device model replayed, if any.
    pub device_model: Option<String>,
    /// The model's median time per query, ms.
    pub model_median_ms: Option<f64>,
    /// The model's mean time per query, ms.
    pub model_mean_ms: Option<f64>,
    /// The model's median time for the friends' data reads alone (Bondhu's setting, friend
    /// lists in memory), ms.
    pub model_data_median_ms: Option<f64>,
    /// Their mean, ms.
    pub model_data_mean_ms: Option<f64>,
    /// Whether device addresses came from FIEMAP (physical) or a stand-in.
    pub physical_addresses: bool,
}

/// A benchmark's per-user runs and their summary.
#[derive(Clone, Debug, Serialize)]
pub struct FriendsReport {
    /// The summary.
    pub summary: FriendsSummary,
    /// Per user, in the order queried.
    pub runs: Vec<UserRun>,
}

/// Sorted-sample quantile by linear interpolation.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let x = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (x - lo as f64)
}

/// `n` users drawn by `seed` from the store's uids, so that stores of the same graph under
/// different layouts are queried for the same users.
pub fn sample_users(store: &Store, n: usize, seed: u64) -> Result<Vec<u64>> {
    let sg = store.graph()?;
    let uids = sg.graph.original_ids();
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let k = n.min(uids.len());
    Ok(sample(&mut rng, uids.len(), k).into_iter().map(|i| uids[i]).collect())
}

impl Store {
    /// "List all friends" as [`Store::list_friends_data`] does it, measuring the index-entry
    /// read and the friends' data reads separately; with `only`, just those friends' data
    /// (each must be a friend). Returns the friend count and the data reads' time in ms.
    fn list_friends_measured(
        &self,
        uid: u64,
        only: Option<&[u64]>,
        max_bytes: Option<u64>,
    ) -> Result<(usize, IoCounters, IoCounters, f64)> {
        let view = self.view();
        let read = view.read_options();
        // Blocks read are counted as block-cache misses: the perf context's block_read_count
        // leaves out the blocks a scan's readahead fetched in the same request.
        let misses = || self.ticker(Ticker::BlockCacheDataMiss);
        let before = misses();
        let (entry, mut index_io) = measure(|| self.entry(view.generation, uid, &read));
        let between = misses();
        let (_, mut friends) = entry?;
        if let Some(only) = only {
            // Friends are stored ascending by uid.
            if let Some(&stranger) =
                only.iter().find(|&&f| friends.binary_search_by_key(&f, |x| x.uid).is_err())
            {
                return Err(Error::Invalid(format!("user {stranger} is not a friend of {uid}")));
            }
            friends.retain(|f| only.contains(&f.uid));
        }
        friends.sort_unstable_by_key(|f| f.position);
        let positions: Vec<u64> = friends.iter().map(|f| f.position).collect();
        let t = Instant::now();
        let (data, mut data_io) = measure(|| self.read_data_at(&view, &positions, max_bytes));
        let data_ms = t.elapsed().as_secs_f64() * 1e3;
        data?;
        index_io.blocks = between - before;
        data_io.blocks = misses() - between;
        Ok((friends.len(), index_io, data_io, data_ms))
    }

    /// Runs Bondhu's "list all friends" benchmark on this store as opened (cold or warm).
    ///
    /// # Errors
    /// A device model or a kept trace without the `io-trace` feature: both need the
    /// device trace, which such a build does not record.
    pub fn bench_friends(&self, bench: &FriendsBench) -> Result<FriendsReport> {
        Ok(bench_friends_interleaved(&[self], bench)?.pop().expect("one store"))
    }

    /// One user's query, `bench.repeat` times, the fastest kept; the first (coldest) run's
    /// reads replayed through the device model, if any.
    fn bench_user(
        &self,
        uid: u64,
        only: Option<&[u64]>,
        bench: &FriendsBench,
        state: &mut Replay,
    ) -> Result<UserRun> {
        let cold = self.mode() == CacheMode::Cold;
        let mut best: Option<(f64, IoCounters, IoCounters, usize, f64)> = None;
        let mut first_reads = None;
        let mut first_data_reads = None;
        for _ in 0..bench.repeat.max(1) {
            if cold {
                self.drop_caches()?;
            }
            let t = Instant::now();
            let (friends, index_io, data_io, data_ms) =
                self.list_friends_measured(uid, only, bench.fetch_bytes)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if first_reads.is_none() {
                let mut reads = index_io.reads.clone();
                reads.extend_from_slice(&data_io.reads);
                first_reads = Some(reads);
                first_data_reads = Some(data_io.reads.clone());
            }
            if best.as_ref().is_none_or(|b| ms < b.0) {
                best = Some((ms, index_io, data_io, friends, data_ms));
            }
        }
        let (ms, index_io, io, friends, data_ms) = best.expect("at least one run");
        let placed = state.map.place(&first_reads.unwrap_or_default());
        let model_ms = bench.device.map(|d| d.replay(&placed, &mut state.head));
        let data_placed = state.map.place(&first_data_reads.unwrap_or_default());
        let model_data_ms = bench.device.map(|d| d.replay(&data_placed, &mut state.data_head));
        Ok(UserRun {
            uid,
            friends,
            ms,
            data_ms,
            requests: (index_io.reads.len() + io.reads.len()) as u64,
            data_requests: io.reads.len() as u64,
            blocks: index_io.blocks + io.blocks,
            data_blocks: io.blocks,
            block_bytes: index_io.block_bytes + io.block_bytes,
            pages: index_io.pages() + io.pages(),
            read_bytes: index_io.read_bytes() + io.read_bytes(),
            model_ms,
            model_data_ms,
            trace: if bench.keep_trace { data_placed } else { Vec::new() },
        })
    }
}

/// A store's device-model state across the users of one benchmark.
struct Replay {
    map: DeviceMap,
    head: Head,
    /// For the friends' data alone, as if friend lists were in memory (Bondhu's setting).
    data_head: Head,
}

impl Replay {
    fn new() -> Replay {
        Replay { map: DeviceMap::new(), head: Head::default(), data_head: Head::default() }
    }
}

/// [`Store::bench_friends`] on several stores of the same graph at once: each user is
/// queried on every store in turn before the next user, so that a device whose speed drifts
/// over seconds (a VM's shared disk) slows every store alike rather than whichever was
/// measured during the slow spell. Users are drawn from the first store. Returns a report per
/// store, in order.
///
/// # Errors
/// As [`Store::bench_friends`]; also a user of the first store unknown to another.
pub fn bench_friends_interleaved(
    stores: &[&Store],
    bench: &FriendsBench,
) -> Result<Vec<FriendsReport>> {
    if (bench.device.is_some() || bench.keep_trace) && !trace::ENABLED {
        return Err(Error::Invalid(
            "device models and traces replay the pread trace, which this build does not \
             record: enable kith-store's io-trace feature"
                .into(),
        ));
    }
    let Some(first) = stores.first() else { return Ok(Vec::new()) };
    let users: Vec<(u64, Option<&[u64]>)> = match &bench.queries {
        Some(q) => q.iter().map(|(u, f)| (*u, Some(f.as_slice()))).collect(),
        None => {
            sample_users(first, bench.users, bench.seed)?.into_iter().map(|u| (u, None)).collect()
        }
    };
    let mut states: Vec<Replay> = stores.iter().map(|_| Replay::new()).collect();
    let mut runs: Vec<Vec<UserRun>> = stores.iter().map(|_| Vec::new()).collect();
    let bar =
        if bench.progress { ProgressBar::new(users.len() as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("list all friends [{bar:40}] {pos}/{len} users ({eta})")
            .expect("template")
            .progress_chars("=> "),
    );
    for &(uid, only) in &users {
        for ((store, state), out) in stores.iter().zip(&mut states).zip(&mut runs) {
            out.push(store.bench_user(uid, only, bench, state)?);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(stores
        .iter()
        .zip(states)
        .zip(runs)
        .map(|((store, state), runs)| summarize(store.mode(), bench, state.map.physical, runs))
        .collect())
}

/// The summary of one store's per-user runs.
fn summarize(
    mode: CacheMode,
    bench: &FriendsBench,
    physical: bool,
    runs: Vec<UserRun>,
) -> FriendsReport {
    let cold = mode == CacheMode::Cold;
    let mut times: Vec<f64> = runs.iter().map(|r| r.ms).collect();
    times.sort_by(f64::total_cmp);
    let mut data_times: Vec<f64> = runs.iter().map(|r| r.data_ms).collect();
    data_times.sort_by(f64::total_cmp);
    let n = runs.len().max(1) as f64;
    let mean = |f: &dyn Fn(&UserRun) -> f64| runs.iter().map(f).sum::<f64>() / n;
    let mut model: Vec<f64> = runs.iter().filter_map(|r| r.model_ms).collect();
    model.sort_by(f64::total_cmp);
    let mut model_data: Vec<f64> = runs.iter().filter_map(|r| r.model_data_ms).collect();
    model_data.sort_by(f64::total_cmp);
    let avg = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let summary = FriendsSummary {
        users: runs.len(),
        repeat: bench.repeat.max(1),
        mode,
        cold_means: cold.then(|| {
            "direct reads (O_DIRECT, no OS page cache), a 4 MiB block cache emptied before \
             every run, and posix_fadvise(DONTNEED) on every store file before every run"
                .to_string()
        }),
        fetch_bytes: bench.fetch_bytes,
        median_ms: quantile(&times, 0.5),
        p5_ms: quantile(&times, 0.05),
        p95_ms: quantile(&times, 0.95),
        mean_ms: mean(&|r| r.ms),
        pages_read_mean: mean(&|r| r.blocks as f64),
        data_pages_read_mean: mean(&|r| r.data_blocks as f64),
        device_pages_mean: mean(&|r| r.pages as f64),
        requests_mean: mean(&|r| r.requests as f64),
        data_requests_mean: mean(&|r| r.data_requests as f64),
        data_median_ms: quantile(&data_times, 0.5),
        bytes_read_mean: mean(&|r| r.block_bytes as f64),
        friends_mean: mean(&|r| r.friends as f64),
        device_model: bench.device.map(|d| d.to_string()),
        model_median_ms: (!model.is_empty()).then(|| quantile(&model, 0.5)),
        model_mean_ms: avg(&model),
        model_data_median_ms: (!model_data.is_empty()).then(|| quantile(&model_data, 0.5)),
        model_data_mean_ms: avg(&model_data),
        physical_addresses: physical,
    };
    FriendsReport { summary, runs }
}
