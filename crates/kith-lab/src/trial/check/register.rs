//! One key's history as a register: its writes (each with the interval it ran in) and a
//! judgement of any value read in an interval. A write that completed before another began
//! is older; a read may return the value of any write that was not yet overwritten when the
//! read began (no acknowledged write that began after it completed before the read began)
//! and that began before the read completed. A write whose outcome is unknown may take
//! effect at any time after it began, so it is never overwritten for sure. This is the
//! real-time part of linearizability, checked per key: sound (every stale read it reports
//! is one), and cheap enough for every read of a run.

use crate::trial::history::Outcome;

/// A write of `value` to the register.
#[derive(Clone, Debug)]
pub struct Write<V> {
    pub op: u64,
    pub invoke: f64,
    /// When it was acknowledged (`None` unless `outcome` is `Ok`).
    pub complete: Option<f64>,
    pub outcome: Outcome,
    pub value: V,
    /// Its answer warned that a cache was not updated.
    pub warned: bool,
}

/// What a read's value says.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// The value of a write that may have been the latest during the read.
    Fine,
    /// The value of a write that acknowledged writes had overwritten before the read
    /// began: `lag_ms` before it began (`lag_unwarned_ms` counting only overwrites whose
    /// answers carried no warning; −∞ when only warned ones did).
    Stale { lag_ms: f64, lag_unwarned_ms: f64, op: u64 },
    /// The value of a write that was refused.
    FailedWrite { op: u64 },
    /// A value no write wrote, or one that was written only after the read completed.
    Foreign,
}

/// A register's writes, with the time each was first overwritten for sure.
#[derive(Clone, Debug)]
pub struct Register<V> {
    writes: Vec<Write<V>>,
    /// Per write: the earliest completion of an acknowledged write that began after it
    /// completed (infinite if none, or if its own outcome is unknown).
    overwritten: Vec<f64>,
    /// The same, counting only overwrites whose answers carried no warning.
    overwritten_unwarned: Vec<f64>,
}

impl<V: PartialEq + Clone> Register<V> {
    /// A register holding `initial` before the run (an acknowledged write long before any
    /// other) and then `writes`.
    pub fn new(initial: V, writes: Vec<Write<V>>) -> Register<V> {
        let mut all = vec![Write {
            op: u64::MAX,
            invoke: f64::NEG_INFINITY,
            complete: Some(f64::NEG_INFINITY),
            outcome: Outcome::Ok,
            value: initial,
            warned: false,
        }];
        all.extend(writes);
        // Acknowledged writes by invocation, to find each write's first overwrite.
        let mut acked: Vec<(f64, f64, bool)> =
            all.iter().filter_map(|w| w.complete.map(|c| (w.invoke, c, w.warned))).collect();
        acked.sort_by(|a, b| a.0.total_cmp(&b.0));
        let first_after = |t: f64, unwarned_only: bool| {
            let from = acked.partition_point(|a| a.0 <= t);
            acked[from..]
                .iter()
                .filter(|a| !(unwarned_only && a.2))
                .map(|a| a.1)
                .fold(f64::INFINITY, f64::min)
        };
        let overwritten = all
            .iter()
            .map(|w| w.complete.map_or(f64::INFINITY, |c| first_after(c, false)))
            .collect();
        let overwritten_unwarned = all
            .iter()
            .map(|w| w.complete.map_or(f64::INFINITY, |c| first_after(c, true)))
            .collect();
        Register { writes: all, overwritten, overwritten_unwarned }
    }

    /// Judges `value`, read by a request that ran from `invoke` to `complete`.
    pub fn judge(&self, invoke: f64, complete: f64, value: &V) -> Verdict {
        let mut stale: Option<(f64, f64, u64)> = None;
        let mut failed = None;
        for (i, w) in self.writes.iter().enumerate() {
            if w.value != *value {
                continue;
            }
            match w.outcome {
                Outcome::Fail => failed = Some(w.op),
                _ if w.invoke > complete => {}
                _ if self.overwritten[i] >= invoke => return Verdict::Fine,
                _ => {
                    // The most recently overwritten write with this value explains it best.
                    let lag = invoke - self.overwritten[i];
                    let lag_unwarned = invoke - self.overwritten_unwarned[i];
                    if stale.is_none_or(|s| lag < s.0) {
                        stale = Some((lag, lag_unwarned, w.op));
                    }
                }
            }
        }
        match (stale, failed) {
            (Some((lag_ms, lag_unwarned_ms, op)), _) => {
                Verdict::Stale { lag_ms, lag_unwarned_ms, op }
            }
            (None, Some(op)) => Verdict::FailedWrite { op },
            (None, None) => Verdict::Foreign,
        }
    }

    /// Judges the value read once everything had stopped: it must be the value of a write
    /// that no acknowledged write overwrote.
    pub fn judge_final(&self, value: &V) -> Verdict {
        self.judge(f64::INFINITY, f64::INFINITY, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(op: u64, invoke: f64, complete: Option<f64>, value: &'static str) -> Write<&'static str> {
        let outcome = if complete.is_some() { Outcome::Ok } else { Outcome::Unknown };
        Write { op, invoke, complete, outcome, value, warned: false }
    }

    #[test]
    fn a_read_after_an_acknowledged_write_sees_it_or_a_later_one() {
        let r =
            Register::new("init", vec![w(1, 0.0, Some(10.0), "a"), w(2, 20.0, Some(30.0), "b")]);
        assert_eq!(r.judge(11.0, 12.0, &"a"), Verdict::Fine);
        // b was acknowledged at 30, so a read from 31 must not see a (or init).
        let v = r.judge(31.0, 32.0, &"a");
        assert_eq!(v, Verdict::Stale { lag_ms: 1.0, lag_unwarned_ms: 1.0, op: 1 });
        assert!(matches!(r.judge(40.0, 41.0, &"init"), Verdict::Stale { op: u64::MAX, .. }));
        // Concurrent with b, either is fine.
        assert_eq!(r.judge(25.0, 26.0, &"a"), Verdict::Fine);
        assert_eq!(r.judge(25.0, 26.0, &"b"), Verdict::Fine);
        // A value nobody wrote, or one written only after the read.
        assert_eq!(r.judge(5.0, 6.0, &"zz"), Verdict::Foreign);
        assert_eq!(r.judge(1.0, 2.0, &"b"), Verdict::Foreign);
    }

    #[test]
    fn an_unknown_write_may_land_any_time_after_it_began() {
        let r = Register::new("init", vec![w(1, 0.0, None, "a"), w(2, 20.0, Some(30.0), "b")]);
        assert_eq!(r.judge(100.0, 101.0, &"a"), Verdict::Fine);
        assert_eq!(r.judge_final(&"a"), Verdict::Fine);
        assert_eq!(r.judge_final(&"b"), Verdict::Fine);
        assert!(matches!(r.judge_final(&"init"), Verdict::Stale { .. }));
    }

    #[test]
    fn overlapping_acknowledged_writes_do_not_overwrite_each_other() {
        let r = Register::new(0, vec![w_i(1, 0.0, 10.0, 1), w_i(2, 5.0, 12.0, 2)]);
        assert_eq!(r.judge_final(&1), Verdict::Fine);
        assert_eq!(r.judge_final(&2), Verdict::Fine);
    }

    fn w_i(op: u64, invoke: f64, complete: f64, value: i32) -> Write<i32> {
        Write { op, invoke, complete: Some(complete), outcome: Outcome::Ok, value, warned: false }
    }

    #[test]
    fn a_refused_write_must_never_be_seen() {
        let mut refused = w(1, 0.0, None, "x");
        refused.outcome = Outcome::Fail;
        let r = Register::new("init", vec![refused]);
        assert_eq!(r.judge(5.0, 6.0, &"x"), Verdict::FailedWrite { op: 1 });
        assert_eq!(r.judge_final(&"init"), Verdict::Fine);
    }

    #[test]
    fn overwrites_that_warned_are_measured_apart() {
        let mut warned = w(2, 20.0, Some(30.0), "b");
        warned.warned = true;
        let r = Register::new("init", vec![w(1, 0.0, Some(10.0), "a"), warned]);
        match r.judge(35.0, 36.0, &"a") {
            Verdict::Stale { lag_ms, lag_unwarned_ms, .. } => {
                assert_eq!(lag_ms, 5.0);
                assert_eq!(lag_unwarned_ms, f64::NEG_INFINITY);
            }
            v => panic!("{v:?}"),
        }
    }
}
