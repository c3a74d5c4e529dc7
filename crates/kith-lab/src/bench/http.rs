//! `kith bench http`: a quick throughput figure for the service, measured with `wrk` over
//! loopback, server and client sharing the machine, and `redis-benchmark` against a Redis on
//! the same machine in the same run as the anchor (`LRANGE_100`, the nearest thing to a
//! feed read, and `GET`), with as many connections. (A proper load driver is `kith
//! workload`.)

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use clap::Args;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use serde::Serialize;

use crate::machine::{Machine, git_commit, utc_now, write_json};
use crate::processes::{build_kith_store, start_server};

#[derive(Debug, Args)]
pub struct HttpBenchArgs {
    /// Users of the generated LFR graph the store holds.
    #[arg(long, default_value_t = 100_000)]
    nodes: usize,
    /// The hot set: requests pick users uniformly from the first this many.
    #[arg(long, default_value_t = 10_000)]
    hot: usize,
    /// Seconds per case.
    #[arg(long, default_value_t = 10)]
    duration_s: u64,
    /// Open connections (wrk -c).
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// wrk threads (wrk -t).
    #[arg(long, default_value_t = 1)]
    wrk_threads: usize,
    /// Posts preloaded before the feed case.
    #[arg(long, default_value_t = 50_000)]
    posts: usize,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The server's --friends-ttl-s: how long an eventual friend list may be served from cache.
    #[arg(long, default_value_t = 60.0)]
    friends_ttl_s: f64,
    /// Run the server with this Redis as its cache and timeline backend.
    #[arg(long)]
    redis: Option<String>,
    /// Where to write the JSON (default bench/results/http-<date>.json).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct HttpCase {
    name: String,
    path: String,
    requests_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    requests: u64,
    non_2xx: u64,
    hit_rate: Option<f64>,
}

/// One `redis-benchmark` test.
#[derive(Debug, Serialize)]
struct RedisAnchor {
    test: String,
    requests_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
}

#[derive(Debug, Serialize)]
struct HttpBench {
    benchmark: &'static str,
    date: String,
    commit: Option<String>,
    machine: Machine,
    tool: String,
    users: usize,
    hot: usize,
    connections: usize,
    duration_s: u64,
    friends_ttl_s: f64,
    server: String,
    cases: Vec<HttpCase>,
    /// `redis-benchmark -c <connections>` on a private Redis, same machine, same run.
    redis_benchmark: Vec<RedisAnchor>,
    /// The feed read's throughput over `redis-benchmark`'s LRANGE_100.
    feed_over_lrange_100: Option<f64>,
    journal_posts_per_sync: f64,
    note: &'static str,
}

fn wrk_ms(text: &str, label: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.trim_start().starts_with(label))?;
    let v = line.split_whitespace().nth(1)?;
    let (num, unit) = v.split_at(v.find(|c: char| c.is_ascii_alphabetic())?);
    let x: f64 = num.parse().ok()?;
    Some(match unit {
        "us" => x / 1000.0,
        "ms" => x,
        "s" => x * 1000.0,
        "m" => x * 60_000.0,
        _ => return None,
    })
}

pub(super) fn run(args: HttpBenchArgs) -> Result<()> {
    ensure!(args.hot > 0 && args.hot <= args.nodes, "--hot must be 1 to --nodes");
    let wrk = Command::new("wrk").arg("--version").output();
    if wrk.is_err() {
        bail!("wrk not found: install it (apt-get install wrk)");
    }
    let tmp = tempfile::tempdir()?;
    eprintln!("bench http: building a store of {} LFR users", args.nodes);
    let config = kith_graph::generate::LfrConfig {
        nodes: args.nodes,
        seed: args.seed,
        progress: true,
        ..Default::default()
    };
    let graph = kith_graph::generate::lfr(&config)?.graph;
    let store_dir = tmp.path().join("store");
    build_kith_store(&graph, &store_dir, args.seed)?;
    let uids: Vec<u64> = graph.original_ids()[..args.hot].to_vec();

    let common: Vec<String> =
        ["--feed", "push", "--friends-ttl-s", &args.friends_ttl_s.to_string()]
            .iter()
            .map(|s| s.to_string())
            .chain(args.redis.iter().flat_map(|r| ["--redis".to_string(), r.clone()]))
            .collect();
    let with = |extra: &[&str]| {
        let mut a = common.clone();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let (server, base) = start_server(&store_dir, &with(&["--cache", "aside"]))?;

    // Preload: every hot user follows 20 hot users; posts by random hot users.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(preload(&base, &uids, args.posts, args.seed))?;

    let mut cases = Vec::new();
    let list = uids.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let get = |template: &str| {
        let (pre, post) = template.split_once("%d").expect("template");
        format!("return wrk.format(\"GET\", \"{pre}\" .. ids[math.random(#ids)] .. \"{post}\")")
    };
    let post =
        "return wrk.format(\"POST\", \"/posts\", {[\"content-type\"] = \"application/json\"}, \
                '{\"author\":' .. ids[math.random(#ids)] .. ',\"content\":\"a benchmark post\"}')"
            .to_string();
    let run = |name: &str, path: &str, body: String, kind: Option<&str>, base: &str| {
        wrk_case(&args, tmp.path(), &runtime, base, &list, name, path, &body, kind)
    };
    for (name, template, kind) in [
        (
            "friends eventual (cached)",
            "/users/%d/friends?limit=100&consistency=eventual",
            Some("friends"),
        ),
        ("friends strong (store)", "/users/%d/friends?limit=100", None),
        ("feed push (cached)", "/users/%d/feed?limit=50", Some("post")),
    ] {
        cases.push(run(name, template, get(template), kind, &base)?);
    }
    cases.push(run(
        "post, cache aside (synced store write)",
        "POST /posts",
        post.clone(),
        None,
        &base,
    )?);
    drop(server);
    let (server, base) = start_server(&store_dir, &with(&["--cache", "write-back"]))?;
    cases.push(run("post, write-back (journal)", "POST /posts", post, None, &base)?);
    let stats: serde_json::Value =
        runtime.block_on(async { reqwest::get(format!("{base}/stats")).await?.json().await })?;
    let (appends, syncs) = (
        stats["journal_appends"].as_u64().unwrap_or(0),
        stats["journal_syncs"].as_u64().unwrap_or(0),
    );
    let posts_per_sync = appends as f64 / syncs.max(1) as f64;
    crate::say!(
        "write-back journal: {appends} posts in {syncs} fdatasync calls ({posts_per_sync:.1} per sync)"
    );
    drop(server);
    eprintln!("bench http: redis-benchmark beside it, {} connections", args.connections);
    let redis_benchmark = redis_anchor(args.connections)?;
    for r in &redis_benchmark {
        crate::say!(
            "{:<40}{:>10.0} req/s   p50 {:>7.3} ms   p99 {:>7.3} ms",
            format!("redis-benchmark {}", r.test),
            r.requests_per_s,
            r.p50_ms,
            r.p99_ms
        );
    }
    let feed = cases.iter().find(|c| c.name.starts_with("feed")).map(|c| c.requests_per_s);
    let lrange = redis_benchmark.iter().find(|r| r.test.starts_with("LRANGE_100"));
    let feed_over_lrange_100 = feed.zip(lrange).map(|(f, r)| f / r.requests_per_s);
    let version = String::from_utf8_lossy(&Command::new("wrk").arg("--version").output()?.stdout)
        .lines()
        .next()
        .unwrap_or("wrk")
        .to_string();
    let report = HttpBench {
        benchmark: "http",
        date: utc_now(),
        commit: git_commit(),
        machine: Machine::describe(),
        tool: version,
        users: args.nodes,
        hot: args.hot,
        connections: args.connections,
        duration_s: args.duration_s,
        friends_ttl_s: args.friends_ttl_s,
        server: format!(
            "kith serve --feed push --cache aside, then --cache write-back for the last case ({} backend), 2 tokio workers",
            if args.redis.is_some() { "redis" } else { "in-process" }
        ),
        cases,
        redis_benchmark,
        feed_over_lrange_100,
        journal_posts_per_sync: posts_per_sync,
        note: "server and wrk share the machine's cores; loopback HTTP/1.1 keep-alive; every hot user's first feed page was read once before the cases (bodies cached)",
    };
    let out = args.out.unwrap_or_else(|| {
        PathBuf::from(format!("bench/results/http-{}.json", &report.date[..10]))
    });
    write_json(&out, &report)?;
    crate::say!("wrote {}", out.display());
    Ok(())
}

/// `redis-benchmark` (LRANGE_100 and GET, `connections` clients) against a private Redis on
/// loopback, without persistence.
fn redis_anchor(connections: usize) -> Result<Vec<RedisAnchor>> {
    let redis = kith_feed::testing::RedisServer::try_start_with(&[])
        .context("starting a private redis-server for the anchor (apt-get install redis-server)")?;
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &redis.port().to_string()])
        .args(["-c", &connections.to_string(), "-n", "200000", "-t", "lrange_100,get", "--csv"])
        .output()
        .context("running redis-benchmark (apt-get install redis-tools)")?;
    ensure!(
        out.status.success(),
        "redis-benchmark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut anchors = Vec::new();
    // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",
    // "p99_latency_ms","max_latency_ms"
    for line in text.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').map(|f| f.trim_matches('"')).collect();
        let num = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
        if let (Some(test), Some(rps), Some(p50), Some(p99)) =
            (fields.first(), num(1), num(4), num(6))
            && !test.starts_with("LPUSH")
        {
            anchors.push(RedisAnchor {
                test: (*test).to_string(),
                requests_per_s: rps,
                p50_ms: p50,
                p99_ms: p99,
            });
        }
    }
    ensure!(!anchors.is_empty(), "no results in redis-benchmark's output: {text}");
    Ok(anchors)
}

/// One wrk run: `request` is the body of wrk's `request` function (with `ids` in scope).
#[allow(clippy::too_many_arguments)]
fn wrk_case(
    args: &HttpBenchArgs,
    tmp: &std::path::Path,
    runtime: &tokio::runtime::Runtime,
    base: &str,
    list: &str,
    name: &str,
    path: &str,
    request: &str,
    kind: Option<&str>,
) -> Result<HttpCase> {
    let script = tmp.join("req.lua");
    std::fs::write(
        &script,
        format!(
            "local ids = {{{list}}}\nmath.randomseed({})\nrequest = function()\n  {request}\nend\n",
            args.seed
        ),
    )?;
    let stats = || -> Result<serde_json::Value> {
        Ok(runtime.block_on(async { reqwest::get(format!("{base}/stats")).await?.json().await })?)
    };
    let before = stats()?;
    eprintln!("bench http: {name}, {} s", args.duration_s);
    let out = Command::new("wrk")
        .args(["-t", &args.wrk_threads.to_string(), "-c", &args.connections.to_string()])
        .args(["-d", &format!("{}s", args.duration_s), "--latency", "-s"])
        .arg(&script)
        .arg(base)
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    ensure!(out.status.success(), "wrk failed: {}", String::from_utf8_lossy(&out.stderr));
    let after = stats()?;
    let rps = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .with_context(|| format!("no Requests/sec in wrk output: {text}"))?;
    let requests = text
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let non_2xx = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Non-2xx or 3xx responses:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let hit_rate = kind.and_then(|k| {
        let d = |f: &str| {
            after["hit_rate"][k][f].as_u64().unwrap_or(0)
                - before["hit_rate"][k][f].as_u64().unwrap_or(0)
        };
        let (h, m) = (d("hits"), d("misses"));
        (h + m > 0).then(|| h as f64 / (h + m) as f64)
    });
    let case = HttpCase {
        name: name.into(),
        path: path.into(),
        requests_per_s: rps,
        p50_ms: wrk_ms(&text, "50%").unwrap_or(f64::NAN),
        p99_ms: wrk_ms(&text, "99%").unwrap_or(f64::NAN),
        requests,
        non_2xx,
        hit_rate,
    };
    crate::say!(
        "{:<40}{:>10.0} req/s   p50 {:>7.3} ms   p99 {:>7.3} ms   non-2xx {}   hit rate {}",
        case.name,
        case.requests_per_s,
        case.p50_ms,
        case.p99_ms,
        case.non_2xx,
        case.hit_rate.map_or("-".into(), |h| format!("{:.1} %", 100.0 * h))
    );
    Ok(case)
}

async fn preload(base: &str, uids: &[u64], posts: usize, seed: u64) -> Result<()> {
    let http = reqwest::Client::new();
    let mut rng = Pcg64::seed_from_u64(seed);
    let start = Instant::now();
    let bar = indicatif::ProgressBar::new((uids.len() + posts) as u64);
    let mut pending = Vec::new();
    for &u in uids {
        let mut t: Vec<u64> = (0..20).map(|_| uids[rng.random_range(0..uids.len())]).collect();
        t.sort_unstable();
        t.dedup();
        t.retain(|&x| x != u);
        let req =
            http.post(format!("{base}/users/{u}/follow")).json(&serde_json::json!({"targets": t}));
        pending.push(tokio::spawn(req.send()));
        if pending.len() == 32 {
            for p in pending.drain(..) {
                let r = p.await??;
                ensure!(r.status().is_success(), "preload follow: {}", r.status());
                bar.inc(1);
            }
        }
    }
    for i in 0..posts {
        let a = uids[rng.random_range(0..uids.len())];
        let req = http
            .post(format!("{base}/posts"))
            .json(&serde_json::json!({"author": a, "content": format!("preloaded post {i}")}));
        pending.push(tokio::spawn(req.send()));
        if pending.len() == 64 {
            for p in pending.drain(..) {
                let r = p.await??;
                ensure!(r.status().is_success(), "preload post: {}", r.status());
                bar.inc(1);
            }
        }
    }
    for p in pending {
        p.await??;
    }
    bar.finish_and_clear();
    // Let the fan-out finish before measuring.
    for _ in 0..6000 {
        let s: serde_json::Value = http.get(format!("{base}/stats")).send().await?.json().await?;
        if s["fanout_queue_depth"] == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The feed case measures reads with bodies cached: every hot user's first page is read
    // once, so the posts' first (compulsory) misses, each a store read, are not in it.
    let mut pending = Vec::new();
    for &u in uids {
        pending.push(tokio::spawn(http.get(format!("{base}/users/{u}/feed?limit=50")).send()));
        if pending.len() == 64 {
            for p in pending.drain(..) {
                let r = p.await??;
                ensure!(r.status().is_success(), "warming feeds: {}", r.status());
            }
        }
    }
    for p in pending {
        p.await??;
    }
    eprintln!("bench http: preloaded and warmed in {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}
