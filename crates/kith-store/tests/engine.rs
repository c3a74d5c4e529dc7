//! The engine contract: random operations applied through `&dyn Engine` and to a plain
//! in-memory reference (BTreeMaps) must agree, and paths and neighbourhoods must match a
//! brute-force breadth-first search of the reference (`kith_store::testing::contract`). Each
//! engine is one `#[test]` that hands it one; other engines' crates call it too.

use kith_graph::Graph;
use kith_layout::Layout;
use kith_store::testing::contract;
use kith_store::{BuildOptions, DataSpec, LayoutMeta, build};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

#[test]
fn the_rocksdb_store_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let n = 40u32;
    let edges = (0..90).map(|_| (rng.random_range(0..n), rng.random_range(0..n))).collect();
    let graph = Graph::from_edges((0..u64::from(n)).map(|i| 5 + 3 * i).collect(), false, edges);
    let options = BuildOptions { data: DataSpec::Fixed(20), chunk_bytes: 16, ..Default::default() };
    let layout = Layout::identity(n as usize);
    let store = build(&dir.path().join("s"), &graph, &layout, LayoutMeta::default(), &options);
    contract(&store.unwrap());
}
