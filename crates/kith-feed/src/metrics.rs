//! The feed's Prometheus metrics: cache lookups, fan-out, write-back, timeline builds.

use prometheus::{IntCounter, IntCounterVec, IntGauge, Opts, Registry};

use crate::journal::JournalCounters;

/// The counters and gauges a feed keeps, registered in the server's registry.
pub(crate) struct Metrics {
    pub(crate) cache: IntCounterVec,
    pub(crate) fanout_depth: IntGauge,
    pub(crate) fanout_deliveries: IntCounter,
    pub(crate) fanout_errors: IntCounter,
    pub(crate) pending: IntGauge,
    pub(crate) flushed: IntCounter,
    pub(crate) timeline_builds: IntCounter,
    pub(crate) cache_errors: IntCounter,
    pub(crate) journal: JournalCounters,
}

impl Metrics {
    pub(crate) fn new(registry: &Registry) -> Metrics {
        let cache = IntCounterVec::new(
            Opts::new("kith_cache_requests_total", "Cache lookups by kind and result"),
            &["kind", "result"],
        )
        .expect("valid metric");
        let gauge = |name: &str, help: &str| IntGauge::new(name, help).expect("valid metric");
        let counter = |name: &str, help: &str| IntCounter::new(name, help).expect("valid metric");
        let m = Metrics {
            cache,
            fanout_depth: gauge("kith_fanout_queue_depth", "Fan-out jobs queued or running"),
            fanout_deliveries: counter(
                "kith_fanout_deliveries_total",
                "Timelines a post id was offered to",
            ),
            fanout_errors: counter("kith_fanout_errors_total", "Fan-out jobs that failed"),
            pending: gauge(
                "kith_writeback_pending_posts",
                "Posts acknowledged from the journal, not yet in the feed database",
            ),
            flushed: counter("kith_writeback_flushed_total", "Posts moved from journal to store"),
            timeline_builds: counter("kith_timeline_builds_total", "Timelines built by a pull"),
            cache_errors: counter(
                "kith_cache_errors_total",
                "Cache writes that failed after the store write succeeded",
            ),
            journal: JournalCounters::default(),
        };
        let _ = registry.register(Box::new(m.cache.clone()));
        for c in [
            &m.fanout_deliveries,
            &m.fanout_errors,
            &m.flushed,
            &m.timeline_builds,
            &m.cache_errors,
            &m.journal.appends,
            &m.journal.syncs,
            &m.journal.failed,
            &m.journal.damaged_segments,
            &m.journal.damaged_bytes,
        ] {
            let _ = registry.register(Box::new(c.clone()));
        }
        let _ = registry.register(Box::new(m.fanout_depth.clone()));
        let _ = registry.register(Box::new(m.pending.clone()));
        m
    }

    pub(crate) fn hit(&self, kind: &str, hit: bool, n: u64) {
        if n > 0 {
            self.cache.with_label_values(&[kind, if hit { "hit" } else { "miss" }]).inc_by(n);
        }
    }
}
