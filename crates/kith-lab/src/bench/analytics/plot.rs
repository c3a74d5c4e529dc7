//! The charts of `kith bench analytics`, drawn from its results JSON (so `--replot` can
//! redraw them from an earlier run).

use std::path::Path;

use anyhow::Result;
use serde_json::Value;

use crate::plot::bar_chart;

/// Charts beside `out`: kith's speed-up over GAPBS and over each Python library per graph
/// and algorithm, and the speed of each `--order` relative to the input order (each only
/// when the run measured it).
pub(super) fn plots(report: &Value, out: &Path) -> Result<()> {
    let graphs = report["graphs"].as_array().cloned().unwrap_or_default();
    let short = |g: &Value| {
        let name = g["name"].as_str().unwrap_or("?");
        let name = name.strip_prefix("soc-").unwrap_or(name);
        let name = name.split('-').next().unwrap_or(name);
        name.strip_suffix("0902").unwrap_or(name).to_lowercase()
    };
    // Speed-ups: bars are library runs (networkx is left out: its 20-70x would flatten the rest).
    let runs = [("igraph", 1u64), ("networkit", 1), ("networkit", 2)];
    let algorithms = [("pagerank", "PR"), ("triangles", "tri"), ("cc", "cc")];
    let mut groups = Vec::new();
    let mut values = Vec::new();
    for g in &graphs {
        for (alg, label) in algorithms {
            groups.push(format!("{} {label}", short(g)));
            values.push(
                runs.iter()
                    .map(|&(lib, t)| {
                        g["baselines"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .find(|b| b["library"] == lib && b["threads"].as_u64() == Some(t))
                            .and_then(|b| b["kith_speedup"][alg].as_f64())
                            .unwrap_or(0.0)
                    })
                    .collect::<Vec<f64>>(),
            );
        }
    }
    let bars: Vec<String> = runs.iter().map(|(l, t)| format!("{l}, {t} thread(s)")).collect();
    if values.iter().flatten().any(|&v| v > 0.0) {
        bar_chart(
            &out.with_file_name("analytics-speedup.png"),
            "kith's speed-up (library seconds / kith seconds; PR: PageRank, tri: triangles)",
            "speed-up",
            &groups,
            &bars,
            &values,
        )?;
    }
    // GAPBS: its seconds over kith's, same graph, same threads.
    let mut groups = Vec::new();
    let mut values = Vec::new();
    for g in graphs.iter().filter(|g| g["gapbs"].is_object()) {
        let (p, t) = (&g["gapbs"]["pagerank"], &g["gapbs"]["triangles"]);
        groups.push(short(g));
        values.push(
            [
                &p["orders"]["input"]["speedup_f32"],
                &p["orders"]["degree"]["speedup_f32"],
                &p["speedup_prepared_vs_reference"],
                &t["speedup"],
            ]
            .iter()
            .map(|v| v.as_f64().unwrap_or(0.0))
            .collect::<Vec<f64>>(),
        );
    }
    if !groups.is_empty() {
        let bars = [
            "PageRank, input order".to_string(),
            "PageRank, degree order on both".into(),
            "PageRank, kith in degree order, GAPBS in input".into(),
            "triangle count".into(),
        ];
        bar_chart(
            &out.with_file_name("analytics-gapbs.png"),
            "kith's speed-up over GAPBS (GAPBS seconds / kith seconds, 2 threads; 1 = par)",
            "speed-up",
            &groups,
            &bars,
            &values,
        )?;
    }
    // Orders: PageRank rate and triangle speed relative to the input order.
    let orders = ["default", "random", "kith"];
    let mut groups = Vec::new();
    let mut values = Vec::new();
    for g in graphs.iter().filter(|g| g["orders"].is_array()) {
        let rows = g["orders"].as_array().cloned().unwrap_or_default();
        let threads: Vec<u64> = rows
            .first()
            .and_then(|r| r["runs"].as_array())
            .map(|r| r.iter().filter_map(|k| k["threads"].as_u64()).collect())
            .unwrap_or_default();
        for &t in &threads {
            let get = |order: &str, field: &str| {
                rows.iter()
                    .find(|r| r["order"] == order)
                    .and_then(|r| r["runs"].as_array())
                    .and_then(|runs| runs.iter().find(|k| k["threads"].as_u64() == Some(t)))
                    .and_then(|k| k[field].as_f64())
                    .unwrap_or(f64::NAN)
            };
            groups.push(format!("{} PR {t}t", short(g)));
            values.push(
                orders
                    .iter()
                    .map(|o| {
                        get(o, "pagerank_edges_per_s") / get("default", "pagerank_edges_per_s")
                    })
                    .collect(),
            );
            groups.push(format!("{} tri {t}t", short(g)));
            values.push(
                orders
                    .iter()
                    .map(|o| get("default", "triangles_s") / get(o, "triangles_s"))
                    .collect(),
            );
        }
    }
    if !groups.is_empty() {
        let bars: Vec<String> = orders.iter().map(|o| format!("--order {o}")).collect();
        bar_chart(
            &out.with_file_name("analytics-order.png"),
            "speed relative to the input order (higher is faster)",
            "speed / input order's",
            &groups,
            &bars,
            &values,
        )?;
    }
    Ok(())
}
