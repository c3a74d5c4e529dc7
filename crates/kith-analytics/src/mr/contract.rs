//! The MapReduce contract: what a job sees of an engine. A job is written against
//! [`MrEngine`] and runs rounds of map and reduce, emitting records through [`Emit`] and
//! reading each key's values as a [`Group`]; the local spilling engine (`local.rs`) and
//! kith-distributed's timely engine both implement it, so the study's jobs (`jobs.rs`) run
//! unchanged on either.

use crate::engine::InGraph;
use crate::error::Result;

/// Where a round's map reads from.
#[derive(Debug)]
pub enum Input<'a, D> {
    /// The graph in memory: one record per vertex, its id and its in-links (on a
    /// distributed engine, the vertices the worker owns).
    Graph(&'a InGraph),
    /// A previous round's output.
    Records(D),
}

/// Where records go: the map side's shuffle, or the reduce side's output.
pub trait Emit {
    /// Emits a record.
    fn emit(&mut self, key: u64, value: &[u32]);
}

/// A MapReduce engine. The study's jobs are written against it: every worker of a
/// distributed engine runs the same job code on its own share of the records.
pub trait MrEngine {
    /// A round's output, the next round's input.
    type Data;

    /// Runs one round: map every input record, shuffle by key, reduce every key's group.
    ///
    /// # Errors
    /// The engine's: I/O for spilling engines, communication for distributed ones.
    fn round(
        &mut self,
        name: &'static str,
        input: Input<'_, Self::Data>,
        map: impl FnMut(u64, &[u32], &mut dyn Emit),
        reduce: impl FnMut(u64, &Group, &mut dyn Emit),
    ) -> Result<Self::Data>;

    /// Reads a round's output, record by record (on a distributed engine, every worker's
    /// records on worker 0 and none on the others).
    ///
    /// # Errors
    /// As [`MrEngine::round`].
    fn read(&mut self, data: Self::Data, each: impl FnMut(u64, &[u32])) -> Result<()>;

    /// `local` summed over all workers (on one machine, `local`).
    ///
    /// # Errors
    /// As [`MrEngine::round`].
    fn sum(&mut self, local: u64) -> Result<u64>;
}

/// The values of one key, in the order they were emitted.
#[derive(Debug, Default)]
pub struct Group {
    arena: Vec<u32>,
    ends: Vec<usize>,
}

impl Group {
    /// Empties the group for the next key.
    pub fn clear(&mut self) {
        self.arena.clear();
        self.ends.clear();
    }

    /// Adds a value.
    pub fn push(&mut self, value: &[u32]) {
        self.arena.extend_from_slice(value);
        self.ends.push(self.arena.len());
    }

    /// The values.
    pub fn values(&self) -> impl Iterator<Item = &[u32]> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(self.ends.iter().copied()).map(|(s, e)| &self.arena[s..e])
    }
}
