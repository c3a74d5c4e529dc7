//! Shortest paths and neighbourhoods on Bondhu's example, against plain BFS distances:
//! the traversals every engine gets, run on the RocksDB store.

use kith_store::{BuildOptions, DataSpec, Engine, LayoutMeta, Store, build};

fn store(dir: &std::path::Path) -> Store {
    let graph = kith_layout::paper_example();
    let layout = kith_layout::Layout::identity(graph.num_nodes());
    let options = BuildOptions { data: DataSpec::Fixed(4), ..BuildOptions::default() };
    build(&dir.join("s"), &graph, &layout, LayoutMeta::default(), &options).unwrap()
}

#[test]
fn paths_are_shortest_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let uids: Vec<u64> = s.get_all_users().map(|r| r.unwrap().0).collect();
    assert_eq!(uids.len(), 7);
    // Brute force: plain BFS distances from every user.
    for &a in &uids {
        let mut dist = std::collections::HashMap::from([(a, 0u32)]);
        let mut q = std::collections::VecDeque::from([a]);
        while let Some(u) = q.pop_front() {
            for v in s.get_all_friends(u).unwrap() {
                if !dist.contains_key(&v) {
                    dist.insert(v, dist[&u] + 1);
                    q.push_back(v);
                }
            }
        }
        for &b in &uids {
            let want = dist.get(&b).copied();
            for max in 0..=6 {
                let got = s.shortest_path(a, b, max).unwrap();
                match (want, &got) {
                    (Some(d), Some(p)) if d <= max => {
                        assert_eq!(p.len() as u32, d + 1, "{a}->{b} max {max}: {p:?}");
                        assert_eq!((p[0], *p.last().unwrap()), (a, b));
                        for w in p.windows(2) {
                            assert!(s.get_all_friends(w[0]).unwrap().contains(&w[1]));
                        }
                    }
                    (Some(d), None) => assert!(d > max, "{a}->{b} max {max}: none, d={d}"),
                    (None, None) => {}
                    _ => panic!("{a}->{b} max {max}: {got:?}, distance {want:?}"),
                }
            }
        }
        let hood = s.neighborhood(a, 2, 100).unwrap();
        let mut want: Vec<(u64, u32)> =
            dist.iter().filter(|&(&v, &d)| v != a && d <= 2).map(|(&v, &d)| (v, d)).collect();
        want.sort_by_key(|&(v, d)| (d, v));
        assert_eq!(hood.users, want);
    }
    assert!(s.shortest_path(1, 99, 3).is_err());
    assert!(s.shortest_path(1, 2, 7).is_err());
    assert!(s.neighborhood(1, 4, 10).is_err());
    assert!(s.neighborhood(1, 1, 1).unwrap().truncated);
}
