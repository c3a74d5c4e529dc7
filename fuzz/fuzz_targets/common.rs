//! What the targets share: a scratch directory per fuzzing process (in memory where the
//! machine has `/dev/shm`) to hand inputs to readers that take paths, and the graph
//! invariants every successful load must hold.

use std::path::PathBuf;
use std::sync::OnceLock;

use kith_graph::Graph;

/// Writes `bytes` to `name` in this process's scratch directory and returns its path.
#[allow(dead_code)]
pub fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let path = scratch().join(name);
    std::fs::write(&path, bytes).expect("writing the input");
    path
}

/// This process's scratch directory: under `KITH_FUZZ_SCRATCH` (which `scripts/fuzz.sh`
/// sets and removes afterwards), else in memory where the machine has `/dev/shm`.
pub fn scratch() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if let Some(d) = std::env::var_os("KITH_FUZZ_SCRATCH") {
            PathBuf::from(d)
        } else if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("kith-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("creating the scratch directory");
        dir
    })
    .clone()
}

/// Panics unless `g` is a well-formed graph: adjacency in range, sorted, without self loops
/// or duplicates, symmetric when undirected, original ids strictly ascending.
#[allow(dead_code)]
pub fn check_graph(g: &Graph) {
    let n = g.num_nodes();
    assert_eq!(g.original_ids().len(), n);
    assert!(g.original_ids().windows(2).all(|w| w[0] < w[1]), "original ids not ascending");
    let mut entries = 0u64;
    for v in 0..n as u32 {
        let adj = g.neighbors(v);
        entries += adj.len() as u64;
        assert!(adj.windows(2).all(|w| w[0] < w[1]), "adjacency of {v} not strictly sorted");
        for &u in adj {
            assert!((u as usize) < n, "neighbour {u} of {v} out of range");
            assert_ne!(u, v, "self loop at {v}");
            if !g.is_directed() {
                assert!(g.neighbors(u).binary_search(&v).is_ok(), "edge {v}-{u} not symmetric");
            }
        }
    }
    if !g.is_directed() {
        assert_eq!(entries % 2, 0);
    }
}
