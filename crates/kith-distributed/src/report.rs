//! What a distributed run reports: per step, compute and exchange time and the value
//! messages and bytes each worker sent (max and mean over workers, so balance shows), and
//! totals.

use serde::{Deserialize, Serialize};

/// One worker's step (or the initial exchange).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct WorkerStep {
    /// Seconds computing its vertices.
    pub compute_s: f64,
    /// Seconds sending, waiting for the round to complete everywhere, and applying.
    pub exchange_s: f64,
    /// Values sent to other workers.
    pub messages: u64,
    /// Their serialised bytes (bincode, as timely sends them between processes).
    pub bytes: u64,
}

/// Max and mean over workers.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Spread {
    /// The largest.
    pub max: f64,
    /// The mean.
    pub mean: f64,
}

impl Spread {
    pub(crate) fn of(values: impl Iterator<Item = f64>) -> Spread {
        let (mut max, mut sum, mut count) = (0.0f64, 0.0, 0usize);
        for v in values {
            max = max.max(v);
            sum += v;
            count += 1;
        }
        Spread { max, mean: sum / count.max(1) as f64 }
    }
}

/// One step over all workers.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepReport {
    /// The step, or `None` for the initial exchange of values.
    pub step: Option<usize>,
    /// Vertices that changed (everywhere).
    pub changed: Option<u64>,
    /// Compute seconds per worker.
    pub compute_s: Spread,
    /// Exchange seconds per worker.
    pub exchange_s: Spread,
    /// Values sent per worker.
    pub messages: Spread,
    /// Bytes sent per worker.
    pub bytes: Spread,
}

/// Traffic over the whole run (initial exchange included).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Exchange {
    /// Values sent between workers.
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The most bytes one worker sent.
    pub max_worker_bytes: u64,
    /// Bytes per worker, on average.
    pub mean_worker_bytes: f64,
}

/// A run over all workers.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// Workers (threads × processes).
    pub workers: usize,
    /// Steps run.
    pub steps: usize,
    /// Seconds building worker 0's part and exchanging subscribe lists.
    pub setup_s: f64,
    /// Wall seconds of the initial exchange and the steps on worker 0 (every round ends
    /// when it is complete everywhere, so this is the run's).
    pub steps_s: f64,
    /// Seconds computing, summed over steps, of the slowest worker in each.
    pub compute_s: f64,
    /// Seconds exchanging, summed over steps (the slowest worker in each).
    pub exchange_s: f64,
    /// Traffic.
    pub exchange: Exchange,
    /// The initial exchange, then each step.
    pub per_step: Vec<StepReport>,
}

impl Report {
    pub(crate) fn new(
        workers: usize,
        steps: usize,
        changed: Vec<u64>,
        (setup_s, steps_s): (f64, f64),
        logs: &[Vec<WorkerStep>],
    ) -> Report {
        let rounds = logs.iter().map(Vec::len).min().unwrap_or(0);
        let per_step: Vec<StepReport> = (0..rounds)
            .map(|r| {
                let at = || logs.iter().map(move |l| l[r]);
                StepReport {
                    step: r.checked_sub(1),
                    changed: r.checked_sub(1).and_then(|s| changed.get(s).copied()),
                    compute_s: Spread::of(at().map(|s| s.compute_s)),
                    exchange_s: Spread::of(at().map(|s| s.exchange_s)),
                    messages: Spread::of(at().map(|s| s.messages as f64)),
                    bytes: Spread::of(at().map(|s| s.bytes as f64)),
                }
            })
            .collect();
        let worker_bytes: Vec<u64> = logs.iter().map(|l| l.iter().map(|s| s.bytes).sum()).collect();
        let exchange = Exchange {
            messages: logs.iter().flatten().map(|s| s.messages).sum(),
            bytes: worker_bytes.iter().sum(),
            max_worker_bytes: worker_bytes.iter().copied().max().unwrap_or(0),
            mean_worker_bytes: worker_bytes.iter().sum::<u64>() as f64 / workers.max(1) as f64,
        };
        Report {
            workers,
            steps,
            setup_s,
            steps_s,
            compute_s: per_step.iter().map(|s| s.compute_s.max).sum(),
            exchange_s: per_step.iter().map(|s| s.exchange_s.max).sum(),
            exchange,
            per_step,
        }
    }
}
