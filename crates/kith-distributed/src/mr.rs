//! The complex-network study's MapReduce jobs (kith-analytics' jobs, written against
//! `MrEngine`) on timely workers: each worker maps its share of the records (at first, the
//! vertices it owns), sends every record to the worker that owns its key (map → exchange by
//! key), sorts what it received by key (the merge) and reduces each key's group into its
//! share of the round's output, which stays where it is as the next round's input. Every
//! phase is timed on every worker; the shuffle's records and bytes are counted.

use std::sync::Arc;
use std::time::Instant;

use kith_analytics::{Emit, Group, InGraph, Input, MrEngine, MutualFriends};
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use crate::cluster::Cluster;
use crate::error::Result;
use crate::net::{Envelope, Net};
use crate::part::{owner, owner_of_key};
use crate::report::Spread;

/// A worker's records: `(key, value)` with values of `u32`s, flat.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Records {
    keys: Vec<u64>,
    lens: Vec<u32>,
    values: Vec<u32>,
}

impl Records {
    fn len(&self) -> usize {
        self.keys.len()
    }

    fn iter(&self) -> impl Iterator<Item = (u64, &[u32])> + '_ {
        let mut at = 0usize;
        self.keys.iter().zip(&self.lens).map(move |(&k, &l)| {
            let value = &self.values[at..at + l as usize];
            at += l as usize;
            (k, value)
        })
    }
}

impl Emit for Records {
    fn emit(&mut self, key: u64, value: &[u32]) {
        self.keys.push(key);
        self.lens.push(value.len() as u32);
        self.values.extend_from_slice(value);
    }
}

/// The map side: records by the worker that owns their key.
struct Router {
    out: Vec<Records>,
}

impl Emit for Router {
    fn emit(&mut self, key: u64, value: &[u32]) {
        let workers = self.out.len();
        self.out[owner_of_key(key, workers)].emit(key, value);
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
enum Body {
    Hello(String),
    Records(Records),
    Sum(u64),
    Log(Vec<RoundLog>),
}

/// One worker's round.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
struct RoundLog {
    map_s: f64,
    shuffle_s: f64,
    merge_s: f64,
    reduce_s: f64,
    input_records: u64,
    map_output_records: u64,
    shuffled_records: u64,
    shuffled_bytes: u64,
    groups: u64,
    output_records: u64,
}

/// A job's workers' engine.
struct TimelyMr<'w> {
    worker: &'w mut Worker,
    net: Net<Body>,
    names: Vec<&'static str>,
    log: Vec<RoundLog>,
}

impl TimelyMr<'_> {
    fn me(&self) -> usize {
        self.worker.index()
    }

    fn exchange(
        &mut self,
        envelopes: Vec<Envelope<Body>>,
        what: &str,
    ) -> Result<Vec<Envelope<Body>>, kith_analytics::Error> {
        self.net.round(self.worker, envelopes, what).map_err(kith_analytics::Error::Engine)
    }

    fn envelope(&self, to: usize, body: Body) -> Envelope<Body> {
        Envelope { to: to as u32, from: self.me() as u32, body }
    }
}

impl MrEngine for TimelyMr<'_> {
    type Data = Records;

    fn round(
        &mut self,
        name: &'static str,
        input: Input<'_, Records>,
        mut map: impl FnMut(u64, &[u32], &mut dyn Emit),
        mut reduce: impl FnMut(u64, &Group, &mut dyn Emit),
    ) -> kith_analytics::Result<Records> {
        let (me, workers) = (self.me(), self.worker.peers());
        let mut log = RoundLog::default();
        let t = Instant::now();
        let mut router = Router { out: vec![Records::default(); workers] };
        match input {
            Input::Graph(graph) => {
                for v in 0..graph.num_vertices() as u32 {
                    if owner(v, workers) == me {
                        map(u64::from(v), graph.in_links(v), &mut router);
                        log.input_records += 1;
                    }
                }
            }
            Input::Records(records) => {
                for (key, value) in records.iter() {
                    map(key, value, &mut router);
                    log.input_records += 1;
                }
            }
        }
        log.map_s = t.elapsed().as_secs_f64();

        // Shuffle: every record to its key's owner; this worker's own share stays here.
        let t = Instant::now();
        let mut batches: Vec<Records> = Vec::with_capacity(workers);
        let mut envelopes = Vec::new();
        for (w, records) in router.out.into_iter().enumerate() {
            log.map_output_records += records.len() as u64;
            if w == me {
                batches.push(records);
            } else if records.len() > 0 {
                log.shuffled_records += records.len() as u64;
                let e = self.envelope(w, Body::Records(records));
                log.shuffled_bytes += bincode::serialized_size(&e).expect("records serialise");
                envelopes.push(e);
            }
        }
        let mut received = self.exchange(envelopes, name)?;
        received.sort_by_key(|e| e.from);
        batches.extend(received.into_iter().filter_map(|e| match e.body {
            Body::Records(r) => Some(r),
            _ => None,
        }));
        log.shuffle_s = t.elapsed().as_secs_f64();

        // Merge: sort everything received by key (stable across batches and records).
        let t = Instant::now();
        let mut starts: Vec<Vec<u32>> = Vec::with_capacity(batches.len());
        let mut index: Vec<(u64, u32, u32)> = Vec::new();
        for (b, batch) in batches.iter().enumerate() {
            let mut at = 0u32;
            let mut s = Vec::with_capacity(batch.len());
            for (i, (&key, &len)) in batch.keys.iter().zip(&batch.lens).enumerate() {
                index.push((key, b as u32, i as u32));
                s.push(at);
                at += len;
            }
            starts.push(s);
        }
        index.sort_unstable();
        log.merge_s = t.elapsed().as_secs_f64();

        // Reduce every key's group into this worker's share of the output.
        let t = Instant::now();
        let mut output = Records::default();
        let mut group = Group::default();
        let mut i = 0;
        while i < index.len() {
            let key = index[i].0;
            group.clear();
            while i < index.len() && index[i].0 == key {
                let (_, b, r) = index[i];
                let batch = &batches[b as usize];
                let at = starts[b as usize][r as usize] as usize;
                group.push(&batch.values[at..at + batch.lens[r as usize] as usize]);
                i += 1;
            }
            reduce(key, &group, &mut output);
            log.groups += 1;
        }
        log.output_records = output.len() as u64;
        log.reduce_s = t.elapsed().as_secs_f64();
        self.names.push(name);
        self.log.push(log);
        Ok(output)
    }

    fn read(
        &mut self,
        mut data: Records,
        mut each: impl FnMut(u64, &[u32]),
    ) -> kith_analytics::Result<()> {
        let me = self.me();
        let mut envelopes = Vec::new();
        if me != 0 {
            envelopes.push(self.envelope(0, Body::Records(std::mem::take(&mut data))));
        }
        let mut received = self.exchange(envelopes, "gathering the output")?;
        if me == 0 {
            received.sort_by_key(|e| e.from);
            for (k, v) in data.iter() {
                each(k, v);
            }
            for e in &received {
                if let Body::Records(r) = &e.body {
                    for (k, v) in r.iter() {
                        each(k, v);
                    }
                }
            }
        }
        Ok(())
    }

    fn sum(&mut self, local: u64) -> kith_analytics::Result<u64> {
        let (me, workers) = (self.me(), self.worker.peers());
        let envelopes =
            (0..workers).filter(|&w| w != me).map(|w| self.envelope(w, Body::Sum(local))).collect();
        let received = self.exchange(envelopes, "summing a counter")?;
        Ok(local
            + received.iter().map(|e| if let Body::Sum(x) = e.body { x } else { 0 }).sum::<u64>())
    }
}

/// A MapReduce job of the study.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MrJob {
    /// Algorithm 1: common friends of every friendship, in one round of list intersection.
    MutualFriends,
    /// Algorithm 1 in the study's three jobs: adjacency lists, triples, common-friend lists.
    MutualFriends3,
    /// Algorithm 2: components by min-label message passing.
    Components,
    /// Algorithm 3: triangles from triads and edges.
    Triangles,
}

/// A job's result.
#[derive(Clone, Debug)]
pub enum MrOutput {
    /// Algorithm 1's.
    MutualFriends(MutualFriends),
    /// Algorithm 2's labels (the smallest dense id of each component).
    Components(Vec<u32>),
    /// Algorithm 3's triangles per vertex and in total.
    Triangles(Vec<u64>, u64),
}

/// One round over all workers.
#[derive(Clone, Debug, Serialize)]
pub struct MrRoundReport {
    /// What the round does.
    pub name: &'static str,
    /// Map seconds per worker.
    pub map_s: Spread,
    /// Shuffle (exchange by key) seconds per worker.
    pub shuffle_s: Spread,
    /// Merge (sort by key) seconds per worker.
    pub merge_s: Spread,
    /// Reduce seconds per worker.
    pub reduce_s: Spread,
    /// Records mapped, over all workers.
    pub input_records: u64,
    /// Records the maps emitted.
    pub map_output_records: u64,
    /// Of those, records sent to another worker.
    pub shuffled_records: u64,
    /// Their serialised bytes.
    pub shuffled_bytes: u64,
    /// Shuffled bytes one worker sent, max and mean.
    pub worker_bytes: Spread,
    /// Keys reduced.
    pub groups: u64,
    /// Records the reduces emitted.
    pub output_records: u64,
}

/// A job over all workers.
#[derive(Clone, Debug, Serialize)]
pub struct MrReport {
    /// Workers.
    pub workers: usize,
    /// Rounds in order.
    pub rounds: Vec<MrRoundReport>,
    /// Seconds per phase, summed over rounds (the slowest worker of each).
    pub map_s: f64,
    /// As `map_s`.
    pub shuffle_s: f64,
    /// As `map_s`.
    pub merge_s: f64,
    /// As `map_s`.
    pub reduce_s: f64,
    /// Bytes shuffled between workers.
    pub shuffled_bytes: u64,
    /// Seconds from the start-up check to the result on worker 0 (the cluster's forming
    /// not included).
    pub seconds: f64,
}

impl MrReport {
    fn new(names: &[&'static str], logs: &[Vec<RoundLog>], seconds: f64) -> MrReport {
        let rounds: Vec<MrRoundReport> = names
            .iter()
            .enumerate()
            .map(|(r, &name)| {
                let at = || logs.iter().filter_map(move |l| l.get(r));
                let sum = |f: fn(&RoundLog) -> u64| at().map(f).sum::<u64>();
                MrRoundReport {
                    name,
                    map_s: Spread::of(at().map(|l| l.map_s)),
                    shuffle_s: Spread::of(at().map(|l| l.shuffle_s)),
                    merge_s: Spread::of(at().map(|l| l.merge_s)),
                    reduce_s: Spread::of(at().map(|l| l.reduce_s)),
                    input_records: sum(|l| l.input_records),
                    map_output_records: sum(|l| l.map_output_records),
                    shuffled_records: sum(|l| l.shuffled_records),
                    shuffled_bytes: sum(|l| l.shuffled_bytes),
                    worker_bytes: Spread::of(at().map(|l| l.shuffled_bytes as f64)),
                    groups: sum(|l| l.groups),
                    output_records: sum(|l| l.output_records),
                }
            })
            .collect();
        let total = |f: fn(&MrRoundReport) -> f64| rounds.iter().map(f).sum();
        MrReport {
            workers: logs.len(),
            map_s: total(|r| r.map_s.max),
            shuffle_s: total(|r| r.shuffle_s.max),
            merge_s: total(|r| r.merge_s.max),
            reduce_s: total(|r| r.reduce_s.max),
            shuffled_bytes: rounds.iter().map(|r| r.shuffled_bytes).sum(),
            rounds,
            seconds,
        }
    }
}

/// Runs `job` on `graph` (undirected) as process `cluster.process`; every process calls
/// this with the same arguments. The result and report on process 0, `None` elsewhere.
///
/// # Errors
/// As [`crate::run`].
pub fn run_mr(
    graph: Arc<InGraph>,
    job: MrJob,
    cluster: &Cluster,
) -> Result<Option<(MrOutput, MrReport)>> {
    let description = format!(
        "{} processes x {} threads, mapreduce {job:?} on {} vertices, {} in-links",
        cluster.processes(),
        cluster.threads,
        graph.num_vertices(),
        graph.num_in_links()
    );
    let wait_timeout = cluster.wait_timeout;
    crate::cluster::execute(cluster, move |worker| {
        let mut net = Net::new(worker, wait_timeout);
        net.hello(worker, &description, Body::Hello, |b| match b {
            Body::Hello(s) => Some(s.as_str()),
            _ => None,
        })?;
        let start = Instant::now();
        let mut engine = TimelyMr { worker, net, names: Vec::new(), log: Vec::new() };
        let output = match job {
            MrJob::MutualFriends => {
                kith_analytics::mutual_friends_job(&mut engine, &graph).map(MrOutput::MutualFriends)
            }
            MrJob::MutualFriends3 => kith_analytics::mutual_friends_3_job(&mut engine, &graph)
                .map(MrOutput::MutualFriends),
            MrJob::Components => {
                kith_analytics::components_job(&mut engine, &graph).map(MrOutput::Components)
            }
            MrJob::Triangles => kith_analytics::triangles_job(&mut engine, &graph)
                .map(|(per, total)| MrOutput::Triangles(per, total)),
        }
        .map_err(|e| e.to_string())?;
        let seconds = start.elapsed().as_secs_f64();
        let me = engine.me();
        let log = std::mem::take(&mut engine.log);
        let envelopes =
            if me == 0 { Vec::new() } else { vec![engine.envelope(0, Body::Log(log.clone()))] };
        let received =
            engine.exchange(envelopes, "gathering the reports").map_err(|e| e.to_string())?;
        if me != 0 {
            return Ok(None);
        }
        let mut logs = vec![Vec::new(); engine.worker.peers()];
        logs[0] = log;
        for e in received {
            if let Body::Log(l) = e.body {
                logs[e.from as usize] = l;
            }
        }
        Ok(Some((output, MrReport::new(&engine.names, &logs, seconds))))
    })
}
