//! Request refinement (objective `requests`): local search on what a cold "list all friends"
//! costs a store that reads the friends' records one request at a time.
//!
//! A store's reader merges adjacent blocks into one request but not blocks with a gap between
//! them, and on a device without seeks a request costs far more than a further block of the
//! same request. So the pages objective, which prices every page alike, leaves time on the
//! table: two friends' pages three blocks apart cost two requests, next to each other one.
//! Here a query is a user's friends `N(u)` (the user's own record is not read), each record
//! counted on its home page, and its cost is [`REQUEST_PAGES`] per run of adjacent pages plus
//! one per page.
//!
//! The search starts from the pages objective's order and swaps records between pages. For
//! each vertex the pages its friends are on (most frequent first, and the pages beside the
//! most frequent) are the targets, screened by the vertex's own move; on the best few, every
//! partner (sampled) is priced exactly from the per-query page counts: a page a query stops
//! or starts reading joins or splits runs by whether the pages beside it are read, and a
//! query holding both records keeps its pages. The best swap
//! is made when it lowers the cost. Rounds repeat over the vertices near a swap while they
//! save more than 0.1 % of the cost, within a bound on the work ([`WORK_PER_ENTRY`]).

use kith_graph::VertexId;
use rand::SeedableRng;
use rand::seq::SliceRandom;

use super::adjacency::Adjacency;
use super::page_counts::{Geometry, PageCounts, Span};

/// What a request costs, in pages. Measured on the VM kith's benchmarks run on, a cold read
/// request costs ~81 µs and each further 4 KiB block of the same request ~3 µs (27 pages); a
/// SATA SSD is nearer 90 µs against 8 µs (11); a disk pays ~4 ms of rotation against 27 µs of
/// transfer (150). 48 sits between this VM and a disk. In trial runs on ego-Facebook at 40 B,
/// figures from 12 to 96 changed the requests per friend list by a few percent each way (fewer
/// for higher figures, for slightly more blocks): the search is not sensitive to the exact
/// figure once it is well above 1.
pub(crate) const REQUEST_PAGES: i64 = 48;

/// The most friends' pages tried as targets per vertex.
const CANDIDATES: usize = 8;
/// The most targets priced with partners, the best by the vertex's own move.
const PRICED: usize = 3;
/// The most partners tried on a target page (sampled when the page holds more records).
const PARTNERS: usize = 24;
/// The most rounds.
const ROUNDS: usize = 8;
/// The search's work bound: query changes priced, per adjacency entry. A round stops once
/// past it. On ego-Facebook it ends the rounds after a few; on the 200 k-user graph `kith demo`
/// generates it keeps the refinement to a few seconds, where the page layout takes about as
/// long.
const WORK_PER_ENTRY: u64 = 64;

struct Search<'g> {
    graph: &'g Adjacency,
    geometry: Geometry,
    order: Vec<VertexId>,
    pos: Vec<u32>,
    /// Per query (open neighbourhood), its members on each home page.
    counts: PageCounts,
    /// Query changes priced so far: the search's work.
    priced: u64,
    /// The most work: a round stops early past it.
    budget: u64,
}

/// The change in runs when a query starts (`sign` 1) or stops (`sign` -1) reading a page,
/// given whether it reads the pages on either side: a page between two read pages joins two
/// runs into one, a page beside none is a run of its own.
fn run_change(left: bool, right: bool, sign: i64) -> i64 {
    match (left, right) {
        (true, true) => -sign,
        (false, false) => sign,
        _ => 0,
    }
}

impl<'g> Search<'g> {
    fn new(graph: &'g Adjacency, order: Vec<VertexId>, geometry: Geometry) -> Search<'g> {
        let pos = crate::layout::inverse(&order);
        let homes: Vec<Span> = pos
            .iter()
            .map(|&p| {
                let page = geometry.page_of(p as usize);
                Span { first: page, last: page }
            })
            .collect();
        let counts = PageCounts::build(graph, &homes, false);
        Search { graph, geometry, order, pos, counts, priced: 0, budget: u64::MAX }
    }

    fn home(&self, v: VertexId) -> u32 {
        self.geometry.page_of(self.pos[v as usize] as usize)
    }

    fn reads(&self, q: VertexId, page: u32) -> bool {
        self.counts.get(q, page) > 0
    }

    /// The cost of every query together.
    fn total(&self) -> i64 {
        (0..self.graph.num_nodes() as VertexId)
            .map(|q| {
                let list = self.counts.list(q);
                let runs = list.windows(2).filter(|w| w[1].0 != w[0].0 + 1).count()
                    + usize::from(!list.is_empty());
                REQUEST_PAGES * runs as i64 + list.len() as i64
            })
            .sum()
    }

    /// Moves `v`'s membership in each of its friends' queries from page `from` to page `to`,
    /// returning the change in cost. Moving back undoes it exactly.
    fn shift(&mut self, v: VertexId, from: u32, to: u32) -> i64 {
        let graph = self.graph;
        let mut change = 0;
        for &q in graph.neighbors(v) {
            if self.counts.remove(q, from) {
                let left = from > 0 && self.reads(q, from - 1);
                let right = self.reads(q, from + 1);
                change += REQUEST_PAGES * run_change(left, right, -1) - 1;
            }
            if self.counts.add(q, to) {
                let left = to > 0 && self.reads(q, to - 1);
                let right = self.reads(q, to + 1);
                change += REQUEST_PAGES * run_change(left, right, 1) + 1;
            }
        }
        change
    }

    /// The change in `q`'s cost if one of its members moved from page `a` to page `t`, no
    /// other member moving.
    fn move_change(&self, q: VertexId, a: u32, t: u32) -> i64 {
        let leaves = self.counts.get(q, a) == 1;
        let arrives = self.counts.get(q, t) == 0;
        if !leaves && !arrives {
            return 0;
        }
        // Whether `q` reads page `p` once the member has left `a`.
        let reads = |p: u32| !(leaves && p == a) && self.reads(q, p);
        let mut change = 0;
        if leaves {
            // `t` is not read yet when the member leaves, or is read already and unaffected.
            let left = a > 0 && self.reads(q, a - 1);
            let right = self.reads(q, a + 1);
            change += REQUEST_PAGES * run_change(left, right, -1) - 1;
        }
        if arrives {
            let left = t > 0 && reads(t - 1);
            let right = reads(t + 1);
            change += REQUEST_PAGES * run_change(left, right, 1) + 1;
        }
        change
    }

    /// Each of `v`'s friends' queries' change if `v` moved from page `a` to page `t` (aligned
    /// with `v`'s neighbours), and their sum.
    fn move_changes(&mut self, v: VertexId, a: u32, t: u32, out: &mut Vec<i64>) -> i64 {
        self.priced += self.graph.degree(v) as u64;
        out.clear();
        out.extend(self.graph.neighbors(v).iter().map(|&q| self.move_change(q, a, t)));
        out.iter().sum()
    }

    /// The cost saved by swapping `v` (on page `a`) with `w` (on page `t`), given `v`'s
    /// changes for its move to `t`: a query holding both keeps its pages.
    fn swap_gain(
        &mut self,
        v: VertexId,
        v_changes: &[i64],
        v_total: i64,
        w: VertexId,
        a: u32,
        t: u32,
    ) -> i64 {
        self.priced += self.graph.degree(w) as u64;
        let friends = self.graph.neighbors(v);
        let mut change = v_total;
        for &q in self.graph.neighbors(w) {
            change += match friends.binary_search(&q) {
                Ok(i) => -v_changes[i],
                Err(_) => self.move_change(q, t, a),
            };
        }
        -change
    }

    /// The target pages of `v`: its friends' pages other than its own, most frequent first,
    /// and the pages on either side of the most frequent two.
    fn targets(&self, v: VertexId, scratch: &mut Vec<u32>, out: &mut Vec<u32>) {
        let own = self.home(v);
        scratch.clear();
        scratch.extend(self.graph.neighbors(v).iter().map(|&u| self.home(u)));
        scratch.sort_unstable();
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for &p in scratch.iter() {
            match runs.last_mut() {
                Some(r) if r.0 == p => r.1 += 1,
                _ => runs.push((p, 1)),
            }
        }
        runs.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        out.clear();
        out.extend(runs.iter().take(CANDIDATES).map(|r| r.0));
        let last = self.geometry.page_of(self.geometry.n - 1);
        for &(p, _) in runs.iter().take(2) {
            for side in [p.checked_sub(1), (p < last).then_some(p + 1)].into_iter().flatten() {
                if !out.contains(&side) {
                    out.push(side);
                }
            }
        }
        out.retain(|&p| p != own);
    }

    /// One pass over `visit`; returns the cost saved.
    fn round(
        &mut self,
        visit: &[VertexId],
        moved: &mut Vec<VertexId>,
        rng: &mut rand_pcg::Pcg64Mcg,
    ) -> i64 {
        let mut saved = 0;
        let (mut scratch, mut targets, mut partners) = (Vec::new(), Vec::new(), Vec::new());
        let (mut changes, mut ranked) = (Vec::new(), Vec::new());
        for &v in visit {
            if self.priced > self.budget {
                break;
            }
            self.targets(v, &mut scratch, &mut targets);
            let a = self.home(v);
            // Screen the targets by `v`'s own move; price swaps on the best few.
            ranked.clear();
            for &t in &targets {
                let total = self.move_changes(v, a, t, &mut changes);
                if total < 0 {
                    ranked.push((total, t));
                }
            }
            ranked.sort_unstable();
            let mut best: Option<(VertexId, u32, i64)> = None;
            for &(_, t) in ranked.iter().take(PRICED) {
                let v_total = self.move_changes(v, a, t, &mut changes);
                partners.clear();
                partners.extend(self.geometry.page_range(t));
                if partners.len() > PARTNERS {
                    partners.shuffle(rng);
                    partners.truncate(PARTNERS);
                }
                for &b in &partners {
                    let w = self.order[b];
                    let gain = self.swap_gain(v, &changes, v_total, w, a, t);
                    if gain > best.map_or(0, |b| b.2) {
                        best = Some((w, t, gain));
                    }
                }
            }
            if let Some((w, t, gain)) = best {
                self.shift(v, a, t);
                self.shift(w, t, a);
                let (pv, pw) = (self.pos[v as usize], self.pos[w as usize]);
                self.order.swap(pv as usize, pw as usize);
                self.pos[v as usize] = pw;
                self.pos[w as usize] = pv;
                saved += gain;
                moved.push(v);
                moved.push(w);
            }
        }
        saved
    }
}

/// Refines `order` (of the graph relabelled by it, so that the search walks memory in order)
/// for records of `record_bytes` on pages of `page_bytes`.
pub(crate) fn refine(
    graph: &Adjacency,
    order: Vec<VertexId>,
    record_bytes: u64,
    page_bytes: u64,
    seed: u64,
) -> Vec<VertexId> {
    let n = order.len();
    if n < 2 || record_bytes >= page_bytes {
        return order;
    }
    let geometry = Geometry { record_bytes, page_bytes, n };
    let mut search = Search::new(graph, order, geometry);
    let total = search.total();
    let entries = (0..n as VertexId).map(|v| graph.degree(v) as u64).sum::<u64>();
    search.budget = WORK_PER_ENTRY * entries;
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed ^ 0x0072_6571_7565);
    graph.rounds(search.order.clone(), ROUNDS, |visit, moved| {
        visit.sort_unstable_by_key(|&v| search.pos[v as usize]);
        let saved = search.round(visit, moved, &mut rng);
        saved as f64 >= 0.001 * total as f64 && search.priced <= search.budget
    });
    search.order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Layout;
    use crate::metrics::friend_reads;

    fn lfr() -> kith_graph::Graph {
        kith_graph::generate::lfr(&kith_graph::generate::LfrConfig {
            nodes: 3_000,
            avg_degree: 16.0,
            seed: 6,
            ..Default::default()
        })
        .unwrap()
        .graph
    }

    /// The search's incremental cost is exactly the metric's requests and pages, before and
    /// after a round, its gains add up, and its counts equal a rebuild from the order.
    #[test]
    fn gains_are_exact_and_counts_follow_every_swap() {
        let g = lfr();
        let adj = Adjacency::from_graph(&g);
        let n = adj.num_nodes() as f64;
        let start = crate::baselines::bfs_order(&g);
        for (record, page) in [(80u64, 4080u64), (40, 4096), (400, 4096)] {
            let geometry = Geometry { record_bytes: record, page_bytes: page, n: start.len() };
            let metric = |order: &[VertexId]| {
                let r =
                    friend_reads(&g, &Layout::from_order(order.to_vec()).unwrap(), record, page);
                (REQUEST_PAGES as f64 * r.requests + r.pages) * n
            };
            let mut search = Search::new(&adj, start.clone(), geometry);
            assert_eq!(search.total() as f64, metric(&search.order).round(), "{record} B");
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
            let mut moved = Vec::new();
            let visit = search.order.clone();
            let before = search.total();
            let saved = search.round(&visit, &mut moved, &mut rng);
            assert!(saved > 0 && !moved.is_empty(), "{record} B");
            assert_eq!(before - search.total(), saved, "{record} B: gains are exact");
            assert_eq!(search.total() as f64, metric(&search.order).round(), "{record} B");
            let fresh = Search::new(&adj, search.order.clone(), geometry);
            for q in 0..adj.num_nodes() as VertexId {
                assert_eq!(search.counts.list(q), fresh.counts.list(q), "query {q}");
            }
        }
    }

    #[test]
    fn refinement_cuts_requests_from_the_pages_order() {
        let g = lfr();
        let adj = Adjacency::from_graph(&g);
        let start = crate::baselines::bfs_order(&g);
        let reads =
            |o: &[VertexId]| friend_reads(&g, &Layout::from_order(o.to_vec()).unwrap(), 80, 4080);
        let before = reads(&start);
        let after = reads(&refine(&adj, start.clone(), 80, 4080, 1));
        assert!(after.requests < before.requests * 0.9, "{before:?} -> {after:?}");
    }
}
