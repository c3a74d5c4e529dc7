//! What page refinement counts with: where records fall on pages (`Geometry`, `Span`) and,
//! per query, how many of its members cover each page (`PageCounts`).

use kith_graph::VertexId;
use rayon::prelude::*;

use super::adjacency::Adjacency;

/// Records of `record_bytes` laid contiguously on pages of `page_bytes`, `n` of them.
#[derive(Clone, Copy, Debug)]
pub(super) struct Geometry {
    pub(super) record_bytes: u64,
    pub(super) page_bytes: u64,
    pub(super) n: usize,
}

impl Geometry {
    /// The page the record at `position` starts on (its home page).
    pub(super) fn page_of(self, position: usize) -> u32 {
        (position as u64 * self.record_bytes / self.page_bytes) as u32
    }

    /// The pages the record at `position` covers.
    pub(super) fn span_at(self, position: usize) -> Span {
        let end = position as u64 * self.record_bytes + self.record_bytes - 1;
        Span { first: self.page_of(position), last: (end / self.page_bytes) as u32 }
    }

    /// The positions whose records start on `page`.
    pub(super) fn page_range(self, page: u32) -> std::ops::Range<usize> {
        let start = (u64::from(page) * self.page_bytes).div_ceil(self.record_bytes) as usize;
        let end = (u64::from(page + 1) * self.page_bytes).div_ceil(self.record_bytes) as usize;
        start.min(self.n)..end.min(self.n)
    }

    /// The pages that end in a record straddling into the next page, with that record's
    /// position (the page's last slot).
    pub(super) fn straddling_slots(self) -> impl Iterator<Item = (u32, usize)> {
        let pages = if self.n == 0 { 0 } else { self.page_of(self.n - 1) };
        (0..pages).filter_map(move |page| {
            let last = self.page_range(page).last()?;
            (self.span_at(last).last != page).then_some((page, last))
        })
    }
}

/// Per-query member counts by page.
pub(super) struct PageCounts {
    offsets: Vec<usize>,
    pub(super) len: Vec<u32>,
    entries: Vec<(u32, u32)>,
}

impl PageCounts {
    /// Counts every query's members on each page they cover (`covers`, at most two pages
    /// each); lists are built in parallel, each by sorting its pages. A query is a user's
    /// closed neighbourhood `N[u]`, or with `closed` false the open one `N(u)`, the friends
    /// alone (what a store reads for "list all friends").
    pub(super) fn build(graph: &Adjacency, covers: &[Span], closed: bool) -> PageCounts {
        let n = graph.num_nodes();
        let room = |q: VertexId| (graph.degree(q) + 1) * 2;
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0);
        for q in 0..n as VertexId {
            offsets.push(offsets[q as usize] + room(q));
        }
        let mut entries = vec![(0u32, 0u32); offsets[n]];
        let mut slices = Vec::with_capacity(n);
        let mut rest: &mut [(u32, u32)] = &mut entries;
        for q in 0..n as VertexId {
            let (list, tail) = rest.split_at_mut(room(q));
            slices.push((q, list));
            rest = tail;
        }
        let len: Vec<u32> = slices
            .into_par_iter()
            .map_init(Vec::new, |pages: &mut Vec<u32>, (q, list)| {
                pages.clear();
                let own = closed.then_some(q);
                for v in own.into_iter().chain(graph.neighbors(q).iter().copied()) {
                    let span = covers[v as usize];
                    pages.extend(span.first..=span.last);
                }
                pages.sort_unstable();
                let mut len = 0;
                for &p in pages.iter() {
                    if len > 0 && list[len - 1].0 == p {
                        list[len - 1].1 += 1;
                    } else {
                        list[len] = (p, 1);
                        len += 1;
                    }
                }
                len as u32
            })
            .collect();
        PageCounts { offsets, len, entries }
    }

    pub(super) fn list(&self, q: VertexId) -> &[(u32, u32)] {
        let start = self.offsets[q as usize];
        &self.entries[start..start + self.len[q as usize] as usize]
    }

    pub(super) fn get(&self, q: VertexId, page: u32) -> u32 {
        let list = self.list(q);
        match list.binary_search_by_key(&page, |e| e.0) {
            Ok(i) => list[i].1,
            Err(_) => 0,
        }
    }

    /// Counts one more member of `q` on `page`; true if `q` did not read it before.
    pub(super) fn add(&mut self, q: VertexId, page: u32) -> bool {
        let start = self.offsets[q as usize];
        let len = self.len[q as usize] as usize;
        let list = &mut self.entries[start..start + len + 1];
        match list[..len].binary_search_by_key(&page, |e| e.0) {
            Ok(i) => {
                list[i].1 += 1;
                false
            }
            Err(i) => {
                list.copy_within(i..len, i + 1);
                list[i] = (page, 1);
                self.len[q as usize] += 1;
                true
            }
        }
    }

    /// Counts one member of `q` fewer on `page`; true if `q` no longer reads it.
    pub(super) fn remove(&mut self, q: VertexId, page: u32) -> bool {
        let start = self.offsets[q as usize];
        let len = self.len[q as usize] as usize;
        let list = &mut self.entries[start..start + len];
        let i = list.binary_search_by_key(&page, |e| e.0).expect("the vertex is counted");
        list[i].1 -= 1;
        if list[i].1 == 0 {
            list.copy_within(i + 1..len, i);
            self.len[q as usize] -= 1;
            return true;
        }
        false
    }
}

/// The pages a record covers: the page it starts on and the page it ends on (the next one
/// when it straddles a boundary; records are smaller than a page, so never more).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) first: u32,
    pub(super) last: u32,
}

impl Span {
    pub(super) fn contains(self, page: u32) -> bool {
        self.first <= page && page <= self.last
    }

    /// The pages of `self` not in `other`, at most two.
    pub(super) fn minus(self, other: Span) -> ([u32; 2], usize) {
        let mut out = [0; 2];
        let mut len = 0;
        for page in self.first..=self.last {
            if !other.contains(page) {
                out[len] = page;
                len += 1;
            }
        }
        (out, len)
    }
}
