//! Dense vertex ids and compressed sparse rows: one offset per vertex into a flat array of
//! neighbour ids.

/// A dense vertex id: `0..graph.num_nodes()`.
pub type VertexId = u32;

/// The most vertices a graph can have: dense ids are `u32`.
pub(crate) const MAX_VERTICES: usize = u32::MAX as usize;

/// An immutable adjacency structure in compressed-sparse-row form.
///
/// **Invariant: every neighbour list is sorted strictly ascending (no duplicates), every
/// target is `< num_vertices`, and `offsets` is non-decreasing with `offsets[0] == 0` and
/// `offsets[n] == targets.len()`.** Constructors in this crate establish it; the snapshot
/// loader checks it, so no later code has to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csr {
    pub(crate) offsets: Vec<u64>,
    pub(crate) targets: Vec<VertexId>,
}

impl Csr {
    /// Builds a CSR from edges packed as `source << 32 | target` (see [`unpack`]), sorted and
    /// free of duplicates, so that sorting the keys sorts by source then target.
    pub(crate) fn from_sorted_keys(num_vertices: usize, keys: &[u64]) -> Self {
        let mut offsets = vec![0u64; num_vertices + 1];
        for &k in keys {
            offsets[unpack(k).0 as usize + 1] += 1;
        }
        prefix_sum(&mut offsets);
        let targets = keys.iter().map(|&k| unpack(k).1).collect();
        Csr { offsets, targets }
    }

    /// The number of vertices (rows).
    pub fn num_vertices(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The number of adjacency entries.
    pub fn num_entries(&self) -> usize {
        self.targets.len()
    }

    /// The sorted neighbour list of `v`.
    #[inline]
    pub fn neighbors(&self, v: VertexId) -> &[VertexId] {
        let (start, end) = self.range(v);
        &self.targets[start..end]
    }

    /// The positions of `v`'s entries in the flat target array, for per-entry data such as
    /// edge weights.
    #[inline]
    pub fn range(&self, v: VertexId) -> (usize, usize) {
        let v = v as usize;
        (self.offsets[v] as usize, self.offsets[v + 1] as usize)
    }

    /// The number of neighbours of `v`.
    #[inline]
    pub fn degree(&self, v: VertexId) -> usize {
        let (start, end) = self.range(v);
        end - start
    }

    /// The offsets array (`num_vertices + 1` entries).
    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }

    /// The flat array of neighbour ids.
    pub fn targets(&self) -> &[VertexId] {
        &self.targets
    }

    /// The transpose: for every entry `u -> v`, an entry `v -> u`. Lists stay sorted because
    /// sources are visited in ascending order.
    pub(crate) fn transpose(&self) -> Csr {
        let n = self.num_vertices();
        let mut offsets = vec![0u64; n + 1];
        for &v in &self.targets {
            offsets[v as usize + 1] += 1;
        }
        prefix_sum(&mut offsets);
        let mut cursor: Vec<u64> = offsets[..n].to_vec();
        let mut targets = vec![0 as VertexId; self.targets.len()];
        for u in 0..n as VertexId {
            for &v in self.neighbors(u) {
                let slot = &mut cursor[v as usize];
                targets[*slot as usize] = u;
                *slot += 1;
            }
        }
        Csr { offsets, targets }
    }

    /// Checks the type invariant, describing the first violation found.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let n = self.num_vertices();
        if self.offsets.first() != Some(&0) {
            return Err("adjacency offsets do not start at 0".into());
        }
        if *self.offsets.last().unwrap_or(&0) != self.targets.len() as u64 {
            return Err("adjacency offsets do not end at the number of entries".into());
        }
        if let Some(w) = self.offsets.windows(2).position(|w| w[0] > w[1]) {
            return Err(format!("adjacency offsets decrease at vertex {w}"));
        }
        for v in 0..n as VertexId {
            let list = self.neighbors(v);
            if let Some(&bad) = list.iter().find(|&&t| t as usize >= n) {
                return Err(format!("vertex {v} has neighbour {bad}, beyond {n} vertices"));
            }
            if list.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!("neighbour list of vertex {v} is not strictly ascending"));
            }
        }
        Ok(())
    }
}

/// Splits an edge packed as `source << 32 | target`.
#[inline]
pub(crate) fn unpack(key: u64) -> (VertexId, VertexId) {
    ((key >> 32) as VertexId, key as VertexId)
}

pub(crate) fn prefix_sum(counts: &mut [u64]) {
    let mut acc = 0;
    for c in counts.iter_mut() {
        acc += *c;
        *c = acc;
    }
}
