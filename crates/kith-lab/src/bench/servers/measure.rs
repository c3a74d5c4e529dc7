//! Measuring the cases of `kith bench servers` side by side (one per build): the caches
//! warmed, then each load alone from a closed loop of clients, the builds taking turns load
//! by load and round by round, with the CPU the servers and the engines under them used over
//! the measured window (read from `/proc`).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use anyhow::{Result, ensure};
use kith_workload::{RunConfig, RunReport};
use serde::Serialize;

use super::load::{method_of, source, warm};
use super::parts;

/// One operation on one case: one round's, or the median over the rounds.
#[derive(Clone, Debug, Serialize)]
pub(super) struct Row {
    /// `this` (the build running the benchmark) or `baseline` (`--baseline`).
    pub build: &'static str,
    /// `embedded`, `cluster`, or `cluster-near` (friend lists copied in each server).
    pub mode: &'static str,
    pub servers: usize,
    pub op: &'static str,
    /// Which of the `--rounds` this is (from 0); none for the median over them.
    pub round: Option<usize>,
    pub requests: u64,
    /// Refusals a switch may meet (a pair another case switched on already), by status.
    pub errors: u64,
    pub requests_per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// CPU-seconds of the kith servers, and of the engines under them, over the window.
    pub server_cpu_s: f64,
    pub engine_cpu_s: f64,
    /// (server + engine) CPU per request, microseconds.
    pub cpu_us_per_request: f64,
    /// The servers' share alone.
    pub server_cpu_us_per_request: f64,
    /// `cpu_us_per_request` over the embedded server's for the same operation and build.
    pub cpu_ratio_vs_embedded: f64,
    /// Requests each server answered.
    pub answered_by: Vec<u64>,
    /// Milliseconds per request the servers spent waiting on the store and the cache, and
    /// of the store's, on each step that buys a guarantee (`parts.rs`); empty for a build
    /// whose servers do not count them.
    pub parts_ms: BTreeMap<String, f64>,
}

/// What one case runs on.
pub(super) struct Case<'a> {
    pub build: &'static str,
    pub mode: &'static str,
    pub urls: &'a [String],
    /// The servers' process ids, and the engines' under them.
    pub servers: &'a [u32],
    pub engines: &'a [u32],
    /// The posts stored on this case's store.
    pub posts: &'a [u64],
}

/// What the loads read and switch.
pub(super) struct Subjects<'a> {
    pub users: &'a [u64],
    /// Friend pairs (lower id first), which switches leave alone.
    pub friends: &'a HashSet<(u64, u64)>,
    /// Picks the switches' pairs, so each server count and round switches pairs of its own
    /// (the same on every build's store).
    pub salt: u64,
}

/// CPU-seconds a process has used (user + system), from `/proc/<pid>/stat`.
fn cpu_s(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0.0 };
    // The fields after the command name (which may hold spaces), from field 3.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else { return 0.0 };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15: 11 and 12 here.
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (ticks(11) + ticks(12)) / hz
}

fn total_cpu(pids: &[u32]) -> f64 {
    pids.iter().map(|&p| cpu_s(p)).sum()
}

/// Warms every case's caches, then measures each load alone `rounds` times on each case
/// (one case per build, on a store of its own), as `run` says, with the servers' and
/// engines' CPU. The cases take turns load by load, the first one first in one round and
/// last in the next, so that the machine's drift over the run (compactions, the JVMs'
/// compilation, another tenant) falls on every build alike. A read must never fail; a
/// switch may meet a refusal now and then (a pair switched on by another case), never
/// another error.
pub(super) fn measure(
    runtime: &tokio::runtime::Runtime,
    run: &RunConfig,
    cases: &[Case<'_>],
    loads: &[&'static str],
    subjects: &Subjects<'_>,
    rounds: usize,
    rows: &mut Vec<Row>,
) -> Result<()> {
    for c in cases {
        let (build, mode, n) = (c.build, c.mode, c.urls.len());
        eprintln!("bench servers: {build}, {mode}, {n} server(s): warming the caches");
        runtime.block_on(warm(c.urls, subjects.users, c.posts))?;
    }
    for round in 0..rounds {
        for (l, &load) in loads.iter().enumerate() {
            let mut turn: Vec<&Case<'_>> = cases.iter().collect();
            if (round + l) % 2 == 1 {
                turn.reverse();
            }
            let salt = subjects.salt ^ ((round as u64) << 40);
            for case in turn {
                measure_load(runtime, run, case, load, subjects, salt, round, rows)?;
            }
        }
    }
    Ok(())
}

/// One load on one case.
#[allow(clippy::too_many_arguments)]
fn measure_load(
    runtime: &tokio::runtime::Runtime,
    run: &RunConfig,
    case: &Case<'_>,
    load: &'static str,
    subjects: &Subjects<'_>,
    salt: u64,
    round: usize,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let Case { build, mode, urls, servers, engines, posts } = *case;
    let source = source(load, subjects.users, posts, subjects.friends, salt);
    let config = RunConfig { targets: urls.to_vec(), ..run.clone() };
    // CPU over the measured window only: sampled after the warm-up, and at its end.
    let sampler = {
        let (servers, engines) = (servers.to_vec(), engines.to_vec());
        let (warmup, seconds) = (config.warmup, config.duration);
        std::thread::spawn(move || {
            std::thread::sleep(warmup);
            let before = (total_cpu(&servers), total_cpu(&engines));
            std::thread::sleep(seconds);
            (total_cpu(&servers) - before.0, total_cpu(&engines) - before.1)
        })
    };
    let ops = source.ops();
    let before = runtime.block_on(parts::read(urls))?;
    let r: RunReport = runtime.block_on(kith_workload::run(Arc::from(source), &config))?;
    let after = runtime.block_on(parts::read(urls))?;
    let (server_cpu_s, engine_cpu_s) = sampler.join().expect("the CPU sampler");
    // A switch's CPU is shared by its two operations in proportion to their requests.
    let all = r.total.ops.max(1) as f64;
    for op in ops {
        let Some(o) = r.ops.iter().find(|o| o.op == op) else {
            eprintln!("bench servers: {build}, {mode}: {op}: none measured");
            continue;
        };
        let n = o.ops.max(1) as f64;
        let share = n / all;
        let row = Row {
            build,
            mode,
            servers: urls.len(),
            op,
            round: Some(round),
            requests: o.ops,
            errors: o.errors,
            requests_per_s: o.throughput,
            p50_ms: o.p50_ms,
            p99_ms: o.p99_ms,
            server_cpu_s: server_cpu_s * share,
            engine_cpu_s: engine_cpu_s * share,
            cpu_us_per_request: (server_cpu_s + engine_cpu_s) * share * 1e6 / n,
            server_cpu_us_per_request: server_cpu_s * share * 1e6 / n,
            cpu_ratio_vs_embedded: f64::NAN,
            answered_by: r.answered_by.clone(),
            parts_ms: parts::per_request(&before, &after, method_of(op)),
        };
        eprintln!(
            "bench servers: {build}, {mode} x{}, round {}: {op}: {:.0} req/s, p50 {:.2} ms, \
             p99 {:.2} ms, {:.0} µs CPU per request",
            urls.len(),
            round + 1,
            row.requests_per_s,
            row.p50_ms,
            row.p99_ms,
            row.cpu_us_per_request
        );
        let refusals: u64 = o
            .errors_by_status
            .iter()
            .filter(|(status, _)| {
                load.ends_with("switch") && (*status == "404" || *status == "409")
            })
            .map(|(_, n)| n)
            .sum();
        ensure!(
            o.errors == refusals && refusals * 100 <= o.ops.max(1),
            "{build}, {mode} x{}: {op}: {} requests failed: {:?}",
            urls.len(),
            o.errors,
            o.errors_by_status
        );
        rows.push(row);
    }
    Ok(())
}

/// Per build, mode, server count and operation, the median over the rounds of each figure
/// (of an even count, the mean of the middle two), in the order first measured.
pub(super) fn medians(runs: &[Row]) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    for r in runs {
        let same = |m: &Row| {
            m.build == r.build && m.mode == r.mode && m.servers == r.servers && m.op == r.op
        };
        if out.iter().any(same) {
            continue;
        }
        let all: Vec<&Row> = runs.iter().filter(|m| same(m)).collect();
        let mid = |f: &dyn Fn(&Row) -> f64| median(all.iter().map(|m| f(m)).collect());
        out.push(Row {
            round: None,
            requests: all.iter().map(|m| m.requests).sum(),
            errors: all.iter().map(|m| m.errors).sum(),
            requests_per_s: mid(&|m| m.requests_per_s),
            p50_ms: mid(&|m| m.p50_ms),
            p99_ms: mid(&|m| m.p99_ms),
            server_cpu_s: mid(&|m| m.server_cpu_s),
            engine_cpu_s: mid(&|m| m.engine_cpu_s),
            cpu_us_per_request: mid(&|m| m.cpu_us_per_request),
            server_cpu_us_per_request: mid(&|m| m.server_cpu_us_per_request),
            parts_ms: r
                .parts_ms
                .keys()
                .map(|k| {
                    let each = all.iter().filter_map(|m| m.parts_ms.get(k).copied()).collect();
                    (k.clone(), median(each))
                })
                .collect(),
            ..r.clone()
        });
    }
    out
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(build: &'static str, op: &'static str, round: usize, rps: f64, p99: f64) -> Row {
        Row {
            build,
            mode: "embedded",
            servers: 1,
            op,
            round: Some(round),
            requests: 10,
            errors: 0,
            requests_per_s: rps,
            p50_ms: 1.0,
            p99_ms: p99,
            server_cpu_s: 1.0,
            engine_cpu_s: 0.0,
            cpu_us_per_request: 100.0,
            server_cpu_us_per_request: 100.0,
            cpu_ratio_vs_embedded: f64::NAN,
            answered_by: vec![10],
            parts_ms: BTreeMap::from([("store".to_string(), p99)]),
        }
    }

    #[test]
    fn medians_take_each_figure_over_the_rounds_of_one_build_and_op() {
        let runs = [
            row("this", "feed", 0, 300.0, 9.0),
            row("baseline", "feed", 0, 50.0, 1.0),
            row("this", "feed", 1, 100.0, 2.0),
            row("this", "post", 0, 7.0, 7.0),
            row("this", "feed", 2, 200.0, 5.0),
            row("baseline", "feed", 1, 70.0, 3.0),
        ];
        let m = medians(&runs);
        let key: Vec<(&str, &str)> = m.iter().map(|r| (r.build, r.op)).collect();
        assert_eq!(key, [("this", "feed"), ("baseline", "feed"), ("this", "post")]);
        assert_eq!((m[0].requests_per_s, m[0].p99_ms, m[0].requests), (200.0, 5.0, 30));
        assert_eq!((m[1].requests_per_s, m[1].p99_ms), (60.0, 2.0), "even: the middle two");
        assert_eq!((m[2].requests_per_s, m[2].round), (7.0, None));
        assert_eq!(m[0].parts_ms["store"], 5.0, "each part's median too");
    }
}
