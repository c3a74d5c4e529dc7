//! The fault trials at a small count, on a 3-node cluster of their own (127.0.5.1-4): one node
//! of three killed and restarted, two of three killed, a fourth node added, each under a
//! stream of QUORUM writes. No acknowledged write may be lost or torn, no write acknowledged
//! without a quorum, and every fault must heal. `kith bench cassandra` runs them at full count.

use std::time::Duration;

use kith_cassandra::trials::{TrialConfig, run};

#[test]
fn no_acknowledged_write_is_lost_when_nodes_die_or_join() {
    let config = TrialConfig {
        runs: 1,
        phase: Duration::from_secs(3),
        progress: true,
        ..TrialConfig::default()
    };
    let runs = run(&config).unwrap();
    let names: Vec<&str> = runs.iter().map(|r| r.trial).collect();
    assert_eq!(names, ["one_of_three", "two_of_three", "add_node"]);
    for r in &runs {
        assert!(r.acknowledged > 50, "{r:?}");
        assert_eq!(
            (r.lost, r.lost_on_restarted_node, r.torn, r.false_acknowledgements),
            (0, 0, 0, 0),
            "{r:?}"
        );
        let other: u64 = r.failed.iter().filter(|(k, _)| *k != "unavailable").map(|(_, n)| n).sum();
        assert_eq!(other, 0, "failures other than unavailability: {r:?}");
    }
    // Two of three down: writes were refused while they were, and resumed after one returned.
    assert!(runs[1].failed.get("unavailable").copied().unwrap_or(0) > 0, "{:?}", runs[1]);
    // Meanwhile eventual reads (ONE) were answered by the survivor and strong ones were not.
    let r = &runs[1];
    assert!(r.reads_while_down > 0, "{r:?}");
    assert_eq!((r.one_reads_answered, r.strong_reads_answered), (r.reads_while_down, 0), "{r:?}");
    assert!(runs[2].added_node_bytes > 0, "the new node holds no data: {:?}", runs[2]);
}
