//! What `kith experiment all` runs and what it reports: every step (a whole `kith` command
//! line, at full size on the shared datasets or tiny with `--quick`) and every published
//! result, with the paper's number where kith quotes one and how kith's number is read from
//! the step's output.
//!
//! A result without a step is a figure kith does not reproduce yet; it is listed anyway, so
//! `docs/reproduction.md` shows every gap. The results themselves, and how each is read, are
//! in `results.rs`.

use std::path::{Path, PathBuf};

use anyhow::Result;

/// Where a step's command line points.
pub(super) struct Ctx {
    /// The shared datasets.
    pub datasets: PathBuf,
    /// The run's output directory; each step writes `<out>/<step>/`.
    pub out: PathBuf,
    pub quick: bool,
}

impl Ctx {
    fn data(&self, file: &str) -> String {
        self.datasets.join(file).display().to_string()
    }

    fn dir(&self, step: &str) -> String {
        self.out.join(step).display().to_string()
    }

    /// The small dataset every `--quick` step runs on (1,005 users, 25,571 links).
    fn quick_graph(&self) -> String {
        self.data(QUICK_GRAPH)
    }
}

const QUICK_GRAPH: &str = "email-Eu-core.txt.gz";

/// Bondhu's 7-user worked example as a SNAP edge list; `all` writes it to
/// `<out>/inputs/bondhu-example.txt`.
pub(super) const BONDHU_EXAMPLE: &str = "1 2\n1 3\n1 5\n2 3\n2 4\n3 4\n3 5\n4 6\n4 7\n";

/// One command of the reproduction.
pub(super) struct Step {
    pub name: &'static str,
    /// The paper and figure or table it regenerates.
    pub reproduces: &'static str,
    /// The `kith` arguments (without the program name).
    pub argv: fn(&Ctx, &str) -> Vec<String>,
    /// Datasets it reads (file names in the datasets directory); a missing one skips it.
    pub datasets: fn(&Ctx) -> Vec<&'static str>,
    /// Expected seconds at full size and with `--quick`, until a previous run's manifest
    /// gives measured ones.
    pub estimate_s: (f64, f64),
}

/// How a paper states a result.
pub(super) enum Paper {
    /// A number and where it is quoted from.
    Quoted { text: &'static str, value: Option<f64>, source: &'static str },
    /// kith does not quote the paper's number: the seed text was not at hand.
    NotQuoted,
}

/// kith's number for a result, read from its step's output directory.
pub(super) struct Measured {
    pub text: String,
    /// The number compared with the paper's, in the paper's unit.
    pub value: Option<f64>,
}

/// One published result.
pub(super) struct ResultRow {
    pub paper_ref: &'static str,
    pub result: &'static str,
    pub paper: Paper,
    /// The step whose output holds kith's number; `None` when kith does not reproduce the
    /// result yet.
    pub step: Option<&'static str>,
    pub measure: fn(&Path) -> Result<Measured>,
    /// The band within which kith's number counts as the paper's (relative), when both are
    /// numbers.
    pub noise: f64,
    /// Why kith's number differs, when it does by more than the noise; or what is missing.
    pub note: &'static str,
}

fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// `experiment <name> --graph G --out DIR` plus extra arguments.
fn experiment(name: &str, graph: &str, out: &str, extra: &[&str]) -> Vec<String> {
    let mut v = args(&["experiment", name, "--graph", graph, "--out", out]);
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

const SERVICE_QUICK: [&str; 6] = ["--duration-s", "0.4", "--warmup-s", "0.1", "--seed", "2"];

/// Every step, in the order `all` runs them.
pub(super) fn steps() -> Vec<Step> {
    vec![
        Step {
            name: "bondhu-example",
            reproduces: "Bondhu's worked example (7 users)",
            argv: |c, _| {
                let input = c.out.join("inputs/bondhu-example.txt").display().to_string();
                args(&["layout", "compare", &input, "--communities", "2", "--objective", "la"])
                    .into_iter()
                    .chain(["--json".to_owned()])
                    .collect()
            },
            datasets: |_| vec![],
            estimate_s: (1.0, 1.0),
        },
        Step {
            name: "bondhu-communities",
            reproduces: "Bondhu Fig. 9",
            argv: |c, s| {
                let g = if c.quick { c.quick_graph() } else { c.data("soc-brightkite.mtx.gz") };
                experiment("bondhu-communities", &g, &c.dir(s), &[])
            },
            datasets: |c| vec![if c.quick { QUICK_GRAPH } else { "soc-brightkite.mtx.gz" }],
            estimate_s: (60.0, 5.0),
        },
        Step {
            name: "bondhu-models",
            reproduces: "Bondhu Fig. 10 (cost)",
            argv: |c, s| {
                let g = if c.quick { c.quick_graph() } else { c.data("soc-brightkite.mtx.gz") };
                experiment("bondhu-models", &g, &c.dir(s), &[])
            },
            datasets: |c| vec![if c.quick { QUICK_GRAPH } else { "soc-brightkite.mtx.gz" }],
            estimate_s: (60.0, 5.0),
        },
        Step {
            name: "bondhu-workloads",
            reproduces: "Bondhu Fig. 10 (on stores: each layout under each workload)",
            argv: |c, s| {
                if c.quick {
                    let extra = ["--users", "50", "--repeat", "1"];
                    experiment("bondhu-workloads", &c.quick_graph(), &c.dir(s), &extra)
                } else {
                    let g = c.data("facebook_combined.txt.gz");
                    experiment("bondhu-workloads", &g, &c.dir(s), &[])
                }
            },
            datasets: datasize_data,
            estimate_s: (300.0, 3.0),
        },
        Step {
            name: "bondhu-evolution",
            reproduces: "Bondhu Fig. 11",
            argv: |c, s| {
                let g = if c.quick { c.quick_graph() } else { c.data("soc-brightkite.mtx.gz") };
                experiment("bondhu-evolution", &g, &c.dir(s), &[])
            },
            datasets: |c| vec![if c.quick { QUICK_GRAPH } else { "soc-brightkite.mtx.gz" }],
            estimate_s: (120.0, 8.0),
        },
        Step {
            name: "bondhu-datasize",
            reproduces: "Bondhu Figs. 3-5, 7 (cold)",
            argv: |c, s| datasize(c, s, &[]),
            datasets: datasize_data,
            estimate_s: (1800.0, 15.0),
        },
        Step {
            name: "bondhu-datasize-warm",
            reproduces: "Bondhu Fig. 8 (warm)",
            argv: |c, s| datasize(c, s, &["--warm"]),
            datasets: datasize_data,
            estimate_s: (600.0, 15.0),
        },
        Step {
            name: "bondhu-partial",
            reproduces: "Bondhu Fig. 6 (partial blocks)",
            argv: |c, s| {
                if c.quick {
                    datasize(c, s, &["--partial", "--data-dist", "powerlaw:10,20000"])
                } else {
                    datasize(c, s, &["--partial"])
                }
            },
            datasets: datasize_data,
            estimate_s: (600.0, 15.0),
        },
        Step {
            name: "bondhu-datasize-4mb",
            reproduces: "Bondhu Fig. 5 (4 MB data blocks)",
            argv: |c, s| {
                // Two stores of 1,005 users × 4 MiB (about 10 GB with RocksDB's overhead):
                // ego-Facebook's three would need 64 GB.
                let size = if c.quick { "65536" } else { "4194304" };
                let (users, repeat) = if c.quick { ("20", "1") } else { ("100", "2") };
                let extra = [
                    "--methods",
                    "default,kith",
                    "--sizes",
                    size,
                    "--users",
                    users,
                    "--repeat",
                    repeat,
                ];
                experiment("bondhu-datasize", &c.quick_graph(), &c.dir(s), &extra)
            },
            datasets: |_| vec![QUICK_GRAPH],
            estimate_s: (600.0, 5.0),
        },
        Step {
            name: "bondhu-communities-time",
            reproduces: "Bondhu thesis Fig. 5.6b (response time against K)",
            argv: |c, s| {
                let full = "default,parcom@2,parcom@8,parcom@32,parcom@128,parcom@512";
                variants(c, s, full, "default,parcom@2,parcom@16")
            },
            datasets: datasize_data,
            estimate_s: (900.0, 5.0),
        },
        Step {
            name: "bondhu-modcom-levels",
            reproduces: "Bondhu thesis §5.7 (ModCom per dendrogram level)",
            argv: |c, s| variants(c, s, "default,modcom@0,modcom@1,modcom@2", "default,modcom@0"),
            datasets: datasize_data,
            estimate_s: (600.0, 5.0),
        },
        Step {
            name: "bondhu-organ-pipe",
            reproduces: "Bondhu thesis §5.8 (organ pipe against ParCom)",
            argv: |c, s| {
                let methods = "default,random,organ-pipe,parcom";
                variants(c, s, methods, methods)
            },
            datasets: datasize_data,
            estimate_s: (500.0, 5.0),
        },
        Step {
            name: "device-calibration",
            reproduces: "Bondhu thesis §3.2 (sequential against random reads of the device)",
            argv: |c, s| {
                own_input(c, s, "device-calibration", &["--size-mb", "16", "--seconds", "1"])
            },
            datasets: |_| vec![],
            estimate_s: (75.0, 8.0),
        },
        Step {
            name: "lfgraph-comm-slashdot",
            reproduces: "LFGraph thesis Figs. 2.3 and 2.5 (soc-Slashdot0902)",
            argv: |c, s| comm(c, s, "soc-Slashdot0902.txt.gz"),
            datasets: |c| vec![if c.quick { QUICK_GRAPH } else { "soc-Slashdot0902.txt.gz" }],
            estimate_s: (20.0, 2.0),
        },
        Step {
            name: "lfgraph-comm-wiki-vote",
            reproduces: "LFGraph thesis Figs. 2.3 and 2.5 (wiki-Vote)",
            argv: |c, s| comm(c, s, "wiki-Vote.txt.gz"),
            datasets: |_| vec!["wiki-Vote.txt.gz"],
            estimate_s: (5.0, 3.0),
        },
        Step {
            name: "lfgraph-balance",
            reproduces: "LFGraph thesis Fig. 2.4 (imbalance on Zipf graphs, α 1.7-2.1)",
            argv: |c, s| {
                let mut v = args(&["experiment", "lfgraph-balance", "--out", &c.dir(s)]);
                if c.quick {
                    v.extend(args(&["--vertices", "20000"]));
                    v.extend(["--graphs".to_owned(), c.data("wiki-Vote.txt.gz")]);
                } else {
                    let real =
                        ["wiki-Vote.txt.gz", "soc-Slashdot0902.txt.gz", "out.ego-twitter.gz"];
                    let real: Vec<String> = real.iter().map(|f| c.data(f)).collect();
                    v.extend(["--graphs".to_owned(), real.join(",")]);
                }
                v
            },
            datasets: |c| {
                if c.quick {
                    vec!["wiki-Vote.txt.gz"]
                } else {
                    vec!["wiki-Vote.txt.gz", "soc-Slashdot0902.txt.gz", "out.ego-twitter.gz"]
                }
            },
            estimate_s: (30.0, 3.0),
        },
        Step {
            name: "lfgraph-sssp",
            reproduces: "LFGraph thesis Fig. 4.13 (SSSP on log-normal graphs)",
            argv: |c, s| own_input(c, s, "lfgraph-sssp", &["--sizes", "5000,10000"]),
            datasets: |_| vec![],
            estimate_s: (600.0, 4.0),
        },
        Step {
            name: "lfgraph-distributed",
            reproduces: "LFGraph: fetch-once against per-edge exchange, COST, memory per worker",
            argv: |c, s| {
                let json = format!("{}/distributed.json", c.dir(s));
                let mut v = args(&["bench", "distributed", "--out", &json]);
                v.extend(["--datasets".to_owned(), c.datasets.display().to_string()]);
                if c.quick {
                    v.extend(args(&["--lfr-nodes", "3000", "--workers", "2", "--repeat", "1"]));
                    v.extend(args(&["--memory-nodes", "5000"]));
                    v.extend(args(&["--iterations", "3"]));
                }
                v
            },
            datasets: |_| vec!["soc-Slashdot0902.txt.gz", "wiki-Vote.txt.gz"],
            estimate_s: (1100.0, 40.0),
        },
        Step {
            name: "mapreduce",
            reproduces: "MapReduce study: jobs' phases beside the vertex programs",
            argv: |c, s| {
                let json = format!("{}/analytics.json", c.dir(s));
                let mut v = args(&["bench", "analytics", "--out", &json, "--baselines", "none"]);
                v.extend(args(&["--skip-orders", "--threads", "1", "--trials", "1"]));
                v.extend(["--datasets".to_owned(), c.datasets.display().to_string()]);
                if c.quick {
                    v.extend(args(&["--graphs", "rmat", "--rmat-nodes", "4096"]));
                    v.extend(["--mr-datasets".to_owned(), QUICK_GRAPH.to_owned()]);
                } else {
                    v.extend(args(&["--graphs", "slashdot"]));
                }
                v
            },
            datasets: |c| {
                if c.quick {
                    vec![QUICK_GRAPH]
                } else {
                    vec![
                        "facebook_combined.txt.gz",
                        "email-Enron.txt.gz",
                        "soc-Slashdot0902.txt.gz",
                    ]
                }
            },
            estimate_s: (300.0, 10.0),
        },
        Step {
            name: "mr-study",
            reproduces: "MapReduce study: every job on every graph, disk and tmpfs, Hadoop's knobs",
            argv: |c, s| {
                let mut v = args(&["experiment", "mr-study", "--out", &c.dir(s)]);
                v.extend(["--datasets".to_owned(), c.datasets.display().to_string()]);
                if c.quick {
                    v.extend(["--graphs".to_owned(), QUICK_GRAPH.to_owned()]);
                    v.extend(["--sweep-graph".to_owned(), QUICK_GRAPH.to_owned()]);
                    v.extend(args(&["--memory-mb", "1", "--sweep-memory-mb", "1,4"]));
                }
                v
            },
            datasets: |c| {
                if c.quick {
                    vec![QUICK_GRAPH]
                } else {
                    vec![
                        "facebook_combined.txt.gz",
                        "out.ego-twitter.gz",
                        "soc-brightkite.mtx.gz",
                        "wiki-Vote.txt.gz",
                        "email-Enron.txt.gz",
                        "soc-Slashdot0902.txt.gz",
                        "soc-sign-Slashdot090216.txt.gz",
                        "ca-GrQc.txt.gz",
                        "ca-HepTh.txt.gz",
                        "email-Eu-core.txt.gz",
                        "git_web_ml.zip",
                    ]
                }
            },
            estimate_s: (900.0, 5.0),
        },
        Step {
            name: "twibo",
            reproduces: "Twibo Tables 3 and 4",
            argv: |c, s| service(c, s, "twibo", &["--clients", "2"]),
            datasets: service_data,
            estimate_s: (2000.0, 25.0),
        },
        Step {
            name: "twibo-cache",
            reproduces: "Twibo Table 5",
            argv: |c, s| {
                service(c, s, "twibo-cache", &["--cache-clients", "4", "--cache-mb", "1,8"])
            },
            datasets: service_data,
            estimate_s: (1600.0, 10.0),
        },
        Step {
            name: "parker-latency",
            reproduces: "Parker Table 1",
            argv: |c, s| service(c, s, "parker-latency", &[]),
            datasets: service_data,
            estimate_s: (60.0, 5.0),
        },
        Step {
            name: "parker-cluster",
            reproduces: "Parker on Cassandra: scaling over 1, 3, 5 nodes",
            argv: |c, s| {
                let mut v = args(&["experiment", "parker-cluster", "--out", &c.dir(s)]);
                if c.quick {
                    v.extend(["--graph".to_owned(), c.quick_graph()]);
                    v.extend(args(&["--nodes", "1", "--seconds", "1", "--queries", "20"]));
                    v.extend(args(&["--clients", "4"]));
                } else {
                    v.extend(["--graph".to_owned(), c.data("facebook_combined.txt.gz")]);
                }
                v
            },
            datasets: |c| vec![if c.quick { QUICK_GRAPH } else { "facebook_combined.txt.gz" }],
            estimate_s: (900.0, 90.0),
        },
    ]
}

/// `experiment <name> --out DIR` for an experiment that makes its own input, plus `quick`'s
/// arguments with `--quick`.
fn own_input(c: &Ctx, step: &str, name: &str, quick: &[&str]) -> Vec<String> {
    let mut v = args(&["experiment", name, "--out", &c.dir(step)]);
    if c.quick {
        v.extend(args(quick));
    }
    v
}

fn datasize(c: &Ctx, step: &str, extra: &[&str]) -> Vec<String> {
    if c.quick {
        let quick = ["--methods", "default,kith", "--users", "50", "--repeat", "1"];
        let mut v = experiment("bondhu-datasize", &c.quick_graph(), &c.dir(step), &quick);
        // Partial reads take the first X bytes of power-law blocks: sizes either side of a page.
        let sizes = if extra.contains(&"--partial") { "100,1000" } else { "40,400" };
        v.extend(args(&["--sizes", sizes]));
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    } else {
        experiment("bondhu-datasize", &c.data("facebook_combined.txt.gz"), &c.dir(step), extra)
    }
}

/// `bondhu-datasize` at 400 B (where layouts differ most in pages read) over layout variants.
fn variants(c: &Ctx, step: &str, full: &str, quick: &str) -> Vec<String> {
    if c.quick {
        let extra = ["--methods", quick, "--sizes", "400", "--users", "50", "--repeat", "1"];
        experiment("bondhu-datasize", &c.quick_graph(), &c.dir(step), &extra)
    } else {
        let extra = ["--methods", full, "--sizes", "400"];
        experiment("bondhu-datasize", &c.data("facebook_combined.txt.gz"), &c.dir(step), &extra)
    }
}

fn datasize_data(c: &Ctx) -> Vec<&'static str> {
    vec![if c.quick { QUICK_GRAPH } else { "facebook_combined.txt.gz" }]
}

fn comm(c: &Ctx, step: &str, file: &str) -> Vec<String> {
    // Quick: Slashdot's step runs on the small graph; wiki-Vote (7,115 users) is small already.
    let graph = if c.quick && file != "wiki-Vote.txt.gz" { c.quick_graph() } else { c.data(file) };
    let dir = c.dir(step);
    args(&["analyze", "comm-overhead", &graph, "--directed", "--json", "--plot", &dir])
}

fn service(c: &Ctx, step: &str, name: &str, quick: &[&str]) -> Vec<String> {
    if c.quick {
        let mut v = experiment(name, &c.quick_graph(), &c.dir(step), &["--directed"]);
        v.extend(args(&["--preload", "300", "--backends", "in-process"]));
        v.extend(SERVICE_QUICK.iter().chain(quick).map(|s| s.to_string()));
        v
    } else {
        experiment(name, &c.data("out.ego-twitter.gz"), &c.dir(step), &["--directed"])
    }
}

fn service_data(c: &Ctx) -> Vec<&'static str> {
    vec![if c.quick { QUICK_GRAPH } else { "out.ego-twitter.gz" }]
}
