//! Every real dataset in shared/datasets loads with the counts that its SOURCES.md gives, and
//! survives a round trip through a `.kgraph` snapshot unchanged.

mod common;

use kith_graph::{Cleaning, LoadConfig, Result, load, read_communities};

struct Expect {
    file: &'static str,
    directed: bool,
    nodes: usize,
    edges: u64,
    cleaning: Cleaning,
}

const fn expect(
    file: &'static str,
    directed: bool,
    nodes: usize,
    edges: u64,
    loops: u64,
    dups: u64,
) -> Expect {
    Expect {
        file,
        directed,
        nodes,
        edges,
        cleaning: Cleaning { self_loops_dropped: loops, duplicates_merged: dups },
    }
}

/// From SOURCES.md. Self-loops are dropped, so edge counts are the listed lines less the
/// self-loops; files that list undirected edges in both directions merge half their lines.
const DATASETS: [Expect; 12] = [
    expect("facebook_combined.txt.gz", false, 4_039, 88_234, 0, 0),
    expect("facebook.tar.gz", false, 4_039, 88_234, 0, 86_107),
    expect("soc-brightkite.mtx.gz", false, 56_739, 212_945, 0, 0),
    expect("git_web_ml.zip", false, 37_700, 289_003, 0, 0),
    expect("email-Enron.txt.gz", false, 36_692, 183_831, 0, 183_831),
    expect("ca-GrQc.txt.gz", false, 5_242, 14_496 - 12, 12, 14_484),
    expect("ca-HepTh.txt.gz", false, 9_877, 25_998 - 25, 25, 25_973),
    expect("out.ego-twitter.gz", true, 23_370, 33_101, 0, 0),
    expect("wiki-Vote.txt.gz", true, 7_115, 103_689, 0, 0),
    expect("soc-Slashdot0902.txt.gz", true, 82_168, 948_464 - 78_303, 78_303, 0),
    expect("soc-sign-Slashdot090216.txt.gz", true, 81_867, 545_671, 0, 0),
    expect("email-Eu-core.txt.gz", true, 1_005, 25_571 - 642, 642, 0),
];

#[test]
fn every_dataset_loads_with_its_published_counts() -> Result<()> {
    let dir = common::datasets();
    let tmp = tempfile::tempdir().expect("temp dir");
    for e in &DATASETS {
        let path = dir.join(e.file);
        let g = load(&path, &LoadConfig { directed: e.directed, ..Default::default() })?;
        assert_eq!(g.num_nodes(), e.nodes, "{} nodes", e.file);
        assert_eq!(g.num_edges(), e.edges, "{} edges", e.file);
        assert_eq!(g.cleaning(), e.cleaning, "{} cleaning", e.file);
        assert_eq!(g.is_directed(), e.directed);

        let snapshot = tmp.path().join(format!("{}.kgraph", e.file));
        kith_graph::save(&g, &snapshot)?;
        assert_eq!(load(&snapshot, &LoadConfig::default())?, g, "{} snapshot round trip", e.file);
    }
    Ok(())
}

#[test]
fn directed_files_read_undirected_merge_reciprocal_pairs() -> Result<()> {
    // SOURCES.md: wiki-Vote has 2,927 reciprocal pairs, so 103,689 - 2,927 undirected edges.
    let g = load(&common::datasets().join("wiki-Vote.txt.gz"), &LoadConfig::default())?;
    assert_eq!(g.num_edges(), 103_689 - 2_927);
    assert_eq!(g.cleaning().duplicates_merged, 2_927);
    Ok(())
}

#[test]
fn ego_archive_equals_the_combined_graph() -> Result<()> {
    let dir = common::datasets();
    let combined = load(&dir.join("facebook_combined.txt.gz"), &LoadConfig::default())?;
    let archive = load(&dir.join("facebook.tar.gz"), &LoadConfig::default())?;
    assert_eq!(combined.original_ids(), archive.original_ids());
    for v in 0..combined.num_nodes() as u32 {
        assert_eq!(combined.neighbors(v), archive.neighbors(v));
    }
    Ok(())
}

#[test]
fn community_files_have_their_published_counts() -> Result<()> {
    let dir = common::datasets();
    for (file, communities, members, memberships) in [
        ("com-youtube.top5000.cmty.txt.gz", 5_000, 39_841, 72_959),
        ("com-youtube.all.cmty.txt.gz", 16_386, 52_675, 129_202),
        ("com-dblp.top5000.cmty.txt.gz", 5_000, 93_432, 112_228),
    ] {
        let c = read_communities(&dir.join(file))?;
        assert_eq!(c.len(), communities, "{file}");
        assert_eq!(c.iter().map(Vec::len).sum::<usize>(), memberships, "{file}");
        let distinct: std::collections::HashSet<u64> = c.iter().flatten().copied().collect();
        assert_eq!(distinct.len(), members, "{file}");
    }
    Ok(())
}
