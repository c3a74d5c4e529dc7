//! `kith analyze ... --processes P | --hostfile F --process i` end to end: results equal to
//! the single-machine engine, the exchange report, and clusters that cannot form or lose a
//! process failing everywhere, clearly and quickly.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{fails, json, ok, p};

fn free_ports(count: usize) -> Vec<String> {
    let listeners: Vec<_> =
        (0..count).map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap()).collect();
    listeners.iter().map(|l| l.local_addr().unwrap().to_string()).collect()
}

#[test]
fn distributed_runs_equal_the_local_engine() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.kgraph");
    common::lfr_graph(&graph, "3000", "10", "3");
    for processes in ["2", "4"] {
        for algorithm in [
            &["pagerank"][..],
            &["pagerank", "--formulation", "lfgraph", "--tolerance", "1e-9", "--iterations", "200"],
            &["sssp", "--source", "7"],
            &["cc"],
            &["triangles"],
            &["mutual-friends", "--user", "5"],
        ] {
            let mut args = vec!["analyze"];
            args.extend_from_slice(algorithm);
            args.extend([p(&graph), "--processes", processes, "--verify", "--json"]);
            let r = json(&ok(&args));
            assert_eq!(r["verified"], true, "{algorithm:?} on {processes} processes: {r}");
            assert_eq!(r["processes"], processes.parse::<u64>().unwrap());
            assert_eq!(r["workers"], r["processes"]);
            assert!(r["steps"].as_u64().unwrap() >= 1);
            let x = &r["exchange"];
            assert!(x["messages"].as_u64().unwrap() > 0, "{r}");
            assert!(
                x["max_worker_bytes"].as_f64().unwrap() >= x["mean_worker_bytes"].as_f64().unwrap()
            );
            // The initial exchange, then one entry per step.
            assert_eq!(
                r["per_step"].as_array().unwrap().len() as u64,
                r["steps"].as_u64().unwrap() + 1
            );
        }
    }
    // Same totals as the local run; per-edge sends more than fetch-once, the same answer.
    let local = json(&ok(&["analyze", "triangles", p(&graph), "--json"]));
    let mut bytes = Vec::new();
    for mode in ["fetch-once", "per-edge"] {
        let r = json(&ok(&[
            "analyze",
            "triangles",
            p(&graph),
            "--processes",
            "2",
            "--threads",
            "2",
            "--exchange",
            mode,
            "--json",
        ]));
        assert_eq!(
            (r["triangles"].clone(), r["workers"].clone()),
            (local["triangles"].clone(), 4.into())
        );
        assert_eq!(r["exchange_mode"], mode);
        let model = &r["model"];
        let (measured, predicted) = (
            model["measured_values_per_vertex"].as_f64().unwrap(),
            model["predicted_values_per_vertex"].as_f64().unwrap(),
        );
        assert!((measured - predicted).abs() < 0.1 * predicted, "{model}");
        bytes.push(r["exchange"]["bytes"].as_u64().unwrap());
    }
    assert!(bytes[1] > 2 * bytes[0], "{bytes:?}");
    // The MapReduce jobs on workers: equal to the vertex programs, with every phase.
    for job in ["triangles", "cc", "mutual-friends"] {
        let r =
            json(&ok(&["analyze", "mr", job, p(&graph), "--processes", "2", "--verify", "--json"]));
        assert_eq!((r["verified"].clone(), r["workers"].clone()), (true.into(), 2.into()), "{r}");
        assert!(r["shuffled_bytes"].as_u64().unwrap() > 0, "{r}");
        for round in r["rounds"].as_array().unwrap() {
            for phase in ["map_s", "shuffle_s", "merge_s", "reduce_s"] {
                assert!(
                    round[phase]["max"].as_f64().unwrap() >= round[phase]["mean"].as_f64().unwrap()
                );
            }
        }
    }
    let e = fails(&["analyze", "kcore", p(&graph), "--processes", "2"]);
    assert!(e.contains("kcore has no distributed form"), "{e}");
}

#[test]
fn bad_clusters_fail_clearly_and_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.kgraph");
    common::lfr_graph(&graph, "500", "6", "4");
    let hosts = dir.path().join("hosts");
    let ports = free_ports(2);
    std::fs::write(&hosts, format!("{}\n{}\n", ports[0], ports[0])).unwrap();
    let e = fails(&["analyze", "cc", p(&graph), "--hostfile", p(&hosts), "--process", "0"]);
    assert!(e.contains("hosts:2:") && e.contains("listed twice"), "{e}");
    std::fs::write(&hosts, format!("{}\n{}\n", ports[0], ports[1])).unwrap();
    let e = fails(&["analyze", "cc", p(&graph), "--hostfile", p(&hosts), "--process", "2"]);
    assert!(e.contains("--process 2 is not a line of"), "{e}");
    let e = fails(&[
        "analyze",
        "cc",
        p(&graph),
        "--hostfile",
        p(&hosts),
        "--process",
        "0",
        "--processes",
        "3",
    ]);
    assert!(e.contains("--processes 3 but") && e.contains("lists 2 processes"), "{e}");
    // Process 0 never starts: process 1 cannot reach it, and says so.
    let start = Instant::now();
    let e = fails(&[
        "analyze",
        "cc",
        p(&graph),
        "--hostfile",
        p(&hosts),
        "--process",
        "1",
        "--connect-timeout",
        "2",
    ]);
    assert!(start.elapsed() < Duration::from_secs(15), "{:?}", start.elapsed());
    assert!(
        e.contains("did not form within 2 s") && e.contains(&format!("process 0 at {}", ports[0])),
        "{e}"
    );
    // Process 1 never starts: process 0 waits for it, and says so.
    let e = fails(&[
        "analyze",
        "cc",
        p(&graph),
        "--hostfile",
        p(&hosts),
        "--process",
        "0",
        "--connect-timeout",
        "2",
    ]);
    assert!(e.contains(&format!("process 1 at {} never connected", ports[1])), "{e}");
}

/// Starts `kith analyze cc` members with their own extra arguments; waits for all, at most
/// `limit`; returns each one's exit code and stderr.
fn members(graph: &str, runs: &[Vec<String>], limit: Duration) -> Vec<(Option<i32>, String)> {
    let start = Instant::now();
    let children: Vec<_> = runs
        .iter()
        .map(|extra| {
            Command::new(env!("CARGO_BIN_EXE_kith"))
                .args(["analyze", "cc", graph, "--connect-timeout", "3", "--wait-timeout", "20"])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let out: Vec<_> = children
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
        })
        .collect();
    assert!(start.elapsed() < limit, "{:?}: {out:?}", start.elapsed());
    out
}

#[test]
fn processes_that_disagree_fail_together() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.kgraph");
    common::lfr_graph(&graph, "500", "6", "6");
    let ports = free_ports(3);
    let (two, three) = (dir.path().join("two"), dir.path().join("three"));
    std::fs::write(&two, format!("{}\n{}\n", ports[0], ports[1])).unwrap();
    std::fs::write(&three, format!("{}\n{}\n{}\n", ports[0], ports[1], ports[2])).unwrap();
    let arg = |f: &std::path::Path, i: &str, extra: &[&str]| {
        let mut v = vec!["--hostfile".to_string(), p(f).to_string(), "--process".into(), i.into()];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    // Different process counts: process 1 waits for a process 2 that never comes, gives up,
    // and process 0 loses its connection.
    let out =
        members(p(&graph), &[arg(&two, "0", &[]), arg(&three, "1", &[])], Duration::from_secs(20));
    assert!(out.iter().all(|(code, _)| *code != Some(0)), "{out:?}");
    assert!(
        out[1].1.contains("did not form within 3 s") && out[1].1.contains("process 2 at"),
        "{out:?}"
    );
    assert!(out[0].1.contains("lost a connection to another process"), "{out:?}");
    // Different thread counts: timely cannot route; both stop at once and say why.
    let out = members(
        p(&graph),
        &[arg(&two, "0", &["--threads", "2"]), arg(&two, "1", &["--threads", "1"])],
        Duration::from_secs(20),
    );
    assert!(out.iter().all(|(code, _)| *code != Some(0)), "{out:?}");
    assert!(out.iter().any(|(_, e)| e.contains("different --threads")), "{out:?}");
    // Different programs: the start-up check names both.
    let out = members(
        p(&graph),
        &[arg(&two, "0", &[]), arg(&two, "1", &["--exchange", "per-edge"])],
        Duration::from_secs(20),
    );
    for (code, e) in &out {
        assert_eq!(*code, Some(1), "{out:?}");
        assert!(e.contains("the processes disagree") && e.contains("per-edge exchange"), "{out:?}");
    }
}

#[test]
fn a_killed_process_stops_the_run_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.kgraph");
    common::lfr_graph(&graph, "3000", "10", "5");
    let long = ["analyze", "pagerank", p(&graph), "--iterations", "100000000", "--json"];

    // Members of a hostfile cluster, no launcher: killing one ends the other.
    let hosts = dir.path().join("hosts");
    let ports = free_ports(2);
    std::fs::write(&hosts, format!("{}\n{}\n", ports[0], ports[1])).unwrap();
    let member = |i: &str| {
        Command::new(env!("CARGO_BIN_EXE_kith"))
            .args(long)
            .args(["--hostfile", p(&hosts), "--process", i])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (mut zero, mut one) = (member("0"), member("1"));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(zero.try_wait().unwrap().is_none(), "process 0 ended early");
    one.kill().unwrap();
    one.wait().unwrap();
    let killed = Instant::now();
    let status = zero.wait().unwrap();
    assert!(killed.elapsed() < Duration::from_secs(10), "{:?}", killed.elapsed());
    let mut stderr = String::new();
    std::io::Read::read_to_string(zero.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("kith: error: process 0 of 2: lost a connection to another process"),
        "{stderr}"
    );

    // Under the launcher: it names the killed process and stops the rest.
    let mut launcher = Command::new(env!("CARGO_BIN_EXE_kith"))
        .args(long)
        .args(["--processes", "3"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(launcher.stderr.take().unwrap()).lines();
    let mut pids = Vec::new();
    while pids.len() < 3 {
        let line = lines.next().unwrap().unwrap();
        let pid = line.split("pid ").nth(1).unwrap().split_whitespace().next().unwrap().to_string();
        pids.push(pid);
    }
    std::thread::sleep(Duration::from_millis(1500));
    let killed = Instant::now();
    assert!(Command::new("kill").args(["-KILL", &pids[1]]).status().unwrap().success());
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = launcher.wait().unwrap();
    assert!(killed.elapsed() < Duration::from_secs(20), "{:?}", killed.elapsed());
    assert!(!status.success());
    let last = rest.last().unwrap();
    assert!(
        last.starts_with("kith: error: the distributed run failed: process 1 (pid")
            && last.contains("killed by signal 9"),
        "{rest:?}"
    );
    for pid in [&pids[0], &pids[2]] {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} still runs"
        );
    }
}
