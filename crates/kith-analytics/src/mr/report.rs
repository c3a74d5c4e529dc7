//! What a MapReduce job reports: per-phase times, per-round records and I/O, and the
//! storage medium its I/O profile calls for, priced on a disk and an SSD cost model.

use super::io::IoCounters;

/// Seconds per phase, as the study reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Phases {
    /// Reading input and running map functions.
    pub map_s: f64,
    /// Sorting buffers by key and writing spill runs.
    pub shuffle_s: f64,
    /// Merging runs: intermediate passes and the final merge that feeds reduce.
    pub merge_s: f64,
    /// Running reduce functions and writing their output.
    pub reduce_s: f64,
}

impl Phases {
    pub(crate) fn add(&mut self, other: &Phases) {
        self.map_s += other.map_s;
        self.shuffle_s += other.shuffle_s;
        self.merge_s += other.merge_s;
        self.reduce_s += other.reduce_s;
    }
}

/// One round of a job.
#[derive(Clone, Debug)]
pub struct RoundReport {
    /// What the round does.
    pub name: &'static str,
    /// Records the map read.
    pub input_records: u64,
    /// Records the map emitted.
    pub map_output_records: u64,
    /// Bytes the map emitted (as encoded on disk).
    pub map_output_bytes: u64,
    /// Distinct keys reduced.
    pub groups: u64,
    /// Records the reduce wrote.
    pub output_records: u64,
    /// Sorted runs spilled (0: the shuffle fit in memory).
    pub spill_runs: u64,
    /// Intermediate merge passes.
    pub merge_passes: u64,
    /// Seconds per phase.
    pub phases: Phases,
    /// I/O of this round.
    pub io: IoCounters,
}

/// What a job did.
#[derive(Clone, Debug)]
pub struct JobReport {
    /// The rounds, in order.
    pub rounds: Vec<RoundReport>,
    /// Seconds per phase over all rounds.
    pub phases: Phases,
    /// I/O over all rounds (including reading the input graph).
    pub io: IoCounters,
    /// The shuffle budget.
    pub memory_bytes: u64,
    /// The share of the budget at which the buffer spills.
    pub spill_percent: f64,
}

impl JobReport {
    /// Bytes of the largest round's map output, as encoded on disk.
    pub fn largest_shuffle_bytes(&self) -> u64 {
        self.rounds.iter().map(|r| r.map_output_bytes).max().unwrap_or(0)
    }

    /// The smallest budget with which no round spills: the largest round's buffer (each
    /// record's value and length, plus its 16-byte key and index entry: 8 bytes more than
    /// on disk) over the spill share.
    pub fn budget_without_spills(&self) -> u64 {
        let held = self
            .rounds
            .iter()
            .map(|r| r.map_output_bytes + 8 * r.map_output_records)
            .max()
            .unwrap_or(0);
        (held as f64 / self.spill_percent.clamp(f64::MIN_POSITIVE, 1.0)).ceil() as u64
    }

    /// Seconds the job's I/O would take on a disk and on an SSD (the models of
    /// [`HDD`] and [`SSD`]).
    pub fn io_estimates(&self) -> (f64, f64) {
        (HDD.seconds(&self.io), SSD.seconds(&self.io))
    }

    /// The storage medium this job's I/O profile calls for, and why (the study's closing
    /// call for application profilers): the I/O is priced on a disk and on an SSD, and the
    /// disk is enough when it costs little more, or little beside the job's own compute.
    pub fn recommendation(&self) -> String {
        let mb = |b: u64| b as f64 / f64::from(1u32 << 20);
        let io = &self.io;
        let moved = io.read_bytes + io.written_bytes;
        let runs: u64 = self.rounds.iter().map(|r| r.spill_runs).sum();
        let seq = 100.0 * io.sequential_fraction();
        let need = mb(self.budget_without_spills()).ceil().max(1.0);
        let (hdd, ssd) = self.io_estimates();
        let p = self.phases;
        let compute = p.map_s + p.shuffle_s + p.merge_s + p.reduce_s;
        let priced = format!(
            "{:.1} MiB moved, {seq:.0}% sequential, {} seeks: about {hdd:.2} s of I/O on a disk, \
             {ssd:.2} s on an SSD, beside {compute:.2} s measured",
            mb(moved),
            io.random_ops
        );
        if runs == 0 {
            format!(
                "memory: every shuffle fit in the {:.0} MiB budget, so the job only streams its \
                 input and round outputs ({priced}); it is compute-bound and any storage medium \
                 will do",
                mb(self.memory_bytes)
            )
        } else if hdd <= 1.25 * ssd || hdd - ssd <= 0.1 * compute {
            format!(
                "HDD: {runs} sorted runs are written and read back mostly as streams ({priced}); \
                 a disk's bandwidth serves it and an SSD would gain little. With --memory-mb \
                 {need:.0} nothing would spill."
            )
        } else {
            format!(
                "SSD: merging {runs} sorted runs reads them interleaved ({priced}); seeks would \
                 dominate on a disk. Or give --memory-mb {need:.0}, and nothing spills."
            )
        }
    }
}

/// A storage medium's cost model: streaming bandwidth and the time of a seek.
#[derive(Clone, Copy, Debug)]
pub struct Medium {
    /// Bytes per second when streaming.
    pub bandwidth: f64,
    /// Seconds lost by an operation that does not continue the previous one.
    pub seek_s: f64,
}

impl Medium {
    /// Seconds to do `io` on this medium.
    pub fn seconds(&self, io: &IoCounters) -> f64 {
        (io.read_bytes + io.written_bytes) as f64 / self.bandwidth
            + io.random_ops as f64 * self.seek_s
    }
}

/// A 7,200 rpm disk: 150 MB/s, 8 ms per seek.
pub const HDD: Medium = Medium { bandwidth: 150e6, seek_s: 8e-3 };
/// A SATA SSD: 500 MB/s, 0.1 ms per random operation.
pub const SSD: Medium = Medium { bandwidth: 500e6, seek_s: 1e-4 };
