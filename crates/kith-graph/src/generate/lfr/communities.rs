//! LFR's communities: their sizes, grown until every vertex fits somewhere, and the
//! placement of vertices into them (steps 2 and 3 of the generator), with the Fenwick tree
//! that draws a community in proportion to its remaining room.

use rand::Rng;
use rand_pcg::Pcg64Mcg;

use crate::csr::VertexId;
use crate::error::{Error, Result};
use crate::generate::powerlaw::PowerLaw;

/// Community sizes drawn from the τ2 power law on `[smin, smax]` summing to exactly `n`.
pub(super) fn community_sizes(
    n: usize,
    smin: usize,
    smax: usize,
    tau2: f64,
    rng: &mut Pcg64Mcg,
) -> Vec<usize> {
    let law = PowerLaw { exponent: tau2, min: smin as f64, max: smax as f64 };
    let mut sizes = Vec::new();
    let mut total = 0;
    while total < n {
        let s = law.sample(rng) as usize;
        let s = s.min(n - total);
        if s < smin && !sizes.is_empty() {
            // Too few vertices left for a community of its own: spread them over others.
            for _ in 0..s {
                let grow: Vec<usize> = (0..sizes.len()).filter(|&i| sizes[i] < smax).collect();
                let i = if grow.is_empty() {
                    rng.random_range(0..sizes.len())
                } else {
                    grow[rng.random_range(0..grow.len())]
                };
                sizes[i] += 1;
            }
        } else {
            sizes.push(s);
        }
        total += s;
    }
    sizes
}

/// Grows communities until every vertex can be placed in one larger than its internal degree.
///
/// With vertices sorted by descending internal degree `k_1 >= k_2 >= ...`, placement succeeds
/// exactly when, for every `j`, the communities larger than `k_j` hold at least `j` vertices.
/// Where that fails (small graphs with a few large hubs), the largest community that is too
/// small is grown to at least `k_j + 1` by absorbing the smallest communities.
pub(super) fn make_room(sizes: &mut Vec<usize>, internal: &[u64]) {
    let mut demand: Vec<u64> = internal.to_vec();
    demand.sort_unstable_by(|a, b| b.cmp(a));
    'restart: loop {
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        let (mut eligible, mut room) = (0, 0usize);
        for (j, &k) in demand.iter().enumerate() {
            while eligible < sizes.len() && sizes[eligible] as u64 > k {
                room += sizes[eligible];
                eligible += 1;
            }
            if room > j {
                continue;
            }
            // Grow the largest community that is too small by absorbing whole communities
            // from the small end (cutting one down would leave it too small for its own
            // members). The surplus stays in the grown community, which may so exceed the
            // requested maximum by less than the smallest community. When the small end cannot
            // reach the size needed, it joins the smallest eligible community instead.
            let grow = eligible;
            let target = k as usize + 1;
            let small_end: usize = sizes[grow..].iter().sum();
            if small_end < target && grow > 0 {
                sizes.truncate(grow);
                sizes[grow - 1] += small_end;
            } else {
                while sizes[grow] < target {
                    let absorbed = sizes.pop().expect("the small end holds at least `target`");
                    sizes[grow] += absorbed;
                }
            }
            continue 'restart;
        }
        return;
    }
}

/// Places every vertex in a community with room whose size exceeds its internal degree,
/// largest internal degree first, choosing among the eligible communities in proportion to
/// their remaining room (a Fenwick tree over communities sorted by size).
pub(super) fn assign(internal: &[u64], sizes: &[usize], rng: &mut Pcg64Mcg) -> Result<Vec<u32>> {
    let mut by_size: Vec<usize> = (0..sizes.len()).collect();
    by_size.sort_by_key(|&c| std::cmp::Reverse(sizes[c]));
    let mut room = Fenwick::new(by_size.iter().map(|&c| sizes[c] as u64).collect());
    let mut order: Vec<usize> = (0..internal.len()).collect();
    order.sort_by_key(|&v| std::cmp::Reverse(internal[v]));
    let mut membership = vec![0u32; internal.len()];
    let mut eligible = 0;
    // Vertices come by descending internal degree, so the eligible prefix only grows.
    for &v in &order {
        while eligible < by_size.len() && sizes[by_size[eligible]] as u64 > internal[v] {
            eligible += 1;
        }
        let available = room.prefix_sum(eligible);
        if available == 0 {
            return Err(Error::InvalidArgument(format!(
                "no community with room is larger than internal degree {}; raise --max-community or lower --max-degree",
                internal[v]
            )));
        }
        let slot = room.find(rng.random_range(0..available));
        room.add(slot, -1);
        membership[v] = by_size[slot] as u32;
    }
    Ok(membership)
}

/// Makes every community's internal stub count even by moving one stub of one member between
/// its internal and external share.
pub(super) fn balance_internal_parity(
    members: &[Vec<VertexId>],
    degree: &[u64],
    internal: &mut [u64],
) {
    for vs in members {
        let sum: u64 = vs.iter().map(|&v| internal[v as usize]).sum();
        if sum.is_multiple_of(2) {
            continue;
        }
        let size = vs.len() as u64;
        let grow = vs.iter().find(|&&v| {
            internal[v as usize] + 1 < size && internal[v as usize] < degree[v as usize]
        });
        match grow {
            Some(&v) => internal[v as usize] += 1,
            None => {
                let &v = vs
                    .iter()
                    .find(|&&v| internal[v as usize] > 0)
                    .expect("odd sum has a positive term");
                internal[v as usize] -= 1;
            }
        }
    }
}

/// A Fenwick (binary indexed) tree of non-negative counts.
struct Fenwick {
    tree: Vec<i64>,
}

impl Fenwick {
    fn new(values: Vec<u64>) -> Fenwick {
        let mut f = Fenwick { tree: vec![0; values.len() + 1] };
        for (i, v) in values.into_iter().enumerate() {
            f.add(i, v as i64);
        }
        f
    }

    fn add(&mut self, index: usize, delta: i64) {
        let mut i = index + 1;
        while i < self.tree.len() {
            self.tree[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// The sum of the first `count` values.
    fn prefix_sum(&self, count: usize) -> u64 {
        let (mut i, mut sum) = (count, 0);
        while i > 0 {
            sum += self.tree[i];
            i -= i & i.wrapping_neg();
        }
        sum as u64
    }

    /// The smallest index whose prefix sum (inclusive) exceeds `target`.
    fn find(&self, mut target: u64) -> usize {
        let mut pos = 0;
        let mut step = (self.tree.len() - 1).next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next < self.tree.len() && (self.tree[next] as u64) <= target {
                target -= self.tree[next] as u64;
                pos = next;
            }
            step /= 2;
        }
        pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn fenwick_finds_by_cumulative_weight() {
        let f = Fenwick::new(vec![3, 0, 2, 5]);
        let found: Vec<usize> = (0..10).map(|t| f.find(t)).collect();
        assert_eq!(found, vec![0, 0, 0, 2, 2, 3, 3, 3, 3, 3]);
        assert_eq!(f.prefix_sum(3), 5);
    }

    #[test]
    fn sizes_cover_every_vertex() {
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        let sizes = community_sizes(10_000, 10, 300, 1.5, &mut rng);
        assert_eq!(sizes.iter().sum::<usize>(), 10_000);
        assert!(sizes.iter().all(|&s| (10..=300).contains(&s)));
    }
}
