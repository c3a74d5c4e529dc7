//! The load driver: sends a [`Source`]'s requests to kith servers over HTTP, closed loop
//! (a number of clients, each sending its next request when the previous one is answered)
//! or open loop (requests scheduled at a fixed rate, latency measured from the scheduled
//! time, so a slow server cannot hide its queueing behind a slower client).
//!
//! With several servers the requests are spread over them (client `c` starts at server
//! `c mod n`, open-loop request `i` at server `i mod n`), and a request that gets no answer
//! or a 503 is sent again to the next server, each server at most once: so clients move off
//! a server that died. A server that failed that way is skipped for [`DOWN_FOR`] by every
//! client. Writes carry an `Idempotency-Key`, so a write sent again after an answer was lost
//! is applied once. A request's latency includes its retries.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use serde::Serialize;
use tokio::sync::{Mutex, Semaphore};
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::mix::{Request, Source};

/// How long a server that failed a request is skipped.
pub const DOWN_FOR: Duration = Duration::from_secs(1);

/// How to drive.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The servers, e.g. `http://127.0.0.1:7070` (one or more).
    pub targets: Vec<String>,
    /// Closed loop: concurrent clients. Open loop: the most requests in flight.
    pub clients: usize,
    /// Open loop at this many requests per second; `None` = closed loop.
    pub rate: Option<f64>,
    /// Measured time.
    pub duration: Duration,
    /// Time before it, not measured.
    pub warmup: Duration,
    /// Seed of the clients' random streams.
    pub seed: u64,
    /// Per-request timeout.
    pub timeout: Duration,
}

/// One operation's figures.
#[derive(Clone, Debug, Serialize)]
pub struct OpReport {
    /// The operation.
    pub op: String,
    /// Requests answered (errors included) in the measured window.
    pub ops: u64,
    /// Of those, how many failed: non-2xx status or no answer.
    pub errors: u64,
    /// Errors by status code (`"transport"` when there was no answer).
    pub errors_by_status: BTreeMap<String, u64>,
    /// ops / measured seconds.
    pub throughput: f64,
    /// Latency percentiles over all answered requests, milliseconds.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Slowest.
    pub max_ms: f64,
    /// Latency CDF points (ms, fraction), for plotting.
    pub cdf: Vec<(f64, f64)>,
    /// What the servers reported in `Server-Timing`, over the answers that carried it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerTimes>,
}

/// Percentiles of the servers' own `Server-Timing` figures, milliseconds: the handler's whole
/// time, and the time in it spent waiting on the storage engine and on Redis.
#[derive(Clone, Debug, Serialize)]
pub struct ServerTimes {
    /// Answers that carried the header.
    pub answers: u64,
    /// The handler's time (`total`).
    pub total_p50_ms: f64,
    /// 95th percentile of `total`.
    pub total_p95_ms: f64,
    /// 99th percentile of `total`.
    pub total_p99_ms: f64,
    /// Median time waiting on the storage engine (`store`).
    pub store_p50_ms: f64,
    /// 95th percentile of `store`.
    pub store_p95_ms: f64,
    /// Median time waiting on Redis (`cache`).
    pub cache_p50_ms: f64,
    /// 95th percentile of `cache`.
    pub cache_p95_ms: f64,
}

/// A `Server-Timing` header's `name;dur=ms` entries: (total, store, cache) in microseconds,
/// when it has a `total`.
pub fn parse_server_timing(value: &str) -> Option<[u64; 3]> {
    let mut got = [None, Some(0), Some(0)];
    for entry in value.split(',') {
        let mut parts = entry.split(';').map(str::trim);
        let slot = match parts.next()? {
            "total" => 0,
            "store" => 1,
            "cache" => 2,
            _ => continue,
        };
        let dur = parts.find_map(|p| p.strip_prefix("dur="))?;
        let ms: f64 = dur.parse().ok().filter(|x: &f64| x.is_finite() && *x >= 0.0)?;
        got[slot] = Some((ms * 1000.0).round() as u64);
    }
    Some([got[0]?, got[1]?, got[2]?])
}

/// One run (one client count or rate).
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// Closed-loop clients (or the in-flight bound of an open loop).
    pub clients: usize,
    /// `closed` or `open`.
    pub mode: &'static str,
    /// The open loop's rate.
    pub rate: Option<f64>,
    /// Seconds measured.
    pub measured_s: f64,
    /// Seconds of warm-up.
    pub warmup_s: f64,
    /// Open loop: requests that could not be sent on schedule because `clients` were in
    /// flight (their latency still counts from the scheduled time).
    pub late_sends: u64,
    /// Per operation, in the source's order.
    pub ops: Vec<OpReport>,
    /// All operations together.
    pub total: OpReport,
    /// Per server, in the order given: requests it answered (any status) in the measured
    /// window.
    pub answered_by: Vec<u64>,
    /// Requests sent again to another server after no answer or a 503.
    pub retries: u64,
    /// Seconds from the start of the measured window to its first and last failed request,
    /// if any failed: the window in which clients saw failures.
    pub failed_window_s: Option<(f64, f64)>,
}

#[derive(Default)]
struct Tally {
    hist: BTreeMap<&'static str, Histogram<u64>>,
    /// Per operation: the servers' `total`, `store` and `cache` times, microseconds.
    server: BTreeMap<&'static str, [Histogram<u64>; 3]>,
    errors: BTreeMap<&'static str, BTreeMap<String, u64>>,
    answered_by: BTreeMap<usize, u64>,
    retries: u64,
    /// First and last failure, as offsets from the measured window's start.
    failed: Option<(Duration, Duration)>,
}

impl Tally {
    fn record(&mut self, op: &'static str, micros: u64, sent: &Sent, at: Duration) {
        self.hist
            .entry(op)
            .or_insert_with(|| Histogram::new(3).expect("valid precision"))
            .record(micros.max(1))
            .expect("auto-resizing histogram");
        if let Some(times) = sent.server_timing {
            let hists = self.server.entry(op).or_insert_with(new_triple);
            for (h, t) in hists.iter_mut().zip(times) {
                h.record(t).expect("auto-resizing histogram");
            }
        }
        if let Some(server) = sent.server {
            *self.answered_by.entry(server).or_insert(0) += 1;
        }
        self.retries += sent.retries;
        if let Some(e) = &sent.error {
            *self.errors.entry(op).or_default().entry(e.clone()).or_insert(0) += 1;
            self.failed = Some(match self.failed {
                None => (at, at),
                Some((first, last)) => (first.min(at), last.max(at)),
            });
        }
    }

    fn merge(&mut self, other: Tally) {
        for (s, n) in other.answered_by {
            *self.answered_by.entry(s).or_insert(0) += n;
        }
        self.retries += other.retries;
        self.failed = match (self.failed, other.failed) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (x, None) | (None, x) => x,
        };
        for (op, hs) in other.server {
            let mine = self.server.entry(op).or_insert_with(new_triple);
            for (m, h) in mine.iter_mut().zip(hs) {
                m.add(&h).expect("same precision");
            }
        }
        for (op, h) in other.hist {
            self.hist
                .entry(op)
                .or_insert_with(|| Histogram::new(3).expect("valid precision"))
                .add(&h)
                .expect("same precision");
        }
        for (op, errs) in other.errors {
            let mine = self.errors.entry(op).or_default();
            for (k, n) in errs {
                *mine.entry(k).or_insert(0) += n;
            }
        }
    }
}

fn new_triple() -> [Histogram<u64>; 3] {
    std::array::from_fn(|_| Histogram::new(3).expect("valid precision"))
}

fn server_times(hs: Option<&[Histogram<u64>; 3]>) -> Option<ServerTimes> {
    let [total, store, cache] = hs.filter(|h| !h[0].is_empty())?;
    let ms = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    Some(ServerTimes {
        answers: total.len(),
        total_p50_ms: ms(total, 0.5),
        total_p95_ms: ms(total, 0.95),
        total_p99_ms: ms(total, 0.99),
        store_p50_ms: ms(store, 0.5),
        store_p95_ms: ms(store, 0.95),
        cache_p50_ms: ms(cache, 0.5),
        cache_p95_ms: ms(cache, 0.95),
    })
}

fn op_report(
    op: &str,
    h: &Histogram<u64>,
    errors: &BTreeMap<String, u64>,
    seconds: f64,
    server: Option<&[Histogram<u64>; 3]>,
) -> OpReport {
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    let cdf = (0..=200)
        .map(|i| {
            let q = 1.0 - 0.5f64.powf(f64::from(i) / 20.0);
            (ms(q), q)
        })
        .chain(std::iter::once((h.max() as f64 / 1000.0, 1.0)))
        .collect();
    OpReport {
        op: op.to_string(),
        ops: h.len(),
        errors: errors.values().sum(),
        errors_by_status: errors.clone(),
        throughput: h.len() as f64 / seconds.max(1e-9),
        p50_ms: ms(0.5),
        p95_ms: ms(0.95),
        p99_ms: ms(0.99),
        p999_ms: ms(0.999),
        max_ms: h.max() as f64 / 1000.0,
        cdf,
        server: server_times(server),
    }
}

/// Checks that the target answers `GET /health` within a few seconds.
pub async fn check_target(http: &reqwest::Client, target: &str) -> Result<()> {
    let url = format!("{}/health", target.trim_end_matches('/'));
    let unreachable = |reason: String| Error::Config { origin: target.to_string(), reason };
    let r = tokio::time::timeout(Duration::from_secs(5), http.get(&url).send())
        .await
        .map_err(|_| unreachable("no answer to GET /health within 5 s".into()))?
        .map_err(|e| unreachable(format!("cannot reach the server ({e})")))?;
    if !r.status().is_success() {
        return Err(unreachable(format!(
            "GET /health answered {}: is this a kith server?",
            r.status()
        )));
    }
    Ok(())
}

/// The servers requests are spread over, and which of them failed lately.
#[derive(Debug)]
pub struct Servers {
    bases: Vec<String>,
    /// Per server: until when it is skipped.
    down: std::sync::Mutex<Vec<Option<Instant>>>,
}

impl Servers {
    /// Servers at these base URLs.
    pub fn new(targets: &[String]) -> Servers {
        Servers {
            bases: targets.iter().map(|t| t.trim_end_matches('/').to_string()).collect(),
            down: std::sync::Mutex::new(vec![None; targets.len()]),
        }
    }

    /// How many servers.
    pub fn len(&self) -> usize {
        self.bases.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bases.is_empty()
    }

    fn is_down(&self, i: usize) -> bool {
        let down = self.down.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        down[i].is_some_and(|until| Instant::now() < until)
    }

    fn mark_down(&self, i: usize) {
        self.down.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[i] =
            Some(Instant::now() + DOWN_FOR);
    }

    fn mark_up(&self, i: usize) {
        self.down.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[i] = None;
    }
}

/// How one request went.
#[derive(Debug)]
pub struct Sent {
    /// The server that answered last (any status), if any did.
    pub server: Option<usize>,
    /// The failure (status code or `transport`), if it failed everywhere it was sent.
    pub error: Option<String>,
    /// Times it was sent again to another server.
    pub retries: u64,
    /// The answer's body, when it succeeded.
    pub body: Option<bytes::Bytes>,
    /// The answering server's `Server-Timing` (total, store, cache; microseconds), if sent.
    pub server_timing: Option<[u64; 3]>,
}

/// Sends `req`, starting at server `first` (skipping servers marked down unless all are),
/// and to the next server after no answer or a 503, each server at most once. `key`, for
/// writes, is sent as `Idempotency-Key`.
pub async fn send(
    http: &reqwest::Client,
    servers: &Servers,
    first: usize,
    req: &Request,
    key: Option<&str>,
) -> Sent {
    let n = servers.bases.len();
    let order: Vec<usize> = (0..n).map(|k| (first + k) % n).collect();
    let mut tries: Vec<usize> = order.iter().copied().filter(|&i| !servers.is_down(i)).collect();
    tries.extend(order.iter().copied().filter(|&i| servers.is_down(i)));
    let mut sent = Sent { server: None, error: None, retries: 0, body: None, server_timing: None };
    for (attempt, i) in tries.into_iter().enumerate() {
        if attempt > 0 {
            sent.retries += 1;
        }
        let url = format!("{}{}", servers.bases[i], req.path);
        let mut builder = match req.method {
            "POST" => http.post(url),
            "PUT" => http.put(url),
            "DELETE" => http.delete(url),
            _ => http.get(url),
        };
        if let (Some(k), "POST" | "DELETE") = (key, req.method) {
            builder = builder.header("Idempotency-Key", k);
        }
        if let Some(b) = &req.body {
            builder = builder.json(b);
        }
        let answer = match builder.send().await {
            Ok(r) => {
                let status = r.status();
                sent.server_timing = r
                    .headers()
                    .get("server-timing")
                    .and_then(|v| v.to_str().ok())
                    .and_then(parse_server_timing);
                // Read the whole body: the answer is not complete until then.
                match r.bytes().await {
                    Ok(body) => Some((status, body)),
                    Err(_) => None,
                }
            }
            Err(_) => None,
        };
        match answer {
            Some((status, body)) if status.is_success() => {
                servers.mark_up(i);
                sent.server = Some(i);
                sent.error = None;
                sent.body = Some(body);
                return sent;
            }
            Some((status, _)) if status.as_u16() != 503 => {
                sent.server = Some(i);
                sent.error = Some(status.as_u16().to_string());
                return sent;
            }
            Some((status, _)) => {
                sent.server = Some(i);
                sent.error = Some(status.as_u16().to_string());
            }
            None => {
                servers.mark_down(i);
                sent.error = Some("transport".into());
            }
        }
    }
    sent
}

/// Checks that at least one of the servers answers `GET /health`; names the first failure
/// when none does.
pub async fn check_targets(http: &reqwest::Client, targets: &[String]) -> Result<()> {
    let mut first_error = None;
    for t in targets {
        match check_target(http, t).await {
            Ok(()) => return Ok(()),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| Error::Config {
        origin: "load driver".into(),
        reason: "no server given".into(),
    }))
}

/// Drives `source` against the servers once.
pub async fn run(source: Arc<dyn Source>, config: &RunConfig) -> Result<RunReport> {
    if config.clients == 0 {
        return Err(Error::Config {
            origin: "load driver".into(),
            reason: "clients must be at least 1".into(),
        });
    }
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(config.clients)
        .timeout(config.timeout)
        .build()
        .map_err(|e| Error::Config { origin: "http client".into(), reason: e.to_string() })?;
    check_targets(&http, &config.targets).await?;
    let servers = Arc::new(Servers::new(&config.targets));
    let n = config.targets.len();
    // Idempotency keys unique to this run.
    let run_id = format!("{:x}-{:x}", config.seed, u64::from(std::process::id()) ^ now_nanos());
    let start = Instant::now();
    let measure_from = start + config.warmup;
    let deadline = measure_from + config.duration;
    let counter = Arc::new(AtomicU64::new(0));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let mut late = 0u64;
    match config.rate {
        None => {
            let mut tasks = Vec::new();
            for c in 0..config.clients {
                let (http, servers, source, counter, tally) =
                    (http.clone(), servers.clone(), source.clone(), counter.clone(), tally.clone());
                let run_id = run_id.clone();
                let seed = config.seed ^ (c as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                tasks.push(tokio::spawn(async move {
                    let mut rng = Pcg64Mcg::seed_from_u64(seed);
                    let mut mine = Tally::default();
                    while Instant::now() < deadline {
                        let i = counter.fetch_add(1, Ordering::Relaxed);
                        let Some(req) = source.next(i, &mut rng) else { break };
                        let t = Instant::now();
                        let key = format!("{run_id}-{i}");
                        let sent = send(&http, &servers, c % n, &req, Some(&key)).await;
                        if t >= measure_from {
                            let at = t - measure_from;
                            mine.record(req.op, t.elapsed().as_micros() as u64, &sent, at);
                        }
                    }
                    tally.lock().await.merge(mine);
                }));
            }
            for t in tasks {
                t.await.map_err(|e| Error::Config {
                    origin: "load driver".into(),
                    reason: e.to_string(),
                })?;
            }
        }
        Some(rate) => {
            if !(rate > 0.0 && rate.is_finite()) {
                return Err(Error::Config {
                    origin: "load driver".into(),
                    reason: format!("rate must be positive, got {rate}"),
                });
            }
            let permits = Arc::new(Semaphore::new(config.clients));
            let mut rng = Pcg64Mcg::seed_from_u64(config.seed);
            let mut i = 0u64;
            loop {
                let scheduled = start + Duration::from_secs_f64(i as f64 / rate);
                if scheduled >= deadline {
                    break;
                }
                tokio::time::sleep_until(scheduled).await;
                let Some(req) = source.next(i, &mut rng) else { break };
                i += 1;
                let permit = match permits.clone().try_acquire_owned() {
                    Ok(p) => p,
                    Err(_) => {
                        late += 1;
                        permits.clone().acquire_owned().await.expect("never closed")
                    }
                };
                let (http, servers, tally) = (http.clone(), servers.clone(), tally.clone());
                let key = format!("{run_id}-{i}");
                let first = i as usize % n;
                tokio::spawn(async move {
                    let sent = send(&http, &servers, first, &req, Some(&key)).await;
                    // From the scheduled time: queueing anywhere counts.
                    let micros = scheduled.elapsed().as_micros() as u64;
                    if scheduled >= measure_from {
                        let at = scheduled - measure_from;
                        tally.lock().await.record(req.op, micros, &sent, at);
                    }
                    drop(permit);
                });
            }
            // Wait for everything in flight.
            let _ = permits.acquire_many(config.clients as u32).await;
        }
    }
    let end = Instant::now().min(deadline).max(measure_from);
    let measured = (end - measure_from).as_secs_f64();
    let tally = std::mem::take(&mut *tally.lock().await);
    let empty = BTreeMap::new();
    let mut ops = Vec::new();
    let mut all = Histogram::<u64>::new(3).expect("valid precision");
    let mut all_server = new_triple();
    let mut all_errors: BTreeMap<String, u64> = BTreeMap::new();
    for op in source.ops() {
        if let Some(h) = tally.hist.get(op) {
            all.add(h).expect("same precision");
            let errors = tally.errors.get(op).unwrap_or(&empty);
            for (k, n) in errors {
                *all_errors.entry(k.clone()).or_insert(0) += n;
            }
            let server = tally.server.get(op);
            if let Some(hs) = server {
                for (a, h) in all_server.iter_mut().zip(hs) {
                    a.add(h).expect("same precision");
                }
            }
            ops.push(op_report(op, h, errors, measured, server));
        }
    }
    Ok(RunReport {
        clients: config.clients,
        mode: if config.rate.is_some() { "open" } else { "closed" },
        rate: config.rate,
        measured_s: measured,
        warmup_s: config.warmup.as_secs_f64(),
        late_sends: late,
        total: op_report("all", &all, &all_errors, measured, Some(&all_server)),
        ops,
        answered_by: (0..n).map(|i| tally.answered_by.get(&i).copied().unwrap_or(0)).collect(),
        retries: tally.retries,
        failed_window_s: tally.failed.map(|(a, b)| (a.as_secs_f64(), b.as_secs_f64())),
    })
}

fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_timing_entries_are_read_by_name_in_any_order() {
        let v = "store;dur=1.5, cache;dur=0.25, total;dur=2.000";
        assert_eq!(parse_server_timing(v), Some([2000, 1500, 250]));
        assert_eq!(parse_server_timing("total;desc=\"x\";dur=3, db;desc=y"), Some([3000, 0, 0]));
        for bad in ["", "store;dur=1", "total;dur=-1", "total;dur=x", "total"] {
            assert_eq!(parse_server_timing(bad), None, "{bad}");
        }
    }
}
