//! The edges of a symmetric graph cut into tiles for cache-blocked gathers (CSR segmenting
//! in two dimensions): tile `(c, p)` holds the edges `u → v` with `u` in source block `c` (of
//! [`BLOCK`] vertices) and `v` in destination part `p`, each as one `u32` (the two offsets in
//! their block and part), by `u` then `v`. Summing part `p`'s in-links tile by tile reads the
//! contributions of one source block at a time and adds into the sums of one part, so both
//! stay in a core's L2 cache however large the graph: the random reads that dominate a pull
//! step on a graph larger than the cache become cache hits, for four bytes per edge, as many
//! as the pull step's in-link array. Parts are cut by in-links (at most [`BLOCK`] vertices
//! each), so a part of hubs is not one thread's whole step.

use kith_graph::VertexId;
use rayon::prelude::*;

use crate::engine::InGraph;

/// log2 of [`BLOCK`].
const SHIFT: u32 = 16;

/// Vertices per block: a block's `f64` sums (512 KiB) and a source block's `f32` or `f64`
/// contributions (256 or 512 KiB) share a 1 MiB L2 cache.
pub(crate) const BLOCK: usize = 1 << SHIFT;

/// Destination parts start at multiples of this many vertices (or end at `n`), so that a
/// vertex's part is found in a table of `n / ALIGN` entries that stays in cache.
pub(crate) const ALIGN: usize = 256;

/// The tiles of a symmetric graph.
#[derive(Debug)]
pub(crate) struct Tiles {
    n: usize,
    /// Source blocks.
    blocks: usize,
    /// The first vertex of each destination part, and `n` at the end.
    parts: Vec<usize>,
    /// Tile `(c, p)` is `edges[offsets[c · P + p]..offsets[c · P + p + 1]]`, P parts.
    offsets: Vec<usize>,
    edges: Vec<u32>,
}

impl Tiles {
    /// The tiles of `graph`, whose in-links must be its out-links too
    /// ([`InGraph::is_symmetric`]): source block by source block on worker threads, each
    /// walking its vertices' lists in order, so each tile comes out sorted by `u`, then `v`.
    pub(crate) fn new(graph: &InGraph, parts: Vec<usize>) -> Tiles {
        assert!(graph.is_symmetric(), "tiles are built from out-links: a symmetric graph only");
        let n = graph.num_vertices();
        assert!(
            parts.first() == Some(&0)
                && parts.last() == Some(&n)
                && parts.windows(2).all(|w| w[0] < w[1] && w[1] - w[0] <= BLOCK)
                && parts.iter().all(|&p| p % ALIGN == 0 || p == n),
            "parts of at most BLOCK vertices from 0 to n, starting at multiples of ALIGN"
        );
        let blocks = n.div_ceil(BLOCK).max(1);
        let count = parts.len() - 1;
        let mut part_of = vec![0u32; n.div_ceil(ALIGN)];
        for (p, w) in parts.windows(2).enumerate() {
            part_of[w[0] / ALIGN..w[1].div_ceil(ALIGN)].fill(p as u32);
        }
        let part_of: &[u32] = &part_of;
        let first: Vec<u32> = parts.iter().map(|&p| p as u32).collect();
        let part_of = |v: VertexId| part_of[v as usize / ALIGN] as usize;
        let rows = |c: usize| (c * BLOCK) as VertexId..((c + 1) * BLOCK).min(n) as VertexId;
        let (in_offsets, sources, _) = graph.csr();
        // A block's edges, all of its vertices' lists in a row.
        let row_edges = |c: usize| {
            let r = rows(c);
            &sources[in_offsets[r.start as usize] as usize..in_offsets[r.end as usize] as usize]
        };
        let counts: Vec<Vec<usize>> = (0..blocks)
            .into_par_iter()
            .map(|c| {
                // Four tallies, edge by edge in turn: consecutive edges into one part do not
                // wait for each other's increments.
                let mut tally = vec![[0usize; 4]; count];
                let mut quads = row_edges(c).chunks_exact(4);
                for q in &mut quads {
                    tally[part_of(q[0])][0] += 1;
                    tally[part_of(q[1])][1] += 1;
                    tally[part_of(q[2])][2] += 1;
                    tally[part_of(q[3])][3] += 1;
                }
                for &v in quads.remainder() {
                    tally[part_of(v)][0] += 1;
                }
                tally.iter().map(|t| t.iter().sum()).collect()
            })
            .collect();
        let mut offsets = Vec::with_capacity(blocks * count + 1);
        offsets.push(0);
        for &k in counts.iter().flatten() {
            offsets.push(offsets[offsets.len() - 1] + k);
        }
        let mut edges = vec![0u32; offsets[blocks * count]];
        let mut rows_out = Vec::with_capacity(blocks);
        let mut rest: &mut [u32] = &mut edges;
        for c in 0..blocks {
            let (row, tail) = rest.split_at_mut(offsets[(c + 1) * count] - offsets[c * count]);
            rows_out.push(row);
            rest = tail;
        }
        rows_out.into_par_iter().enumerate().for_each(|(c, row)| {
            let base = offsets[c * count];
            let mut cursor: Vec<usize> =
                (0..count).map(|p| offsets[c * count + p] - base).collect();
            for u in rows(c) {
                let local = (u as usize - c * BLOCK) as u32;
                for &v in graph.in_links(u) {
                    let p = part_of(v);
                    row[cursor[p]] = (local << SHIFT) | (v - first[p]);
                    cursor[p] += 1;
                }
            }
        });
        Tiles { n, blocks, parts, offsets, edges }
    }

    /// The first vertex of each destination part, and `n` at the end.
    pub(crate) fn bounds(&self) -> &[usize] {
        &self.parts
    }

    /// Into `sums` (part `p`'s vertices, zeroed first), each vertex's sum of `value(u)` over
    /// its in-links `u`, added in ascending order of `u` (the order of a sequential sum over
    /// its sorted in-links). `value` is indexed by vertex.
    #[inline]
    pub(crate) fn sum_part<T: Copy + Into<f64>>(&self, p: usize, value: &[T], sums: &mut [f64]) {
        let count = self.parts.len() - 1;
        let targets = self.parts[p + 1] - self.parts[p];
        assert!(sums.len() == targets && value.len() == self.n, "a part's sums, every value");
        sums.fill(0.0);
        for c in 0..self.blocks {
            let tile = &self.edges[self.offsets[c * count + p]..self.offsets[c * count + p + 1]];
            let sources = &value[c * BLOCK..((c + 1) * BLOCK).min(self.n)];
            for &e in tile {
                let (u, v) = ((e >> SHIFT) as usize, (e & (BLOCK as u32 - 1)) as usize);
                // SAFETY: `new` stored every edge of tile (c, p) as the offsets of a vertex of
                // block c (`u < sources.len()`) and of a vertex of part p (`v < targets`,
                // which is `sums.len()`, asserted above).
                unsafe { *sums.get_unchecked_mut(v) += (*sources.get_unchecked(u)).into() };
            }
        }
    }
}
