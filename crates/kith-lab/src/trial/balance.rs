//! The clients' load balancer: health checks, the choice of a server for an operation and
//! for its next attempt, and the passive check that leaves out a server answering no one.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

use super::workload::Shared;

impl Shared {
    /// Notes that `server` answered (a request or a health check) just now.
    pub(super) fn answered_now(&self, server: usize) {
        // Non-negative `f64`s order as their bits do.
        self.answered[server].fetch_max(self.ms().to_bits(), std::sync::atomic::Ordering::Relaxed);
    }

    /// A server for a new operation: one the health checks find up, at random (any, when
    /// none is).
    pub(super) fn pick(&self, rng: &mut impl Rng) -> usize {
        let up: Vec<usize> = (0..self.servers.len())
            .filter(|&i| {
                !self.down.get(i).is_some_and(|d| d.load(std::sync::atomic::Ordering::Relaxed))
            })
            .collect();
        match up.len() {
            0 => rng.random_range(0..self.servers.len()),
            k => up[rng.random_range(0..k)],
        }
    }

    /// The server an operation tries after `server`, in ring order, as a load balancer's
    /// retry does: the first not known down that it has not tried (`tried`, one bit per
    /// server), else the first not known down, else the first it has not tried, else the
    /// next one.
    pub(super) fn after(&self, server: usize, tried: u64) -> usize {
        let n = self.servers.len();
        let ring = || (1..n).map(move |k| (server + k) % n);
        let up = |i: &usize| !self.down[*i].load(std::sync::atomic::Ordering::Relaxed);
        let fresh = |i: &usize| *i >= 64 || tried & (1 << *i) == 0;
        ring()
            .find(|i| fresh(i) && up(i))
            .or_else(|| ring().find(up))
            .or_else(|| ring().find(fresh))
            .unwrap_or((server + 1) % n)
    }

    /// Whether `server` has answered no one for half of `patience` (the passive check).
    pub(super) fn silent(&self, server: usize, patience: Duration) -> bool {
        let answered = self.answered[server].load(std::sync::atomic::Ordering::Relaxed);
        silent_for(f64::from_bits(answered), self.ms(), patience)
    }

    /// Checks every server's `GET /health` (500 ms timeout, then 500 ms apart) until
    /// `until`, as a load balancer does: two failures in a row take a server out of new
    /// operations' choices, one success brings it back. Each server has its own loop, so a
    /// server that does not answer delays no other's check.
    pub(super) async fn health_checks(self: Arc<Self>, until: Instant) {
        let shared = self;
        let http = reqwest::Client::new();
        let mut loops = tokio::task::JoinSet::new();
        for i in 0..shared.servers.len() {
            let (shared, http) = (shared.clone(), http.clone());
            loops.spawn(async move {
                let mut failures = 0u32;
                while Instant::now() < until {
                    let ok = http
                        .get(format!("{}/health", shared.servers[i]))
                        .timeout(Duration::from_millis(500))
                        .send()
                        .await
                        .is_ok_and(|r| r.status().is_success());
                    failures = if ok { 0 } else { failures + 1 };
                    if ok {
                        shared.answered_now(i);
                    }
                    // A failure never brings a server back (a client may have left it out).
                    if ok || failures >= 2 {
                        shared.down[i].store(!ok, std::sync::atomic::Ordering::Relaxed);
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            });
        }
        while let Some(done) = loops.join_next().await {
            if let Err(e) = done
                && e.is_panic()
            {
                std::panic::resume_unwind(e.into_panic());
            }
        }
    }
}

/// Whether a server that last answered at `answered_ms` (0: never, so silent once half
/// the patience has passed since the start) has been silent at `now_ms` for at least
/// half the client's patience.
fn silent_for(answered_ms: f64, now_ms: f64, patience: Duration) -> bool {
    now_ms - answered_ms >= patience.as_secs_f64() * 1e3 / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_left_out_only_when_it_answered_no_one_for_half_the_patience() {
        let patience = Duration::from_millis(1000);
        assert!(silent_for(0.0, 1200.0, patience), "never answered");
        assert!(silent_for(1000.0, 1500.0, patience));
        assert!(!silent_for(1000.0, 1499.0, patience), "answered others just now");
        assert!(!silent_for(5000.0, 5000.0, patience));
    }

    #[test]
    fn a_retry_goes_to_the_next_server_not_known_down() {
        let urls = (0..3).map(|i| format!("http://s{i}")).collect();
        let shared = Shared::new(urls, Instant::now());
        assert_eq!(shared.after(2, 0b100), 0);
        shared.down[0].store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(shared.after(2, 0b100), 1, "past the one known down");
        assert_eq!(shared.after(1, 0b110), 2, "one tried before, rather than one known down");
        assert_eq!(shared.after(0, 0b001), 1, "one not tried");
        shared.down[0].store(false, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(shared.after(1, 0b110), 0, "the one not tried");
        shared.down[0].store(true, std::sync::atomic::Ordering::Relaxed);
        shared.down[1].store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(shared.after(2, 0b100), 0, "every other one down: the next");
    }
}
