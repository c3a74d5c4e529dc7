//! Generator quality: what each generator realises against what was asked, and determinism.

use kith_graph::generate::{
    BaConfig, LfrConfig, RmatConfig, barabasi_albert, fit_power_law_exponent, lfr, mixing, rmat,
};
use kith_graph::{Graph, Result, stats};

fn degrees(g: &Graph) -> Vec<u64> {
    (0..g.num_nodes() as u32).map(|v| g.degree(v) as u64).collect()
}

/// Realised mixing within 0.01 and fitted degree exponent within 0.15 of the request, over a
/// grid of parameters; the mean degree within 5 %.
#[test]
fn lfr_realises_mixing_and_degree_exponent() -> Result<()> {
    for (mu, tau1) in [(0.1, 2.2), (0.3, 2.5), (0.5, 3.0), (0.2, 2.5)] {
        let config =
            LfrConfig { nodes: 40_000, avg_degree: 15.0, mu, tau1, seed: 11, ..Default::default() };
        let g = lfr(&config)?;
        let realised = g.realized_mu();
        assert!((realised - mu).abs() <= 0.01, "mu {mu}: realised {realised}");
        let law = g.degree_law;
        let fitted =
            fit_power_law_exponent(&degrees(&g.graph), law.min.ceil() as u64 + 1, law.max as u64);
        assert!((fitted - tau1).abs() <= 0.15, "tau1 {tau1}: fitted {fitted}");
        let mean = stats(&g.graph).degree.mean;
        assert!((mean - 15.0).abs() <= 0.75, "mean degree {mean}");
        // Nearly every stub is placed: hubs in near-complete communities lose a few.
        assert!(
            (g.stubs_dropped as f64) < 0.03 * 15.0 * 40_000.0,
            "{} stubs dropped",
            g.stubs_dropped
        );
        // Mixing is measured over the same membership the communities report.
        let sizes: usize = g.communities().iter().map(Vec::len).sum();
        assert_eq!(sizes, 40_000);
        assert_eq!(mixing(&g.graph, &g.membership), realised);
    }
    Ok(())
}

#[test]
fn lfr_communities_are_denser_inside() -> Result<()> {
    let g = lfr(&LfrConfig { nodes: 5_000, mu: 0.1, seed: 5, ..Default::default() })?;
    // Every vertex keeps most of its edges inside its community.
    let mut mostly_inside = 0;
    for v in 0..5_000u32 {
        let own = g.membership[v as usize];
        let inside =
            g.graph.neighbors(v).iter().filter(|&&u| g.membership[u as usize] == own).count();
        mostly_inside += usize::from(2 * inside > g.graph.neighbors(v).len());
    }
    assert!(mostly_inside > 4_900, "{mostly_inside} of 5000 mostly inside");
    Ok(())
}

#[test]
fn lfr_rejects_impossible_parameters() {
    let bad = [
        LfrConfig { nodes: 3, ..Default::default() },
        LfrConfig { mu: 1.5, ..Default::default() },
        LfrConfig { avg_degree: 0.5, ..Default::default() },
        LfrConfig { max_degree: Some(10), avg_degree: 20.0, ..Default::default() },
        LfrConfig { max_community: Some(10), ..Default::default() },
        LfrConfig { min_community: Some(1), ..Default::default() },
        LfrConfig { min_community: Some(50), max_community: Some(40), ..Default::default() },
        LfrConfig { tau1: f64::NAN, ..Default::default() },
        LfrConfig { mu: f64::NAN, ..Default::default() },
        LfrConfig { avg_degree: f64::NAN, ..Default::default() },
    ];
    for config in bad {
        assert!(lfr(&config).is_err(), "{config:?} accepted");
    }
}

#[test]
fn rmat_is_deterministic_skewed_and_sized() -> Result<()> {
    let config = RmatConfig { nodes: 1 << 14, avg_degree: 16.0, seed: 3, ..Default::default() };
    let a = rmat(&config)?;
    assert_eq!(a, rmat(&config)?);
    assert_ne!(a, rmat(&RmatConfig { seed: 4, ..config.clone() })?);
    let s = stats(&a);
    // Drawn edges = n * 16 / 2; R-MAT repeats some, never more than a quarter here.
    let drawn = (1u64 << 14) * 8;
    assert!(s.edges <= drawn && s.edges + s.duplicates_merged + s.self_loops_dropped == drawn);
    assert!(s.edges as f64 > 0.75 * drawn as f64, "{} of {drawn}", s.edges);
    // Graph500's parameters give a heavy tail: the hub is far above the mean.
    assert!(s.degree.max as f64 > 20.0 * s.degree.mean, "{:?}", s.degree);
    for avg_degree in [f64::NAN, 0.0, -1.0, 1e300] {
        assert!(rmat(&RmatConfig { avg_degree, ..config.clone() }).is_err(), "{avg_degree}");
    }
    let nan = BaConfig { avg_degree: f64::NAN, ..Default::default() };
    assert!(barabasi_albert(&nan).is_err());
    // Node counts that are not a power of two are respected.
    let odd = rmat(&RmatConfig { nodes: 1000, avg_degree: 8.0, ..Default::default() })?;
    assert_eq!(odd.num_nodes(), 1000);
    Ok(())
}

#[test]
fn barabasi_albert_attaches_m_edges_per_vertex() -> Result<()> {
    let config = BaConfig { nodes: 50_000, avg_degree: 10.0, seed: 2, progress: false };
    let g = barabasi_albert(&config)?;
    assert_eq!(g, barabasi_albert(&config)?);
    let m = 5;
    // A clique of m + 1 vertices, then m edges per later vertex, none lost.
    assert_eq!(g.num_edges(), (m * (m + 1) / 2 + (50_000 - m - 1) * m) as u64);
    assert_eq!(stats(&g).degree.min, m as u64);
    assert_eq!(stats(&g).components, 1);
    // The degree distribution's tail is k^-3 (Barabási & Albert 1999).
    let fitted = fit_power_law_exponent(&degrees(&g), 2 * m as u64, 2_000);
    assert!((fitted - 3.0).abs() < 0.3, "fitted {fitted}");
    Ok(())
}
