//! Partitions (`kith graph partition`'s directory). A valid three-part partition of a small
//! graph is made once; each input replaces one of its files (the first byte says which:
//! `meta.json`, `vertices.kpart`, or a part) with the rest of the input, and the second says
//! which parts to read and whether to make the `.kpart` checksum right first, so the fuzzer
//! reaches the value checks behind it. A read that succeeds must give a well-formed graph.

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use kith_analytics::InGraph;
use kith_graph::Graph;
use libfuzzer_sys::fuzz_target;
use xxhash_rust::xxh3::xxh3_64;

#[path = "common.rs"]
mod common;

const PARTS: usize = 3;

/// The valid partition's files, by name.
fn valid() -> &'static Vec<(String, Vec<u8>)> {
    static FILES: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    FILES.get_or_init(|| {
        let edges = (0..40u32).flat_map(|v| [(v, (v * 7 + 3) % 40), (v, (v + 1) % 40)]);
        let edges = edges.filter(|(a, b)| a != b).collect();
        let g = Graph::from_edges((0..40).map(|i| 5 * i + 1).collect(), true, edges);
        let dir = common::scratch().join("valid");
        let fs = kith_graph::durable::StdFs;
        kith_distributed::write_partition(&fs, &InGraph::new(&g), 80, "fuzz", PARTS, &dir, |_| {})
            .expect("writing the valid partition");
        let mut names = vec!["meta.json".to_owned(), "vertices.kpart".to_owned()];
        names.extend((0..PARTS).map(|w| format!("part-{w}.kpart")));
        names.into_iter().map(|n| (n.clone(), std::fs::read(dir.join(&n)).unwrap())).collect()
    })
}

fn input_dir() -> PathBuf {
    let dir = common::scratch().join("input");
    std::fs::create_dir_all(&dir).expect("creating the input directory");
    dir
}

fuzz_target!(|data: &[u8]| {
    let [which, how, body @ ..] = data else { return };
    let files = valid();
    let replaced = *which as usize % files.len();
    let dir = input_dir();
    for (i, (name, bytes)) in files.iter().enumerate() {
        let mut bytes = if i == replaced { body.to_vec() } else { bytes.clone() };
        if how & 1 != 0 && name.ends_with(".kpart") && bytes.len() >= 8 {
            let at = bytes.len() - 8;
            let sum = xxh3_64(&bytes[..at]);
            bytes[at..].copy_from_slice(&sum.to_le_bytes());
        }
        std::fs::write(dir.join(name), bytes).expect("writing the input");
    }
    let Ok(meta) = kith_distributed::read_meta(&dir) else { return };
    let start = (how >> 1) as usize % PARTS;
    let end = start + 1 + (how >> 3) as usize % (PARTS - start);
    let Ok(g) = kith_distributed::read_parts(&dir, &meta, start..end) else { return };
    let n = g.num_vertices();
    assert_eq!(n as u64, meta.users);
    assert!(g.original_ids().windows(2).all(|w| w[0] < w[1]), "ids not ascending");
    for v in 0..n as u32 {
        let links = g.in_links(v);
        assert!(links.windows(2).all(|w| w[0] < w[1]), "in-links of {v} not ascending");
        assert!(links.iter().all(|&u| (u as usize) < n), "an in-link of {v} out of range");
    }
});
