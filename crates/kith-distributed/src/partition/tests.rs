use std::path::Path;

use kith_analytics::InGraph;
use kith_graph::Graph;
use kith_graph::durable::StdFs;

use super::*;
use crate::part::{ExchangeMode, Part, owner};

/// A seeded random graph: `n` users with ids 10, 20, ..., about `m` edges.
fn random_graph(n: u32, m: usize, directed: bool, seed: u64) -> Graph {
    let mut x = seed;
    let mut next = || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) as u32 % n
    };
    let edges = (0..m).map(|_| (next(), next())).filter(|(a, b)| a != b).collect();
    Graph::from_edges((0..u64::from(n)).map(|i| 10 * i).collect(), directed, edges)
}

fn write(g: &InGraph, parts: usize, dir: &Path) -> PartitionMeta {
    write_partition(&StdFs, g, 123, "test", parts, dir, |_| {}).unwrap()
}

fn assert_same_lists(got: &InGraph, want: &InGraph, keep: impl Fn(u32) -> bool) {
    assert_eq!(got.num_vertices(), want.num_vertices());
    assert_eq!(got.original_ids(), want.original_ids());
    assert_eq!(got.is_symmetric(), want.is_symmetric());
    for v in 0..want.num_vertices() as u32 {
        assert_eq!(got.out_degree(v), want.out_degree(v), "out-degree of {v}");
        let expected: &[u32] = if keep(v) { want.in_links(v) } else { &[] };
        assert_eq!(got.in_links(v), expected, "in-links of {v}");
    }
}

#[test]
fn every_part_read_back_is_the_whole_graph() {
    for directed in [true, false] {
        let g = InGraph::new(&random_graph(500, 3000, directed, 7));
        for parts in [1, 2, 3, 5] {
            let dir = tempfile::tempdir().unwrap();
            let meta = write(&g, parts, dir.path());
            assert_eq!(meta.parts, parts);
            assert_eq!(meta.directed, directed);
            assert_eq!(meta.in_links, g.num_in_links() as u64);
            let back = read_parts(dir.path(), &read_meta(dir.path()).unwrap(), 0..parts).unwrap();
            assert_same_lists(&back, &g, |_| true);
        }
    }
}

#[test]
fn some_parts_hold_their_own_in_links_and_build_the_same_worker_parts() {
    let g = InGraph::new(&random_graph(400, 4000, true, 3));
    let dir = tempfile::tempdir().unwrap();
    let meta = write(&g, 6, dir.path());
    for range in [0..2, 2..4, 5..6] {
        let some = read_parts(dir.path(), &meta, range.clone()).unwrap();
        assert_same_lists(&some, &g, |v| range.contains(&owner(v, 6)));
        assert!(some.num_in_links() < g.num_in_links());
        for w in range {
            let (a, _) = Part::build(&some, w, 6, ExchangeMode::FetchOnce);
            let (b, _) = Part::build(&g, w, 6, ExchangeMode::FetchOnce);
            assert_eq!((a.locals(), a.slots()), (b.locals(), b.slots()));
            for s in 0..a.slots() as u32 {
                assert_eq!(a.global(s), b.global(s));
                assert_eq!(a.out_degree(s), b.out_degree(s));
            }
            for s in 0..a.locals() as u32 {
                assert_eq!(a.in_links(s), b.in_links(s));
            }
        }
    }
}

#[test]
fn damaged_files_are_refused_by_name() {
    let g = InGraph::new(&random_graph(300, 2000, false, 11));
    let dir = tempfile::tempdir().unwrap();
    let meta = write(&g, 3, dir.path());
    let part = part_path(dir.path(), 1);
    let good = std::fs::read(&part).unwrap();
    let err = |bytes: &[u8]| {
        std::fs::write(&part, bytes).unwrap();
        read_parts(dir.path(), &meta, 0..3).unwrap_err().to_string()
    };
    // A flipped bit in the in-links, a truncated file, a part written for another count.
    let mut flipped = good.clone();
    let at = flipped.len() - 20;
    flipped[at] ^= 1;
    let e = err(&flipped);
    assert!(e.contains("part-1.kpart") && e.contains("checksum"), "{e}");
    let e = err(&good[..good.len() - 4]);
    assert!(e.contains("part-1.kpart") && e.contains("truncated"), "{e}");
    let mut header = good.clone();
    header[20] = 4;
    let e = err(&header);
    assert!(e.contains("does not match meta.json"), "{e}");
    std::fs::write(&part, &good).unwrap();
    // Parts of another process count are not this partition's.
    assert!(read_parts(dir.path(), &meta, 2..4).is_err());
    std::fs::remove_file(&part).unwrap();
    let e = read_parts(dir.path(), &meta, 0..3).unwrap_err().to_string();
    assert!(e.contains("part-1.kpart"), "{e}");
}

#[test]
fn meta_is_checked_and_directories_are_guarded() {
    let g = InGraph::new(&random_graph(100, 500, true, 5));
    let dir = tempfile::tempdir().unwrap();
    // Not a partition: no meta.json.
    let e = read_meta(dir.path()).unwrap_err().to_string();
    assert!(e.contains("meta.json") && e.contains("kith graph partition"), "{e}");
    // A directory with other files is not written into.
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let e = write_partition(&StdFs, &g, 1, "t", 2, dir.path(), |_| {}).unwrap_err().to_string();
    assert!(e.contains("refusing"), "{e}");
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "mine");
    // Partitioned again with fewer parts: the old parts are gone.
    let dir = tempfile::tempdir().unwrap();
    write(&g, 4, dir.path());
    let meta = write(&g, 2, dir.path());
    assert!(!part_path(dir.path(), 3).exists());
    assert_same_lists(&read_parts(dir.path(), &meta, 0..2).unwrap(), &g, |_| true);
    // meta.json that lies about its parts.
    let path = dir.path().join("meta.json");
    let text = std::fs::read_to_string(&path).unwrap().replace("\"parts\": 2", "\"parts\": 3");
    std::fs::write(&path, text).unwrap();
    let e = read_meta(dir.path()).unwrap_err().to_string();
    assert!(e.contains("part_links"), "{e}");
    std::fs::write(&path, "{").unwrap();
    assert!(read_meta(dir.path()).unwrap_err().to_string().contains("malformed"));
    assert!(write_partition(&StdFs, &g, 1, "t", 0, dir.path(), |_| {}).is_err());
}

#[test]
fn foreign_directories_are_refused_and_interrupted_writes_cleared() {
    let g = InGraph::new(&random_graph(100, 500, true, 9));
    // Another tool's meta.json is not a partition: nothing is deleted.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("meta.json"), "{\"tool\": \"other\"}").unwrap();
    std::fs::write(dir.path().join("part-0.kpart"), "theirs").unwrap();
    let e = write_partition(&StdFs, &g, 1, "t", 2, dir.path(), |_| {}).unwrap_err().to_string();
    assert!(e.contains("refusing"), "{e}");
    assert_eq!(std::fs::read_to_string(dir.path().join("part-0.kpart")).unwrap(), "theirs");
    // A write that stopped before meta.json left parts and a temporary file: cleared.
    let dir = tempfile::tempdir().unwrap();
    write(&g, 4, dir.path());
    std::fs::remove_file(dir.path().join("meta.json")).unwrap();
    std::fs::write(dir.path().join(".part-2.kpart.tmp4242"), "half").unwrap();
    let meta = write(&g, 2, dir.path());
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["meta.json", "part-0.kpart", "part-1.kpart", "vertices.kpart"]);
    assert_same_lists(&read_parts(dir.path(), &meta, 0..2).unwrap(), &g, |_| true);
    let too_many = write_partition(&StdFs, &g, 1, "t", (1 << 16) + 1, dir.path(), |_| {});
    assert!(too_many.unwrap_err().to_string().contains("--parts"));
}
