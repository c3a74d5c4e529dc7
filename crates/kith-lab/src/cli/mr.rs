//! The JSON of a single-machine MapReduce job's report, as `kith analyze mr --json` prints
//! it and `kith bench analytics` records it.

use kith_analytics::JobReport;
use serde_json::{Value, json};

/// `phases`, `io`, `recommendation`, `io_estimate_s` and `rounds` of a job's report.
pub fn mr_report_json(report: &JobReport) -> Value {
    let p = report.phases;
    let io = report.io;
    let rounds: Vec<Value> = report
        .rounds
        .iter()
        .map(|r| {
            json!({
                "name": r.name,
                "input_records": r.input_records,
                "map_output_records": r.map_output_records,
                "map_output_bytes": r.map_output_bytes,
                "groups": r.groups,
                "output_records": r.output_records,
                "spill_runs": r.spill_runs,
                "merge_passes": r.merge_passes,
                "phases": {"map_s": r.phases.map_s, "shuffle_s": r.phases.shuffle_s,
                           "merge_s": r.phases.merge_s, "reduce_s": r.phases.reduce_s},
                "io": {"read_bytes": r.io.read_bytes, "written_bytes": r.io.written_bytes,
                       "sequential_fraction": r.io.sequential_fraction()},
            })
        })
        .collect();
    json!({
        "phases": {"map_s": p.map_s, "shuffle_s": p.shuffle_s, "merge_s": p.merge_s, "reduce_s": p.reduce_s},
        "io": {
            "read_bytes": io.read_bytes,
            "written_bytes": io.written_bytes,
            "sequential_fraction": io.sequential_fraction(),
            "sequential_bytes": io.sequential_bytes,
            "random_ops": io.random_ops,
            "ops": io.ops,
            "io_s": io.io_seconds(),
            "spill_runs": report.rounds.iter().map(|r| r.spill_runs).sum::<u64>(),
        },
        "recommendation": report.recommendation(),
        "io_estimate_s": {"hdd": report.io_estimates().0, "ssd": report.io_estimates().1},
        "rounds": rounds,
    })
}
