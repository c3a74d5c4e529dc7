//! `kith experiment parker-latency`: the latency of every Parker call from one client,
//! beside Parker's Table 1.

use std::sync::Arc;

use anyhow::Result;
use kith_workload::ParkerCalls;
use serde_json::json;

use super::service::{ServiceArgs, drive, prepare};
use crate::machine::{Machine, git_commit, utc_now};
use crate::plot::{LineChart, Series, line_chart};
use crate::processes::start_server;

pub(super) fn run(args: ServiceArgs) -> Result<()> {
    let p = prepare(&args, false)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let (server, base) = start_server(&p.store, &["--cache".into(), "aside".into()])?;
    let users: Vec<u64> = p.follows.original_ids().to_vec();
    let source = Arc::new(ParkerCalls::new(users, args.seed)?);
    // One client: per-call latency, not throughput.
    let r = drive(&runtime, source, &base, 1, &args)?;
    drop(server);
    let mut csv = String::from("call,kind,ops,mean_ms,p50_ms,p95_ms,p99_ms,max_ms,errors\n");
    println!(
        "{:<18}{:>6}{:>8}{:>10}{:>10}{:>10}   Parker (Table 1)",
        "call", "kind", "ops", "p50 ms", "p99 ms", "max ms"
    );
    let mut bars = Vec::new();
    for o in &r.ops {
        let write =
            matches!(o.op.as_str(), "put_user" | "put_profile" | "add_friend" | "delete_friend");
        let kind = if write { "write" } else { "read" };
        let mean =
            o.cdf.windows(2).map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0).sum::<f64>();
        csv.push_str(&format!(
            "{},{kind},{},{mean:.4},{:.4},{:.4},{:.4},{:.4},{}\n",
            o.op, o.ops, o.p50_ms, o.p95_ms, o.p99_ms, o.max_ms, o.errors
        ));
        println!(
            "{:<18}{kind:>6}{:>8}{:>10.3}{:>10.3}{:>10.3}   {}",
            o.op,
            o.ops,
            o.p50_ms,
            o.p99_ms,
            o.max_ms,
            if write { "writes ~14-18 ms" } else { "reads ~0.3-0.5 ms" }
        );
        bars.push((o.op.clone(), o.p50_ms));
    }
    std::fs::write(args.out.join("parker-latency.csv"), csv)?;
    let series: Vec<Series> = vec![Series {
        name: "p50 (ms)".into(),
        points: bars.iter().enumerate().map(|(i, b)| (i as f64 + 1.0, b.1)).collect(),
    }];
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
    let doc = json!({"experiment": "parker-latency", "date": utc_now(), "commit": git_commit(), "machine": Machine::describe(), "graph": args.graph.display().to_string(), "run": r});
    std::fs::write(
        args.out.join("parker-latency.json"),
        serde_json::to_string_pretty(&doc)? + "\n",
    )?;
    println!("wrote parker-latency.csv, .json and .png to {}", args.out.display());
    Ok(())
}
