//! `kith experiment parker-latency`: the latency of every Parker call from one client,
//! beside Parker's Table 1, per backend (the embedded store by default; `--backends
//! in-process,cluster` adds a server over Cassandra and a Redis Cluster).

use std::sync::Arc;

use anyhow::Result;
use kith_workload::ParkerCalls;
use serde_json::json;

use super::service::{ServiceArgs, drive, prepare};
use super::twibo::deploy;
use crate::machine::{Machine, git_commit, utc_now};
use crate::plot::{LineChart, Series, line_chart};

pub(super) fn run(args: ServiceArgs) -> Result<()> {
    let p = prepare(&args, false)?;
    let backends = args.backends(&["in-process"])?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let rig = match backends.iter().any(|b| b == "cluster") {
        true => Some(args.rig(p.scratch.path())?),
        false => None,
    };
    let users: Vec<u64> = p.follows.original_ids().to_vec();
    let mut csv = String::from(
        "backend,call,kind,ops,mean_ms,p50_ms,p95_ms,p99_ms,max_ms,errors,server_p50_ms,store_p50_ms,cache_p50_ms\n",
    );
    let mut series = Vec::new();
    let mut runs = Vec::new();
    for (i, backend) in backends.iter().enumerate() {
        let server_args = vec!["--cache".to_string(), "aside".to_string()];
        let d = deploy(backend, &p, rig.as_ref(), 1, i, server_args)?;
        let source = Arc::new(ParkerCalls::new(users.clone(), args.seed)?);
        // One client: per-call latency, not throughput.
        let r = drive(&runtime, source, &d.urls, 1, &args)?;
        drop(d);
        crate::say!("\n{backend}");
        crate::say!(
            "{:<18}{:>6}{:>8}{:>10}{:>10}{:>10}   Parker (Table 1)",
            "call",
            "kind",
            "ops",
            "p50 ms",
            "p99 ms",
            "max ms"
        );
        let mut bars = Vec::new();
        for o in &r.ops {
            let write = matches!(
                o.op.as_str(),
                "put_user" | "put_profile" | "add_friend" | "delete_friend"
            );
            let kind = if write { "write" } else { "read" };
            let mean =
                o.cdf.windows(2).map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0).sum::<f64>();
            // The server's own figures (Server-Timing): handler, engine and Redis time.
            let server = o.server.as_ref().map_or(",,".to_owned(), |t| {
                format!("{:.4},{:.4},{:.4}", t.total_p50_ms, t.store_p50_ms, t.cache_p50_ms)
            });
            csv.push_str(&format!(
                "{backend},{},{kind},{},{mean:.4},{:.4},{:.4},{:.4},{:.4},{},{server}\n",
                o.op, o.ops, o.p50_ms, o.p95_ms, o.p99_ms, o.max_ms, o.errors
            ));
            crate::say!(
                "{:<18}{kind:>6}{:>8}{:>10.3}{:>10.3}{:>10.3}   {}",
                o.op,
                o.ops,
                o.p50_ms,
                o.p99_ms,
                o.max_ms,
                if write { "writes ~14-18 ms" } else { "reads ~0.3-0.5 ms" }
            );
            bars.push(o.p50_ms);
        }
        series.push(Series {
            name: format!("{backend} p50 (ms)"),
            points: bars.iter().enumerate().map(|(i, &b)| (i as f64 + 1.0, b)).collect(),
        });
        runs.push(json!({"backend": backend, "run": r}));
    }
    drop(rig);
    std::fs::write(args.out.join("parker-latency.csv"), csv)?;
    line_chart(
        &args.out.join("parker-latency.png"),
        &LineChart {
            title: "Parker's calls on kith: median latency (1 client; calls in CSV order)",
            x_label: "call",
            y_label: "p50 latency (ms)",
            log2_x: false,
        },
        &series,
    )?;
    let doc = json!({"experiment": "parker-latency", "date": utc_now(), "commit": git_commit(), "machine": Machine::describe(), "graph": args.graph.display().to_string(), "runs": runs});
    std::fs::write(
        args.out.join("parker-latency.json"),
        serde_json::to_string_pretty(&doc)? + "\n",
    )?;
    crate::say!("wrote parker-latency.csv, .json and .png to {}", args.out.display());
    Ok(())
}
