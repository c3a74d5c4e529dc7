//! `kith-analytics`' vertex programs for the distributed engine: the same computations,
//! with slots for ids (a slot's global id where the id itself matters) and PageRank's
//! dangling mass and L1 change summed over workers. The list-valued programs' results are
//! read back here too: triangle counts and common-friend lists from their [`Lists`].

use kith_analytics::{
    Formulation, MutualFriends, PageRankConfig, UNREACHABLE, contribution, next_distance,
    next_hops, next_rank, sum_contributions,
};
use kith_graph::for_each_common;
use serde::{Deserialize, Serialize};

use crate::engine::{Ctx, Program, Totals};
use crate::part::Part;

/// PageRank in either formulation.
#[derive(Clone, Debug)]
pub struct PageRank {
    config: PageRankConfig,
    n: f64,
    dangling: f64,
    contrib: Vec<f64>,
}

impl PageRank {
    /// PageRank of a graph of `n` vertices.
    pub fn new(config: PageRankConfig, n: usize) -> PageRank {
        PageRank { config, n: n.max(1) as f64, dangling: 0.0, contrib: Vec::new() }
    }
}

impl Program for PageRank {
    type Value = f64;

    fn describe(&self) -> String {
        let c = &self.config;
        format!(
            "pagerank {:?} damping {} iterations {} tolerance {}",
            c.formulation, c.damping, c.iterations, c.tolerance
        )
    }

    fn max_steps(&self) -> usize {
        self.config.iterations
    }

    fn init(&self, _: u32, _: &Part) -> f64 {
        match self.config.formulation {
            Formulation::LfGraph => 1.0,
            Formulation::Normalized => 1.0 / self.n,
        }
    }

    fn before_step(&mut self, _: usize, part: &Part, real: &[f64], totals: &Totals) {
        self.contrib.resize(real.len(), 0.0);
        for (slot, (c, &pr)) in self.contrib.iter_mut().zip(real).enumerate() {
            let out = part.out_degree(slot as u32);
            *c = contribution(pr, out);
        }
        self.dangling = totals.dangling / self.n;
    }

    fn compute(&self, ctx: &Ctx<'_, f64>) -> Option<f64> {
        let sum = sum_contributions(&self.contrib, ctx.in_links());
        let new = next_rank(&self.config, self.n, sum, self.dangling);
        (new != *ctx.own()).then_some(new)
    }

    fn dangling(&self, value: &f64) -> f64 {
        if self.config.formulation == Formulation::Normalized { *value } else { 0.0 }
    }

    fn delta(&self, old: &f64, new: &f64) -> f64 {
        (new - old).abs()
    }

    fn stop(&mut self, _: usize, totals: &Totals) -> bool {
        self.config.tolerance > 0.0 && totals.delta < self.config.tolerance
    }
}

/// Hop distances from a source (a global dense id).
#[derive(Clone, Debug)]
pub struct Hops {
    /// The source's global dense id.
    pub source: u32,
}

impl Program for Hops {
    type Value = u32;

    fn describe(&self) -> String {
        format!("sssp hops from {}", self.source)
    }

    fn max_steps(&self) -> usize {
        usize::MAX
    }

    fn init(&self, v: u32, part: &Part) -> u32 {
        if part.global(v) == self.source { 0 } else { UNREACHABLE }
    }

    fn compute(&self, ctx: &Ctx<'_, u32>) -> Option<u32> {
        next_hops(*ctx.own(), ctx.changed_in_links().map(|u| *ctx.value(u)))
    }
}

/// Weighted distances from a source (Bellman–Ford; weights must not be negative).
#[derive(Clone, Debug)]
pub struct Distances {
    /// The source's global dense id.
    pub source: u32,
}

impl Program for Distances {
    type Value = f64;

    fn describe(&self) -> String {
        format!("sssp weighted from {}", self.source)
    }

    fn max_steps(&self) -> usize {
        usize::MAX
    }

    fn init(&self, v: u32, part: &Part) -> f64 {
        if part.global(v) == self.source { 0.0 } else { f64::INFINITY }
    }

    fn compute(&self, ctx: &Ctx<'_, f64>) -> Option<f64> {
        next_distance(*ctx.own(), ctx.changed_weighted_in_links().map(|(u, w)| (*ctx.value(u), w)))
    }
}

/// Connected components by label propagation: the smallest global dense id reached.
#[derive(Clone, Copy, Debug)]
pub struct MinLabel;

impl Program for MinLabel {
    type Value = u32;

    fn describe(&self) -> String {
        "cc label propagation".into()
    }

    fn max_steps(&self) -> usize {
        usize::MAX
    }

    fn init(&self, v: u32, part: &Part) -> u32 {
        part.global(v)
    }

    fn compute(&self, ctx: &Ctx<'_, u32>) -> Option<u32> {
        let own = *ctx.own();
        let best = ctx.changed_in_links().map(|u| *ctx.value(u)).min().unwrap_or(own);
        (best < own).then_some(best)
    }
}

/// A list-valued program's value: the friend list (global ids, ascending) published before
/// step 0, then the result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Lists {
    /// Friends, before step 0.
    Friends(Vec<u32>),
    /// Triangles through the vertex.
    Count(u64),
    /// For each friend `b` with a higher id: `b`, the number of common friends, and them.
    Common(Vec<u32>),
}

fn friends(v: u32, part: &Part) -> Lists {
    Lists::Friends(part.in_links(v).iter().map(|&u| part.global(u)).collect())
}

/// Triangles through each vertex: `½ Σ |N(v) ∩ N(u)|` over friends `u` (undirected graph).
#[derive(Clone, Copy, Debug)]
pub struct TriangleLists;

impl Program for TriangleLists {
    type Value = Lists;

    fn describe(&self) -> String {
        "triangles lists".into()
    }

    fn max_steps(&self) -> usize {
        1
    }

    fn init(&self, v: u32, part: &Part) -> Lists {
        friends(v, part)
    }

    fn compute(&self, ctx: &Ctx<'_, Lists>) -> Option<Lists> {
        let Lists::Friends(own) = ctx.own() else { return None };
        let twice: usize = ctx
            .in_links()
            .iter()
            .map(|&u| match ctx.value(u) {
                Lists::Friends(theirs) => kith_graph::intersection_size(own, theirs),
                Lists::Count(_) | Lists::Common(_) => 0,
            })
            .sum();
        Some(Lists::Count(twice as u64 / 2))
    }
}

/// Mutual friends of every friendship, answered by its lower end (undirected graph).
#[derive(Clone, Copy, Debug)]
pub struct MutualLists;

impl Program for MutualLists {
    type Value = Lists;

    fn describe(&self) -> String {
        "mutual friends lists".into()
    }

    fn max_steps(&self) -> usize {
        1
    }

    fn init(&self, v: u32, part: &Part) -> Lists {
        friends(v, part)
    }

    fn compute(&self, ctx: &Ctx<'_, Lists>) -> Option<Lists> {
        let Lists::Friends(own) = ctx.own() else { return None };
        let part = ctx.part();
        let v = part.global(ctx.vertex());
        let mut out = Vec::new();
        for &u in ctx.in_links() {
            let b = part.global(u);
            let (true, Lists::Friends(theirs)) = (b > v, ctx.value(u)) else { continue };
            out.push(b);
            let at = out.len();
            out.push(0);
            for_each_common(own, theirs, |i, _| out.push(own[i]));
            out[at] = (out.len() - at - 1) as u32;
        }
        Some(Lists::Common(out))
    }
}

/// Triangles through each vertex from [`TriangleLists`]' values.
pub fn triangle_counts(values: &[Lists]) -> Vec<u64> {
    values.iter().map(|v| if let Lists::Count(c) = v { *c } else { 0 }).collect()
}

/// Every friendship's common friends from [`MutualLists`]' values (global dense ids).
pub fn mutual_friends(values: &[Lists]) -> MutualFriends {
    let mut lists = Vec::new();
    for (a, value) in values.iter().enumerate() {
        let Lists::Common(flat) = value else { continue };
        let mut i = 0;
        while i + 1 < flat.len() {
            let (b, count) = (flat[i], flat[i + 1] as usize);
            lists.push(((a as u32, b), flat[i + 2..i + 2 + count].to_vec()));
            i += 2 + count;
        }
    }
    MutualFriends::from_lists(lists)
}
