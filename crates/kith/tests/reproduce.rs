//! `kith experiment all --quick`: every step of the reproduction at a tiny size (its own
//! one-node Cassandra for the Parker-on-Cassandra step, on 127.0.8.1), the manifest, the
//! table of published results, `--resume`, and the errors of bad selections.

mod common;

use common::{fails, json, kith, ok, p};

#[test]
fn the_quick_reproduction_runs_every_step_and_fills_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = kith(&["experiment", "all", "--quick", "--out", p(&out)]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let manifest = json(&std::fs::read_to_string(out.join("manifest.json")).unwrap());
    assert_eq!(manifest["quick"], true);
    let steps = manifest["steps"].as_array().unwrap();
    assert!(steps.len() >= 15, "{manifest}");
    for step in steps {
        let name = step["name"].as_str().unwrap();
        assert_eq!(step["status"], "ok", "{step}");
        assert!(!step["files"].as_array().unwrap().is_empty(), "{name} wrote nothing");
        assert!(out.join("logs").join(format!("{name}.log")).is_file(), "{name}");
        assert!(step["peak_rss_mb"].as_f64().unwrap() > 1.0, "{step}");
    }
    // Each paper's figures, as CSV and PNG.
    for file in [
        "bondhu-communities/bondhu-communities.png",
        "bondhu-models/bondhu-models.csv",
        "bondhu-evolution/bondhu-evolution.png",
        "bondhu-datasize/bondhu-datasize.png",
        "bondhu-datasize-warm/bondhu-datasize-warm.csv",
        "bondhu-partial/bondhu-partial.png",
        "bondhu-communities-time/bondhu-datasize.csv",
        "bondhu-organ-pipe/bondhu-datasize-pages.png",
        "lfgraph-comm-slashdot/comm-overhead.png",
        "lfgraph-comm-wiki-vote/comm-balance.png",
        "lfgraph-distributed/distributed-bytes.png",
        "twibo/twibo-peaks.csv",
        "twibo-cache/twibo-cache.csv",
        "parker-latency/parker-latency.png",
        "parker-cluster/parker-cluster-scaling.csv",
    ] {
        let bytes = std::fs::read(out.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        if file.ends_with(".png") {
            assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{file}: not a PNG");
        }
    }
    // The table: every result a row; every row with a step has kith's number.
    let table = std::fs::read_to_string(out.join("reproduction.md")).unwrap();
    assert!(table.contains("--quick (tiny sizes: not a reproduction)"), "{table}");
    let results: Vec<&str> = table
        .split("## Steps")
        .next()
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| result"))
        .collect();
    assert!(results.len() >= 30, "{table}");
    for row in &results {
        assert!(!row.contains("unreadable") && !row.contains("not run ("), "{row}");
    }
    let row = |prefix: &str| *results.iter().find(|r| r.contains(prefix)).unwrap();
    // The worked example reaches the optimum, 13, against the paper's layout's 20.
    assert!(row("worked example").contains("| 13 (kith"), "{table}");
    assert!(row("Twibo Tables 3/4: Peak requests/s, pull").contains("req/s at 2 clients"));
    assert!(row("LFGraph thesis Fig. 2.4").contains("α 1.7: "), "{table}");
    assert!(row("Bondhu thesis §3.2").contains("disk ") && row("§3.2").contains("HDD model"));
    assert!(row("MapReduce study: HDD against SSD").contains("tmpfs"), "{table}");
    assert!(row("falling towards 1/P").contains("MB reading its parts"), "{table}");
    assert!(row("Bondhu thesis §5.8").contains("organ-pipe") && row("§5.8").contains("parcom"));
    // Commands name the datasets by variable, not by this machine's paths.
    assert!(table.contains("$KITH_DATASETS/email-Eu-core.txt.gz"), "{table}");

    // --resume keeps what is done: nothing runs again.
    let before = manifest["steps"][1]["started"].clone();
    let said = ok(&["experiment", "all", "--quick", "--out", p(&out), "--resume"]);
    let n = steps.len();
    assert!(said.contains(&format!("{n} of {n} steps done (0 this time")), "{said}");
    let again = json(&std::fs::read_to_string(out.join("manifest.json")).unwrap());
    assert_eq!(again["steps"][1]["started"], before);

    // A full run refuses a quick run's directory.
    let err = fails(&["experiment", "all", "--out", p(&out), "--only", "bondhu-example"]);
    assert!(err.contains("records a --quick run"), "{err}");
}

#[test]
fn bad_selections_and_missing_datasets() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let err = fails(&["experiment", "all", "--quick", "--out", p(&out), "--only", "twibo,nope"]);
    assert!(err.contains("no step named \"nope\"") && err.contains("bondhu-example"), "{err}");
    let err = fails(&["experiment", "all", "--quick", "--out", p(&out), "--doc", "x.md"]);
    assert!(err.contains("--doc with --quick"), "{err}");
    // A missing dataset skips its step, says which file, and the run goes on.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let args = ["experiment", "all", "--quick", "--out", p(&out), "--datasets", p(&empty)];
    ok(&[&args[..], &["--only", "bondhu-example,bondhu-models"]].concat());
    let manifest = json(&std::fs::read_to_string(out.join("manifest.json")).unwrap());
    let step = |name: &str| {
        manifest["steps"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap().clone()
    };
    assert_eq!(step("bondhu-example")["status"], "ok");
    assert_eq!(step("bondhu-models")["status"], "skipped");
    assert!(step("bondhu-models")["reason"].as_str().unwrap().contains("email-Eu-core.txt.gz"));
    assert_eq!(step("twibo")["status"], "not-run");
    let table = std::fs::read_to_string(out.join("reproduction.md")).unwrap();
    assert!(table.contains("not run (missing"), "{table}");
}
