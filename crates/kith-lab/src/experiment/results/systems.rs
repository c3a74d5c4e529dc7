//! The published results of LFGraph (Hoque's thesis and paper) and of the MapReduce study,
//! and how kith's number for each is read from its step's output.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::{Measured, Paper, ResultRow, cell, csv_table, f, json, number, text};

pub(super) fn rows() -> Vec<ResultRow> {
    vec![
        ResultRow {
            paper_ref: "LFGraph thesis Fig. 2.3",
            result: "Values sent per vertex per iteration, PowerGraph over LFGraph \
                     (soc-Slashdot0902, 2-256 servers)",
            paper: Paper::Quoted {
                text: "about 4×",
                value: Some(4.0),
                source: "the thesis as docs/distributed.md quotes it (not re-checked)",
            },
            step: Some("lfgraph-comm-slashdot"),
            measure: comm_ratio,
            noise: 0.2,
            note: "Slashdot has 365,931 reciprocal pairs, each one neighbour in eq. 2.5; \
                   the thesis's graphs are not named in kith's sources.",
        },
        ResultRow {
            paper_ref: "LFGraph thesis Fig. 2.3",
            result: "The same on wiki-Vote",
            paper: Paper::Quoted {
                text: "about 4×",
                value: Some(4.0),
                source: "the thesis as docs/distributed.md quotes it (not re-checked)",
            },
            step: Some("lfgraph-comm-wiki-vote"),
            measure: comm_ratio,
            noise: 0.2,
            note: "",
        },
        ResultRow {
            paper_ref: "LFGraph thesis Fig. 2.5",
            result: "Busiest server's in-links over the mean under hash placement, 256 servers \
                     (soc-Slashdot0902)",
            paper: Paper::NotQuoted,
            step: Some("lfgraph-comm-slashdot"),
            measure: |d| {
                let x =
                    cell(d, "comm-overhead.csv", &[("servers", "256")], "compute_max_over_mean")?;
                number(format!("{x:.3}"), x)
            },
            noise: 0.0,
            note: "",
        },
        ResultRow {
            paper_ref: "LFGraph thesis Fig. 2.4",
            result: "Busiest server's in-links over the mean under hash placement on Zipf \
                     in-degree graphs, α 1.7 and 2.1, 2 and 256 servers",
            paper: Paper::NotQuoted,
            step: Some("lfgraph-balance"),
            measure: |d| {
                let at = |alpha: &str, servers: &str| {
                    let name = format!("zipf-{alpha}");
                    let filter = [("graph", name.as_str()), ("servers", servers)];
                    cell(d, "lfgraph-balance.csv", &filter, "compute_max_over_mean")
                };
                let (a2, a256) = (at("1.7", "2")?, at("1.7", "256")?);
                let (b2, b256) = (at("2.1", "2")?, at("2.1", "256")?);
                text(format!(
                    "α 1.7: {a2:.2} (2 servers) to {a256:.1} (256); α 2.1: {b2:.2} to {b256:.1}"
                ))
            },
            noise: 0.0,
            note: "1 M vertices per graph (PowerGraph's synthetic graphs had 10 M; α 1.7 at 10 M \
                   is about 2 billion edges, beyond this machine's memory). A vertex's in-degree \
                   can reach n − 1, so at high α one celebrity holds most of a server's work.",
        },
        ResultRow {
            paper_ref: "LFGraph",
            result: "Bytes between workers, per-edge over fetch-once (soc-Slashdot0902, 2 workers)",
            paper: Paper::NotQuoted,
            step: Some("lfgraph-distributed"),
            measure: |d| {
                let doc = json(d, "distributed.json")?;
                let g = distributed_graph(&doc, false)?;
                let x = g["processes"]
                    .as_array()
                    .and_then(|p| p.iter().find(|r| r["workers"] == 2))
                    .and_then(|r| r["per_edge_over_fetch_once_bytes"].as_f64())
                    .context("no 2-worker run")?;
                number(format!("{x:.1}×"), x)
            },
            noise: 0.0,
            note: "",
        },
        ResultRow {
            paper_ref: "LFGraph thesis Fig. 4.13",
            result: "SSSP on Pregel's log-normal graphs (μ 4, σ 1.3): the largest size this \
                     machine holds, its time and memory per vertex",
            paper: Paper::NotQuoted,
            step: Some("lfgraph-sssp"),
            measure: |d| {
                let rows = csv_table(&d.join("lfgraph-sssp.csv"))?;
                let last = rows.last().context("lfgraph-sssp.csv has no rows")?;
                let get = |k: &str| last.get(k).map_or("?", |s| s.as_str()).to_owned();
                let per_process = get("dist_bytes_per_vertex_per_process");
                text(format!(
                    "{} vertices, {} edges: {} s on 1 process, {} B/vertex at peak; {} s on {} \
                     processes, {per_process} B/vertex per process",
                    get("vertices"),
                    get("edges"),
                    get("sssp_s"),
                    get("bytes_per_vertex"),
                    get("dist_sssp_s"),
                    get("processes")
                ))
            },
            noise: 0.0,
            note: "Hop distances (unit weights). Every process of the local cluster loads the \
                   whole graph, so memory per process does not fall with more processes.",
        },
        ResultRow {
            paper_ref: "LFGraph",
            result: "Peak memory per worker, PageRank on soc-Slashdot0902: 1 process against each \
                     of 2",
            paper: Paper::NotQuoted,
            step: Some("lfgraph-distributed"),
            measure: |d| {
                let doc = json(d, "distributed.json")?;
                let g = distributed_graph(&doc, true)?;
                let one = g["single_thread_peak_rss_mb"].as_f64().context("no single peak")?;
                let two = g["processes"]
                    .as_array()
                    .and_then(|p| p.iter().find(|r| r["workers"] == 2))
                    .and_then(|r| r["fetch-once"]["peak_rss_mb"].as_array())
                    .context("no 2-worker peaks")?
                    .iter()
                    .filter_map(serde_json::Value::as_f64)
                    .fold(0.0, f64::max);
                text(format!("{one:.0} MB on 1 process; {two:.0} MB per worker on 2"))
            },
            noise: 0.0,
            note: "Every process reads the whole edge list and builds its part from it, so memory \
                   per worker does not fall with more processes; the next row reads a \
                   partition instead.",
        },
        ResultRow {
            paper_ref: "LFGraph",
            result: "Memory per worker falling towards 1/P with a loader that reads only its part of a \
                     partitioned input: largest worker's peak, PageRank on a log-normal graph",
            paper: Paper::NotQuoted,
            step: Some("lfgraph-distributed"),
            measure: |d| {
                let doc = json(d, "distributed.json")?;
                let m = &doc["memory"];
                let rows = m["rows"].as_array().context("no memory rows (an older file)")?;
                let f = |r: &serde_json::Value, k: &str| {
                    k.split('.').fold(r, |v, k| &v[k]).as_f64().unwrap_or(f64::NAN)
                };
                let list = |k: &str, digits: usize| {
                    rows.iter()
                        .map(|r| format!("{:.digits$}", f(r, k)))
                        .collect::<Vec<_>>()
                        .join("/")
                };
                text(format!(
                    "{}, {} links, on {} processes: {} MB reading its parts, {} MB loading the \
                     whole graph, {} MB on an empty graph; memory for the graph {} of one \
                     process's (1/P: {})",
                    m["graph"].as_str().unwrap_or("?"),
                    m["edges"],
                    list("workers", 0),
                    list("partitioned.max_peak_rss_mb", 0),
                    list("whole.max_peak_rss_mb", 0),
                    list("baseline_rss_mb", 0),
                    list("graph_mb_over_one_process", 2),
                    list("ideal_over_one_process", 2),
                ))
            },
            noise: 0.0,
            note: "`kith graph partition` writes each worker's in-links to its own file. A \
                   process's links fall as 1/P, but it still holds per-user arrays for every \
                   user (ids, out-degrees, in-link offsets), a slot for every remote \
                   in-neighbour, and exchange buffers, so memory for the graph falls more \
                   slowly than 1/P; an empty graph's process grows with P (connections to \
                   every peer).",
        },
        ResultRow {
            paper_ref: "MapReduce study",
            result: "Mutual friends, seconds on soc-Slashdot0902 (one machine, 64 MB shuffle): \
                     the study's three jobs, and one round of list intersection",
            paper: Paper::NotQuoted,
            step: Some("mapreduce"),
            measure: |d| {
                let doc = json(d, "analytics.json")?;
                let rows = doc["mapreduce"].as_array().context("no mapreduce section")?;
                // Slashdot's row; a --quick run has only the small graph's.
                let seconds = |job: &str| -> Result<(f64, String)> {
                    let of_job = || rows.iter().filter(move |r| r["job"] == job);
                    let row = of_job()
                        .find(|r| r["dataset"].as_str().is_some_and(|s| s.contains("Slashdot")))
                        .or_else(|| of_job().next())
                        .with_context(|| format!("no {job} row"))?;
                    let s = row["seconds"].as_f64().context("no seconds")?;
                    let shuffled = row["rounds"]
                        .as_array()
                        .map(|r| r.iter().filter_map(|x| x["map_output_bytes"].as_f64()).sum())
                        .unwrap_or(0.0);
                    let data = row["dataset"].as_str().unwrap_or("?");
                    Ok((s, format!("{s:.2} s, {:.0} MB shuffled ({data})", shuffled / 1e6)))
                };
                let (three, three_text) = seconds("mutual-friends-3")?;
                let (_, one_text) = seconds("mutual-friends")?;
                number(format!("3 jobs: {three_text}; 1 round: {one_text}"), three)
            },
            noise: 0.0,
            note: "",
        },
        ResultRow {
            paper_ref: "MapReduce study",
            result: "Every job on every shared graph (mutual friends in 3 jobs and in 1, \
                     components, triangles), checked against the vertex programs",
            paper: Paper::NotQuoted,
            step: Some("mr-study"),
            measure: |d| {
                let rows = csv_table(&d.join("mr-study.csv"))?;
                let media: Vec<_> = rows.iter().filter(|r| r["part"] == "media").collect();
                let mut graphs: Vec<&str> = media.iter().map(|r| r["graph"].as_str()).collect();
                graphs.dedup();
                let slowest = media
                    .iter()
                    .max_by(|a, b| f(a, "seconds").total_cmp(&f(b, "seconds")))
                    .context("mr-study.csv has no media rows")?;
                text(format!(
                    "{} runs on {} graphs; slowest {} on {} ({}): {:.1} s",
                    media.len(),
                    graphs.len(),
                    slowest["job"],
                    slowest["graph"],
                    slowest["medium"],
                    f(slowest, "seconds")
                ))
            },
            noise: 0.0,
            note: "",
        },
        ResultRow {
            paper_ref: "MapReduce study",
            result: "Job time against Hadoop's knobs (buffer, spill percent, sort factor, \
                     parallel copies), one at a time around its defaults",
            paper: Paper::NotQuoted,
            step: Some("mr-study"),
            measure: |d| {
                let rows = csv_table(&d.join("mr-study.csv"))?;
                let sweep: Vec<_> = rows.iter().filter(|r| r["part"] == "tunables").collect();
                let base = sweep.first().context("mr-study.csv has no tunables rows")?;
                let knob = |r: &std::collections::HashMap<String, String>| {
                    ["memory_mb", "spill_percent", "sort_factor", "parallel_copies"]
                        .into_iter()
                        .find(|k| r[*k] != base[*k])
                        .map_or("defaults".to_owned(), |k| format!("{k} {}", r[k]))
                };
                let by =
                    |a: &&&std::collections::HashMap<String, String>,
                     b: &&&std::collections::HashMap<String, String>| {
                        f(a, "seconds").total_cmp(&f(b, "seconds"))
                    };
                let fast = sweep.iter().min_by(by).expect("non-empty");
                let slow = sweep.iter().max_by(by).expect("non-empty");
                text(format!(
                    "{} on {}: defaults {:.2} s; fastest {} {:.2} s; slowest {} {:.2} s",
                    base["job"],
                    base["graph"],
                    f(base, "seconds"),
                    knob(fast),
                    f(fast, "seconds"),
                    knob(slow),
                    f(slow, "seconds")
                ))
            },
            noise: 0.0,
            note: "Hadoop spills in the background while the map goes on; kith's map waits for \
                   the spill, so the spill percent changes run sizes, not overlap. A parallel \
                   copy is a run read ahead by its own thread: there is no network between map \
                   and reduce on one machine.",
        },
        ResultRow {
            paper_ref: "MapReduce study",
            result: "HDD against SSD: every job's I/O time measured on this machine's disk and \
                     tmpfs, beside the HDD and SSD cost models",
            paper: Paper::NotQuoted,
            step: Some("mr-study"),
            measure: |d| {
                let rows = csv_table(&d.join("mr-study.csv"))?;
                let media: Vec<_> = rows.iter().filter(|r| r["part"] == "media").collect();
                let mut names: Vec<&str> = media.iter().map(|r| r["medium"].as_str()).collect();
                names.sort_unstable();
                names.dedup();
                let parts: Vec<String> = names
                    .iter()
                    .map(|m| {
                        let of: Vec<_> = media.iter().filter(|r| r["medium"] == *m).collect();
                        let sum = |k: &str| of.iter().map(|r| f(r, k)).sum::<f64>();
                        let (io, hdd, ssd) =
                            (sum("io_s"), sum("hdd_model_io_s"), sum("ssd_model_io_s"));
                        let closer = if (io / hdd).ln().abs() < (io / ssd).ln().abs() {
                            "HDD"
                        } else {
                            "SSD"
                        };
                        format!(
                            "{m} {io:.1} s measured (HDD model {hdd:.1} s, SSD {ssd:.1} s: \
                             closer to {closer})"
                        )
                    })
                    .collect();
                text(parts.join("; "))
            },
            noise: 0.0,
            note: "Files are synced and dropped from the page cache when written, so reads come \
                   from the medium; the disk is a virtual disk whose host may still cache, so it \
                   can beat a physical SSD. I/O time sums the calls of every thread.",
        },
    ]
}

/// soc-Slashdot0902's entry of `bench distributed`'s JSON; with `or_first`, the first
/// graph's when Slashdot did not run (a `--quick` run).
fn distributed_graph(doc: &serde_json::Value, or_first: bool) -> Result<&serde_json::Value> {
    let graphs = doc["graphs"].as_array().context("no graphs in distributed.json")?;
    let slashdot = graphs.iter().find(|g| g["name"] == "soc-Slashdot0902");
    let found = if or_first { slashdot.or_else(|| graphs.first()) } else { slashdot };
    found.context("no soc-Slashdot0902 in distributed.json")
}

fn comm_ratio(dir: &Path) -> Result<Measured> {
    let rows = csv_table(&dir.join("comm-overhead.csv"))?;
    let ratios: Vec<f64> = rows
        .iter()
        .filter_map(|r| {
            let pg: f64 = r.get("powergraph")?.parse().ok()?;
            let lf: f64 = r.get("lfgraph")?.parse().ok()?;
            (lf > 0.0).then_some(pg / lf)
        })
        .collect();
    if ratios.is_empty() {
        bail!("comm-overhead.csv has no rows");
    }
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(0.0, f64::max);
    number(format!("{lo:.1}-{hi:.1}×"), hi)
}
