//! `kith experiment twibo` (feed strategies and caches against client counts, Twibo's
//! Tables 3 and 4, with peaks beside Twibo's) and `twibo-cache` (cache size against
//! throughput, hit rate and store reads per feed read, Twibo's Table 5).

use anyhow::{Context, Result, ensure};
use kith_feed::testing::RedisServer;
use serde::Serialize;
use serde_json::json;

use super::service::{Prepared, ServiceArgs, copy_store, drive, op, preload, prepare, stats};
use crate::machine::{Machine, git_commit, utc_now};
use crate::plot::{LineChart, Series, line_chart};
use crate::processes::{ChildProcess, start_server};
use crate::rig::Rig;

/// Twibo's peak throughputs (requests/s; 3 servers × 6 processes), their Tables 3 and 4.
const TWIBO_PEAK: [(&str, f64); 4] =
    [("pull", 333.0), ("push", 964.0), ("push+aside", 2565.0), ("push+write-back", 3206.0)];
const TWIBO_PROCESSES: f64 = 18.0;

/// Twibo's Tables 3 and 4 (3 servers × 6 processes; 300 s per load test): configuration,
/// clients, requests/s, and the 95th percentile of retrieving and of creating a tweet in ms.
/// The report has no pull run at 512 clients.
#[rustfmt::skip]
const TWIBO_TABLES_3_4: [(&str, usize, f64, f64, f64); 27] = [
    ("pull", 8, 115.85, 76.0, 33.0), ("pull", 16, 220.80, 85.0, 35.0),
    ("pull", 32, 333.15, 110.0, 37.0), ("pull", 64, 319.01, 408.0, 66.0),
    ("pull", 128, 197.24, 1827.0, 55.0), ("pull", 256, 86.13, 6458.0, 97.0),
    ("push", 8, 206.47, 36.0, 71.0), ("push", 16, 404.34, 39.0, 77.0),
    ("push", 32, 754.61, 51.0, 97.0), ("push", 64, 964.01, 153.0, 241.0),
    ("push", 128, 803.30, 386.0, 860.0), ("push", 256, 671.73, 899.0, 942.0),
    ("push", 512, 504.81, 2413.0, 3988.0),
    ("push+aside", 8, 206.72, 36.0, 70.0), ("push+aside", 16, 409.87, 35.0, 71.0),
    ("push+aside", 32, 786.86, 37.0, 75.0), ("push+aside", 64, 1333.45, 44.0, 85.0),
    ("push+aside", 128, 2564.51, 53.0, 151.0), ("push+aside", 256, 2264.65, 273.0, 684.0),
    ("push+aside", 512, 1811.87, 790.0, 1040.0),
    ("push+write-back", 8, 211.75, 38.0, 45.0), ("push+write-back", 16, 444.14, 35.0, 41.0),
    ("push+write-back", 32, 890.43, 35.0, 41.0), ("push+write-back", 64, 1732.05, 36.0, 43.0),
    ("push+write-back", 128, 3205.73, 38.0, 52.0), ("push+write-back", 256, 2896.42, 60.0, 113.0),
    ("push+write-back", 512, 2975.98, 338.0, 386.0),
];

/// Twibo's Table 5 (64 clients): configuration, cache MB, requests/s, database requests per
/// retrieve.
const TWIBO_TABLE_5: [(&str, u64, f64, f64); 10] = [
    ("push+aside", 2, 997.89, 31.74),
    ("push+aside", 4, 1068.60, 25.21),
    ("push+aside", 8, 1305.18, 15.70),
    ("push+aside", 16, 1578.08, 1.64),
    ("push+aside", 32, 1582.04, 0.49),
    ("push+write-back", 2, 1145.78, 26.50),
    ("push+write-back", 4, 1306.39, 16.66),
    ("push+write-back", 8, 1577.31, 9.02),
    ("push+write-back", 16, 1656.14, 0.88),
    ("push+write-back", 32, 1711.29, 0.42),
];

#[derive(Debug, Serialize)]
struct TwiboRow {
    backend: String,
    config: String,
    /// Server processes the clients spread over.
    servers: usize,
    clients: usize,
    throughput: f64,
    retrieve_per_s: f64,
    publish_per_s: f64,
    retrieve_p50_ms: f64,
    retrieve_p95_ms: f64,
    retrieve_p99_ms: f64,
    publish_p95_ms: f64,
    publish_p99_ms: f64,
    errors: u64,
    /// The servers' own feed-read time (Server-Timing `total`), p50 and p95.
    retrieve_server_p50_ms: f64,
    retrieve_server_p95_ms: f64,
    /// Of it, the time waiting on the storage engine, p50.
    retrieve_store_p50_ms: f64,
}

const TWIBO_CONFIGS: [(&str, &[&str]); 5] = [
    ("pull", &["--feed", "pull", "--cache", "none"]),
    ("push", &["--feed", "push", "--cache", "none"]),
    ("push+aside", &["--feed", "push", "--cache", "aside"]),
    ("push+write-back", &["--feed", "push", "--cache", "write-back"]),
    ("hybrid+write-back", &["--feed", "hybrid", "--cache", "write-back"]),
];

/// The servers of one run, and what they run on; stopped (and a cluster keyspace dropped)
/// when dropped.
pub(super) struct Deployment<'a> {
    servers: Vec<Option<ChildProcess>>,
    pub(super) urls: Vec<String>,
    _redis: Option<RedisServer>,
    keyspace: Option<(&'a Rig, String)>,
}

impl Drop for Deployment<'_> {
    fn drop(&mut self) {
        self.servers.clear();
        if let Some((rig, keyspace)) = &self.keyspace {
            rig.drop_keyspace(keyspace);
        }
    }
}

/// Starts `n` servers with `server_args` on `backend`: a copy of the embedded store (with
/// its own Redis for `redis`), or a fresh keyspace on the cluster (`run` names it).
pub(super) fn deploy<'a>(
    backend: &str,
    p: &Prepared,
    rig: Option<&'a Rig>,
    n: usize,
    run: usize,
    mut server_args: Vec<String>,
) -> Result<Deployment<'a>> {
    if backend == "cluster" {
        let rig = rig.context("the cluster backend without a cluster")?;
        let keyspace = format!("twibo_{}_{run}", std::process::id());
        eprintln!("twibo: loading {} users into {keyspace}", p.friends.num_nodes());
        rig.load(&p.friends, &keyspace)?;
        let prefix = format!("tw{}r{run}", std::process::id());
        let mut d = Deployment {
            servers: Vec::new(),
            urls: Vec::new(),
            _redis: None,
            keyspace: Some((rig, keyspace.clone())),
        };
        (d.servers, d.urls) = rig.servers(&keyspace, n, &prefix, &server_args, None)?;
        return Ok(d);
    }
    ensure!(n == 1, "{backend}: one server per store (several need the cluster backend)");
    let copy = p.scratch.path().join("run");
    copy_store(&p.store, &copy)?;
    let redis = if backend == "redis" {
        let r = RedisServer::try_start_with(&[])?;
        server_args.extend(["--redis".into(), r.url().to_string()]);
        Some(r)
    } else {
        None
    };
    let (server, base) = start_server(&copy, &server_args)?;
    Ok(Deployment { servers: vec![Some(server)], urls: vec![base], _redis: redis, keyspace: None })
}

/// A figure of the servers' own timings of an operation, NaN without them.
fn server(
    op: Option<&kith_workload::OpReport>,
    f: impl Fn(&kith_workload::ServerTimes) -> f64,
) -> f64 {
    op.and_then(|o| o.server.as_ref()).map_or(f64::NAN, f)
}

pub(super) fn twibo(args: ServiceArgs) -> Result<()> {
    let p = prepare(&args, true)?;
    let backends = args.backends(&["in-process", "redis"])?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let rig = match backends.iter().any(|b| b == "cluster") {
        true => Some(args.rig(p.scratch.path())?),
        false => None,
    };
    let mut rows = Vec::new();
    let mut reports = Vec::new();
    let mut run = 0;
    for backend in &backends {
        let counts = match (backend.as_str(), args.servers.is_empty()) {
            ("cluster", false) => args.servers.clone(),
            _ => vec![1],
        };
        for (name, flags) in TWIBO_CONFIGS {
            for &n in &counts {
                run += 1;
                let mut server_args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
                server_args
                    .extend(["--celebrity-threshold".into(), args.celebrity_threshold.to_string()]);
                let d = deploy(backend, &p, rig.as_ref(), n, run, server_args)?;
                eprintln!("twibo: {backend} {name} x{n}: preloading");
                runtime.block_on(preload(&d.urls[0], &p.follows, &p.preload))?;
                for &clients in &args.clients {
                    eprintln!("twibo: {backend} {name} x{n}: {clients} clients");
                    let r = drive(&runtime, p.rest.clone(), &d.urls, clients, &args)?;
                    let (ret, publ) = (op(&r, "retrieve"), op(&r, "publish"));
                    rows.push(TwiboRow {
                        backend: backend.clone(),
                        config: name.into(),
                        servers: n,
                        clients,
                        throughput: r.total.throughput,
                        retrieve_per_s: ret.map_or(0.0, |o| o.throughput),
                        publish_per_s: publ.map_or(0.0, |o| o.throughput),
                        retrieve_p50_ms: ret.map_or(f64::NAN, |o| o.p50_ms),
                        retrieve_p95_ms: ret.map_or(f64::NAN, |o| o.p95_ms),
                        retrieve_p99_ms: ret.map_or(f64::NAN, |o| o.p99_ms),
                        publish_p95_ms: publ.map_or(f64::NAN, |o| o.p95_ms),
                        publish_p99_ms: publ.map_or(f64::NAN, |o| o.p99_ms),
                        errors: r.total.errors,
                        retrieve_server_p50_ms: server(ret, |t| t.total_p50_ms),
                        retrieve_server_p95_ms: server(ret, |t| t.total_p95_ms),
                        retrieve_store_p50_ms: server(ret, |t| t.store_p50_ms),
                    });
                    let last = rows.last().expect("just pushed");
                    crate::say!(
                        "{backend:<11}{name:<19}x{n:<3}{clients:>5} clients {:>9.0} req/s  feed p50 {:>7.2} ms p95 {:>7.2} ms  errors {}",
                        last.throughput,
                        last.retrieve_p50_ms,
                        last.retrieve_p95_ms,
                        last.errors
                    );
                    reports
                        .push(json!({"backend": backend, "config": name, "servers": n, "run": r}));
                }
                drop(d);
            }
        }
    }
    drop(rig);
    // CSV, peak table beside Twibo's, charts.
    let mut csv = String::from(
        "backend,config,servers,clients,throughput,retrieve_per_s,publish_per_s,retrieve_p50_ms,retrieve_p95_ms,retrieve_p99_ms,publish_p95_ms,publish_p99_ms,errors,retrieve_server_p50_ms,retrieve_server_p95_ms,retrieve_store_p50_ms,twibo_qps,twibo_retrieve_p95_ms,twibo_publish_p95_ms\n",
    );
    for r in &rows {
        let twibo = TWIBO_TABLES_3_4
            .iter()
            .find(|(c, n, ..)| *c == r.config && *n == r.clients)
            .map_or([String::new(), String::new(), String::new()], |(_, _, q, ret, publ)| {
                [format!("{q:.2}"), format!("{ret:.0}"), format!("{publ:.0}")]
            });
        csv.push_str(&format!(
            "{},{},{},{},{:.1},{:.1},{:.1},{:.3},{:.3},{:.3},{:.3},{:.3},{},{:.3},{:.3},{:.3},{}\n",
            r.backend,
            r.config,
            r.servers,
            r.clients,
            r.throughput,
            r.retrieve_per_s,
            r.publish_per_s,
            r.retrieve_p50_ms,
            r.retrieve_p95_ms,
            r.retrieve_p99_ms,
            r.publish_p95_ms,
            r.publish_p99_ms,
            r.errors,
            r.retrieve_server_p50_ms,
            r.retrieve_server_p95_ms,
            r.retrieve_store_p50_ms,
            twibo.join(",")
        ));
    }
    std::fs::write(args.out.join("twibo.csv"), csv)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let mut table = String::from(
        "backend,servers,config,peak_req_per_s,peak_clients,per_core,twibo_peak,twibo_per_process,per_core_ratio,feed_p95_ms_at_peak,fewest_clients,req_per_s_at_fewest,feed_p95_ms_at_fewest\n",
    );
    crate::say!(
        "\npeak throughput beside Twibo's (Twibo: 3 servers x 6 processes; here {cores} cores shared with the driver)"
    );
    // (backend, servers) in the order run.
    let mut groups: Vec<(String, usize)> = Vec::new();
    for r in &rows {
        if !groups.iter().any(|(b, n)| *b == r.backend && *n == r.servers) {
            groups.push((r.backend.clone(), r.servers));
        }
    }
    // Per configuration on the cluster: (servers, peak throughput).
    let mut by_servers: Vec<Series> = Vec::new();
    for (backend, n) in &groups {
        let in_group = |r: &&TwiboRow| &r.backend == backend && r.servers == *n;
        for (name, _) in TWIBO_CONFIGS {
            let mine: Vec<&TwiboRow> =
                rows.iter().filter(in_group).filter(|r| r.config == name).collect();
            let Some(peak) = mine.iter().max_by(|a, b| a.throughput.total_cmp(&b.throughput))
            else {
                continue;
            };
            if backend == "cluster" {
                match by_servers.iter_mut().find(|s| s.name == name) {
                    Some(s) => s.points.push((*n as f64, peak.throughput)),
                    None => by_servers.push(Series {
                        name: name.to_string(),
                        points: vec![(*n as f64, peak.throughput)],
                    }),
                }
            }
            // Below saturation: the fewest clients swept (the peak itself is saturation).
            let lightest = mine.iter().min_by_key(|r| r.clients).expect("non-empty");
            let twibo = TWIBO_PEAK.iter().find(|(t, _)| *t == name).map(|&(_, t)| t);
            let per_core = peak.throughput / cores;
            let ratio = twibo.map(|t| per_core / (t / TWIBO_PROCESSES));
            table.push_str(&format!(
                "{backend},{n},{name},{:.0},{},{:.0},{},{},{},{:.2},{},{:.0},{:.2}\n",
                peak.throughput,
                peak.clients,
                per_core,
                twibo.map_or(String::new(), |t| format!("{t:.0}")),
                twibo.map_or(String::new(), |t| format!("{:.1}", t / TWIBO_PROCESSES)),
                ratio.map_or(String::new(), |x| format!("{x:.1}")),
                peak.retrieve_p95_ms,
                lightest.clients,
                lightest.throughput,
                lightest.retrieve_p95_ms
            ));
            crate::say!(
                "{backend:<11}x{n:<3}{name:<19} peak {:>8.0} req/s at {:>3} clients, {:>7.0} per core; feed p95 {:.2} ms at {} clients; Twibo {}{}",
                peak.throughput,
                peak.clients,
                per_core,
                lightest.retrieve_p95_ms,
                lightest.clients,
                twibo.map_or("-".into(), |t| format!(
                    "{t:.0} ({:.0} per process)",
                    t / TWIBO_PROCESSES
                )),
                ratio.map_or(String::new(), |x| format!(", ratio {x:.0}x"))
            );
        }
        let series: Vec<Series> = TWIBO_CONFIGS
            .iter()
            .map(|(name, _)| Series {
                name: name.to_string(),
                points: rows
                    .iter()
                    .filter(in_group)
                    .filter(|r| r.config == *name)
                    .map(|r| (r.clients as f64, r.throughput))
                    .collect(),
            })
            .collect();
        let (title, file) = match backend.as_str() {
            "cluster" => (
                format!("Twibo's workload on kith: {n} server(s) on Cassandra + Redis Cluster"),
                format!("twibo-cluster-{n}.png"),
            ),
            _ => (format!("Twibo's workload on kith ({backend})"), format!("twibo-{backend}.png")),
        };
        line_chart(
            &args.out.join(file),
            &LineChart { title: &title, x_label: "clients", y_label: "requests/s", log2_x: true },
            &series,
        )?;
    }
    if by_servers.iter().any(|s| s.points.len() > 1) {
        line_chart(
            &args.out.join("twibo-servers.png"),
            &LineChart {
                title: "Twibo's workload on the cluster: peak throughput against server processes",
                x_label: "kith servers",
                y_label: "peak requests/s",
                log2_x: true,
            },
            &by_servers,
        )?;
    }
    std::fs::write(args.out.join("twibo-peaks.csv"), table)?;
    let doc = json!({"experiment": "twibo", "date": utc_now(), "commit": git_commit(), "machine": Machine::describe(),
        "graph": args.graph.display().to_string(), "preload": p.preload.len(), "rows": rows, "runs": reports});
    std::fs::write(args.out.join("twibo.json"), serde_json::to_string_pretty(&doc)? + "\n")?;
    crate::say!(
        "wrote twibo.csv, twibo-peaks.csv, twibo.json and charts to {}",
        args.out.display()
    );
    Ok(())
}

pub(super) fn twibo_cache(args: ServiceArgs) -> Result<()> {
    let p = prepare(&args, true)?;
    let backends = if args.backends.is_empty() {
        vec!["in-process".to_string()]
    } else {
        args.backends.clone()
    };
    let clients = args.cache_clients;
    ensure!(clients > 0, "--cache-clients must be at least 1");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let mut csv = String::from(
        "backend,config,cache_mb,clients,throughput,feed_p95_ms,feed_p99_ms,post_hit_rate,timeline_hit_rate,store_reads_per_feed_read,twibo_qps,twibo_db_requests_per_retrieve\n",
    );
    // Per backend and configuration: (cache MB, throughput) and (cache MB, post hit rate %).
    type Curves = (String, Vec<(f64, f64)>, Vec<(f64, f64)>);
    let mut points: Vec<Curves> = Vec::new();
    for backend in &backends {
        for (config, cache) in [("push+aside", "aside"), ("push+write-back", "write-back")] {
            let (mut tput, mut hits) = (Vec::new(), Vec::new());
            for &mb in &args.cache_mb {
                let copy = p.scratch.path().join("run");
                copy_store(&p.store, &copy)?;
                let mut server_args: Vec<String> =
                    ["--feed", "push", "--cache", cache].iter().map(|s| s.to_string()).collect();
                let redis = if backend == "redis" {
                    let memory = format!("{mb}mb");
                    let extra = ["--maxmemory", &memory, "--maxmemory-policy", "allkeys-lru"];
                    let r = RedisServer::try_start_with(&extra)?;
                    server_args.extend(["--redis".into(), r.url().to_string()]);
                    Some(r)
                } else {
                    ensure!(
                        backend == "in-process",
                        "unknown backend {backend:?}: in-process or redis"
                    );
                    server_args.extend(["--cache-bytes".into(), (mb << 20).to_string()]);
                    None
                };
                let (server, base) = start_server(&copy, &server_args)?;
                eprintln!("twibo-cache: {backend} {config} {mb} MB: preloading");
                runtime.block_on(preload(&base, &p.follows, &p.preload))?;
                let before = runtime.block_on(stats(&base))?;
                let r =
                    drive(&runtime, p.rest.clone(), std::slice::from_ref(&base), clients, &args)?;
                let after = runtime.block_on(stats(&base))?;
                let delta = |kind: &str, f: &str| {
                    after["hit_rate"][kind][f]
                        .as_u64()
                        .unwrap_or(0)
                        .saturating_sub(before["hit_rate"][kind][f].as_u64().unwrap_or(0))
                };
                let rate = |kind: &str| {
                    let (h, m) = (delta(kind, "hits"), delta(kind, "misses"));
                    if h + m == 0 { f64::NAN } else { h as f64 / (h + m) as f64 }
                };
                let feed = op(&r, "retrieve");
                let reads = feed.map_or(0, |o| o.ops).max(1);
                // Store requests per feed read: post bodies missed in the cache (each a read
                // of the feed database), plus timeline builds (each a pull from it).
                let store_reads =
                    (delta("post", "misses") + delta("timeline", "misses")) as f64 / reads as f64;
                let twibo = TWIBO_TABLE_5
                    .iter()
                    .find(|(c, m, _, _)| *c == config && *m == mb)
                    .map_or((String::new(), String::new()), |(_, _, q, d)| {
                        (format!("{q:.2}"), format!("{d:.2}"))
                    });
                csv.push_str(&format!(
                    "{backend},{config},{mb},{clients},{:.1},{:.3},{:.3},{:.4},{:.4},{:.3},{},{}\n",
                    r.total.throughput,
                    feed.map_or(f64::NAN, |o| o.p95_ms),
                    feed.map_or(f64::NAN, |o| o.p99_ms),
                    rate("post"),
                    rate("timeline"),
                    store_reads,
                    twibo.0,
                    twibo.1
                ));
                crate::say!(
                    "{backend:<11}{config:<16}{mb:>4} MB {:>9.0} req/s  post hit rate {:>6.1} %  timeline hit rate {:>6.1} %  store reads per feed read {:.2}",
                    r.total.throughput,
                    100.0 * rate("post"),
                    100.0 * rate("timeline"),
                    store_reads
                );
                tput.push((mb as f64, r.total.throughput));
                hits.push((mb as f64, 100.0 * rate("post")));
                drop(server);
                drop(redis);
            }
            points.push((format!("{backend} {config}"), tput, hits));
        }
    }
    std::fs::write(args.out.join("twibo-cache.csv"), csv)?;
    let series: Vec<Series> =
        points.iter().map(|(b, t, _)| Series { name: b.clone(), points: t.clone() }).collect();
    line_chart(
        &args.out.join("twibo-cache-throughput.png"),
        &LineChart {
            title: "Twibo's workload: cache size vs throughput (push, 64 clients)",
            x_label: "cache (MB)",
            y_label: "requests/s",
            log2_x: true,
        },
        &series,
    )?;
    let series: Vec<Series> =
        points.iter().map(|(b, _, h)| Series { name: b.clone(), points: h.clone() }).collect();
    line_chart(
        &args.out.join("twibo-cache-hit-rate.png"),
        &LineChart {
            title: "Twibo's workload: cache size vs post hit rate",
            x_label: "cache (MB)",
            y_label: "hit rate (%)",
            log2_x: true,
        },
        &series,
    )?;
    crate::say!("wrote twibo-cache.csv and charts to {}", args.out.display());
    Ok(())
}
