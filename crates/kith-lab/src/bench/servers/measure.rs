//! Measuring one case of `kith bench servers`: the caches warmed, then each load alone from
//! a closed loop of clients, with the CPU the servers and the engines under them used over
//! the measured window (read from `/proc`).

use std::collections::HashSet;
use std::sync::Arc;

use anyhow::{Result, ensure};
use kith_workload::{RunConfig, RunReport};
use serde::Serialize;

use super::load::{source, warm};

/// One operation on one case.
#[derive(Debug, Serialize)]
pub(super) struct Row {
    /// `this` (the build running the benchmark) or `baseline` (`--baseline`).
    pub build: &'static str,
    /// `embedded`, `cluster`, or `cluster-near` (friend lists copied in each server).
    pub mode: &'static str,
    pub servers: usize,
    pub op: &'static str,
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
}

/// What one case runs on.
pub(super) struct Case<'a> {
    pub build: &'static str,
    pub mode: &'static str,
    pub urls: &'a [String],
    /// The servers' process ids, and the engines' under them.
    pub servers: &'a [u32],
    pub engines: &'a [u32],
}

/// What the loads read and switch.
pub(super) struct Subjects<'a> {
    pub users: &'a [u64],
    pub posts: &'a [u64],
    /// Friend pairs (lower id first), which switches leave alone.
    pub friends: &'a HashSet<(u64, u64)>,
    /// Picks the switches' pairs, so each case switches pairs of its own.
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

/// Warms the caches, then measures each load alone (as `run` says, on the case's servers) with the servers' and engines' CPU. A
/// read must never fail; a switch may meet a refusal now and then (a pair switched on by
/// another case), never another error.
pub(super) fn measure(
    runtime: &tokio::runtime::Runtime,
    run: &RunConfig,
    case: &Case<'_>,
    loads: &[&'static str],
    subjects: &Subjects<'_>,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let Case { build, mode, urls, servers, engines } = *case;
    eprintln!("bench servers: {build}, {mode}, {} server(s): warming the caches", urls.len());
    runtime.block_on(warm(urls, subjects.users, subjects.posts))?;
    for &load in loads {
        let source = source(load, subjects.users, subjects.posts, subjects.friends, subjects.salt);
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
        let r: RunReport = runtime.block_on(kith_workload::run(Arc::from(source), &config))?;
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
            };
            eprintln!(
                "bench servers: {build}, {mode} x{}: {op}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, \
                 {:.0} µs CPU per request",
                urls.len(),
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
    }
    Ok(())
}
