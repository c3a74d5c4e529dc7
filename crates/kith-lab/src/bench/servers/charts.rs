//! The charts of `kith bench servers`: throughput and CPU per request against the server
//! count, per operation, for the build running the benchmark.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::measure::Row;
use crate::plot::{LineChart, Series, line_chart};

/// Throughput and CPU per request against the server count, per operation; the embedded
/// server's figure as a point at one server.
pub(super) fn charts(out: &Path, rows: &[Row]) -> Result<()> {
    let series = |f: &dyn Fn(&Row) -> f64| -> Vec<Series> {
        let mut all = Vec::new();
        for op in ["friends", "feed", "post", "publish", "follow", "befriend"] {
            for mode in ["cluster", "cluster-near", "embedded"] {
                let points: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|r| r.build == "this" && r.op == op && r.mode == mode)
                    .map(|r| (r.servers as f64, f(r)))
                    .collect();
                if !points.is_empty() {
                    all.push(Series { name: format!("{op} ({mode})"), points });
                }
            }
        }
        all
    };
    let stem = out.with_extension("");
    let path = |what: &str| PathBuf::from(format!("{}-{what}.png", stem.display()));
    line_chart(
        &path("throughput"),
        &LineChart {
            title: "Reads and writes: throughput against kith servers (2 cores shared by all)",
            x_label: "kith servers",
            y_label: "requests/s",
            log2_x: true,
        },
        &series(&|r| r.requests_per_s),
    )?;
    line_chart(
        &path("cpu"),
        &LineChart {
            title: "Reads and writes: CPU per request, servers + engines",
            x_label: "kith servers",
            y_label: "CPU µs per request",
            log2_x: true,
        },
        &series(&|r| r.cpu_us_per_request),
    )?;
    Ok(())
}
