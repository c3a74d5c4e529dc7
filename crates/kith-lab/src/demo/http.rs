//! The demo's last act: serve the store over HTTP on loopback and drive a short mixed
//! workload against it from concurrent clients, then shut the server down gracefully.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use hdrhistogram::Histogram;
use kith_feed::{CacheMode, FeedConfig, Strategy};
use kith_server::ServerConfig;
use kith_store::{OpenOptions, Store};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

const OPS: [&str; 6] = ["friends", "profile", "feed", "post", "follow", "add_friend"];
/// Percent of each operation in the mix.
const MIX: [u32; 6] = [40, 20, 25, 10, 3, 2];

struct ClientResult {
    hist: Vec<Histogram<u64>>,
    errors: Vec<u64>,
}

/// Serves `store_dir` on 127.0.0.1 (a free port), preloads follows and posts, runs the mix
/// for `seconds` from `clients` concurrent clients, prints per-operation figures.
pub(super) fn run(
    store_dir: &Path,
    uids: &[u64],
    seconds: f64,
    clients: usize,
    seed: u64,
) -> Result<serde_json::Value> {
    let store = Arc::new(Store::open(store_dir, &OpenOptions::default())?);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let config = ServerConfig {
        addr: "127.0.0.1:0".parse().expect("literal address"),
        feed: FeedConfig {
            strategy: Strategy::Hybrid,
            cache: CacheMode::WriteBack,
            celebrity_threshold: 200,
            ..FeedConfig::default()
        },
        ..ServerConfig::default()
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let server = runtime.spawn(kith_server::serve(
        store.clone(),
        store_dir.join("feed-journal"),
        config,
        move |addr| {
            let _ = addr_tx.send(addr);
        },
        async move {
            let _ = stop_rx.await;
        },
    ));
    let addr = addr_rx.recv_timeout(Duration::from_secs(30)).context("the server did not start")?;
    let base = format!("http://{addr}");
    crate::say!(
        "\nservice: kith serve on {base} (hybrid feed, write-back cache, in-process backend); \
         {clients} clients for {seconds:.0} s over HTTP"
    );
    let uids: Arc<[u64]> = uids.into();
    let result = runtime.block_on(drive(&base, uids, seconds, clients, seed));
    let stats: serde_json::Value =
        runtime.block_on(async { reqwest::get(format!("{base}/stats")).await?.json().await })?;
    let _ = stop_tx.send(());
    runtime.block_on(server)?.map_err(|e| anyhow::anyhow!("server: {e}"))?;
    let (results, wall) = result?;
    crate::say!(
        "{:<12}{:>10}{:>8}{:>12}{:>10}{:>10}{:>10}",
        "operation",
        "requests",
        "errors",
        "req/s",
        "p50 ms",
        "p99 ms",
        "max ms"
    );
    let mut total = 0;
    let mut rows = Vec::new();
    for (i, op) in OPS.iter().enumerate() {
        let mut h = Histogram::<u64>::new(3).expect("valid precision");
        let mut errors = 0;
        for r in &results {
            h.add(&r.hist[i]).expect("same precision");
            errors += r.errors[i];
        }
        total += h.len();
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        rows.push(serde_json::json!({
            "op": op, "requests": h.len(), "errors": errors, "rps": h.len() as f64 / wall,
            "p50_ms": ms(0.5), "p99_ms": ms(0.99), "max_ms": h.max() as f64 / 1000.0,
        }));
        crate::say!(
            "{op:<12}{:>10}{errors:>8}{:>12.0}{:>10.3}{:>10.3}{:>10.3}",
            h.len(),
            h.len() as f64 / wall,
            ms(0.5),
            ms(0.99),
            h.max() as f64 / 1000.0
        );
    }
    crate::say!("{:<12}{total:>10}{:>8}{:>12.0}", "all", "", total as f64 / wall);
    let rate = |k: &str| {
        stats["hit_rate"][k]["rate"].as_f64().map_or("-".into(), |r| format!("{:.1} %", 100.0 * r))
    };
    crate::say!(
        "cache hit rate: posts {}, friend lists {}, timelines {}",
        rate("post"),
        rate("friends"),
        rate("timeline")
    );
    let (appends, syncs) = (
        stats["journal_appends"].as_u64().unwrap_or(0),
        stats["journal_syncs"].as_u64().unwrap_or(0),
    );
    crate::say!(
        "write-back journal: {appends} posts in {syncs} fdatasync calls ({:.2} posts per sync); \
         server shut down gracefully",
        appends as f64 / syncs.max(1) as f64
    );
    drop(runtime);
    drop(store);
    Ok(serde_json::json!({
        "clients": clients, "seconds": wall, "ops": rows, "total_rps": total as f64 / wall,
        "stats": stats,
    }))
}

async fn drive(
    base: &str,
    uids: Arc<[u64]>,
    seconds: f64,
    clients: usize,
    seed: u64,
) -> Result<(Vec<ClientResult>, f64)> {
    let http = reqwest::Client::builder().pool_max_idle_per_host(clients).build()?;
    // Everyone sampled follows up to 20 random users; some posts to start from.
    let mut rng = Pcg64::seed_from_u64(seed);
    let setup: Vec<u64> = (0..2000).map(|_| uids[rng.random_range(0..uids.len())]).collect();
    for &u in &setup {
        let mut targets: Vec<u64> =
            (0..20).map(|_| setup[rng.random_range(0..setup.len())]).collect();
        targets.sort_unstable();
        targets.dedup();
        targets.retain(|&t| t != u);
        let r = http
            .post(format!("{base}/users/{u}/follow"))
            .json(&serde_json::json!({"targets": targets}))
            .send()
            .await?;
        // 409: the same user drawn twice.
        ensure!(r.status().is_success() || r.status() == 409, "follow setup: {}", r.status());
    }
    for (i, &u) in setup.iter().enumerate().take(500) {
        let r = http
            .post(format!("{base}/posts"))
            .json(&serde_json::json!({"author": u, "content": format!("hello #{i}")}))
            .send()
            .await?;
        ensure!(r.status() == 201, "post setup: {}", r.status());
    }
    let setup: Arc<[u64]> = setup.into();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (http, base, uids, setup) =
            (http.clone(), base.to_string(), uids.clone(), setup.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = Pcg64::seed_from_u64(seed ^ (c as u64 + 1).wrapping_mul(0x9E37_79B9));
            let mut out = ClientResult {
                hist: (0..OPS.len()).map(|_| Histogram::new(3).expect("valid precision")).collect(),
                errors: vec![0; OPS.len()],
            };
            let mut n = 0u64;
            while Instant::now() < deadline {
                n += 1;
                let mut pick = rng.random_range(0..100);
                let op = MIX
                    .iter()
                    .position(|&w| {
                        if pick < w {
                            true
                        } else {
                            pick -= w;
                            false
                        }
                    })
                    .expect("mix sums to 100");
                let u = setup[rng.random_range(0..setup.len())];
                let v = uids[rng.random_range(0..uids.len())];
                let req = match op {
                    0 => {
                        http.get(format!("{base}/users/{u}/friends?limit=100&consistency=eventual"))
                    }
                    1 => http.get(format!("{base}/users/{u}/profile")),
                    2 => http.get(format!("{base}/users/{u}/feed?limit=50")),
                    3 => http.post(format!("{base}/posts")).json(
                        &serde_json::json!({"author": u, "content": format!("post {c}-{n}")}),
                    ),
                    4 => http
                        .post(format!("{base}/users/{u}/follow"))
                        .json(&serde_json::json!({"targets": [v]})),
                    _ => http.post(format!("{base}/users/{u}/friends/{v}")),
                };
                let t = Instant::now();
                let ok = match req.send().await {
                    Ok(r) => {
                        let status = r.status();
                        let _ = r.bytes().await;
                        // A follow of someone already followed, or of oneself, is the mix's own doing.
                        status.is_success()
                            || (op == 4 && (status == 409 || status == 422))
                            || (op == 5 && status == 422)
                    }
                    Err(_) => false,
                };
                let us = t.elapsed().as_micros().max(1) as u64;
                out.hist[op].record(us).expect("auto-resizing histogram");
                if !ok {
                    out.errors[op] += 1;
                }
            }
            out
        }));
    }
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await?);
    }
    Ok((results, start.elapsed().as_secs_f64()))
}
