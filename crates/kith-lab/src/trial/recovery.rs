//! How the service came back after each fault of a run: the rate of acknowledged operations
//! before it, the stretches of 1 s windows below half that rate, split into those that began
//! while the fault held and those that began once healing had (a restarted node's start-up,
//! hints replayed), and the time to the first success.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::history::{self, Entry, Op};
use super::nemesis::Fault;

/// How the service came back after a fault.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Recovery {
    #[serde(flatten)]
    pub fault: Fault,
    /// Acknowledged operations per second in the 10 s before the fault.
    pub before_per_s: f64,
    /// The longest stretch after the fault of 1 s windows (one every 100 ms) each holding
    /// fewer than half as many, from the first one's start to the last one's end.
    pub below_half_s: f64,
    /// The longest such stretch that began while the fault held (before healing began).
    #[serde(default)]
    pub below_half_faulted_s: f64,
    /// The longest that began once healing had begun (a restarted node's start-up, hints
    /// replayed to it, repairs); `None` in reports from before it was recorded.
    #[serde(default)]
    pub below_half_healing_s: Option<f64>,
    /// From the fault to the first acknowledged operation after it.
    pub first_ok_s: Option<f64>,
    /// From the fault to the first 1 s window back at half the rate before.
    pub back_to_half_s: Option<f64>,
}

/// The service's recovery after each of `faults` (in the order they happened), each judged
/// until the next one or the load's end (`load_s`; the clients stop sending then, and the
/// last answers trickle in).
pub fn all(faults: Vec<Fault>, ops: &[Op], load_s: f64) -> Vec<Recovery> {
    let ends: Vec<f64> =
        faults.iter().skip(1).map(|f| f.at_s.min(load_s)).chain(std::iter::once(load_s)).collect();
    faults.into_iter().zip(ends).map(|(f, until)| recovery(f, ops, until)).collect()
}

/// Recomputes the recovery windows of a run kept from an earlier invocation from its
/// history, once their measure changed (`kith trial cluster --resume --rejudge`).
pub fn rejudge(faults: &mut Vec<Recovery>, history: &Path, load_s: f64) -> Result<()> {
    let text = std::fs::read_to_string(history)
        .with_context(|| format!("{}: cannot read the run's history", history.display()))?;
    let mut entries: Vec<Entry> = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        entries
            .push(serde_json::from_str(line).with_context(|| {
                format!("{}:{}: not a history entry", history.display(), i + 1)
            })?);
    }
    let ops = history::fold(&entries);
    let kept: Vec<Fault> = faults.drain(..).map(|r| r.fault).collect();
    *faults = all(kept, &ops, load_s);
    Ok(())
}

/// The service's recovery after `fault`, from the acknowledged operations' completions up
/// to `until` (the next fault or the load's end).
fn recovery(fault: Fault, ops: &[Op], until: f64) -> Recovery {
    let mut acked: Vec<f64> = ops.iter().filter_map(|o| o.complete).map(|ms| ms / 1e3).collect();
    acked.sort_by(f64::total_cmp);
    let in_window = |from: f64, to: f64| {
        (acked.partition_point(|&t| t < to) - acked.partition_point(|&t| t < from)) as f64
    };
    let at = fault.at_s;
    let before_from = (at - 10.0).max(0.0);
    let before_per_s =
        if at > before_from { in_window(before_from, at) / (at - before_from) } else { 0.0 };
    let first_ok_s = acked.get(acked.partition_point(|&t| t <= at)).map(|t| t - at);
    let end = acked.last().copied().unwrap_or(at).min(until);
    // 1 s windows starting every 100 ms from the fault; a stretch of low ones runs from the
    // first one's start to the last one's end.
    let (mut stretches, mut run_start, mut back) = (Vec::new(), None::<f64>, None);
    let mut t = at;
    while t + 1.0 <= end {
        let low = in_window(t, t + 1.0) < before_per_s / 2.0;
        match (low, run_start) {
            (true, None) => run_start = Some(t),
            (false, Some(s)) => {
                stretches.push((s, t - 0.1 + 1.0 - s));
                run_start = None;
            }
            _ => {}
        }
        if !low && back.is_none() {
            back = Some(t + 1.0 - at);
        }
        t += 0.1;
    }
    if let Some(s) = run_start {
        stretches.push((s, end - s));
    }
    let longest = |from: f64, to: f64| {
        stretches
            .iter()
            .filter(|(s, _)| (from..to).contains(s))
            .map(|&(_, len)| len)
            .fold(0.0, f64::max)
    };
    let heal = fault.heal_began_s.unwrap_or(f64::INFINITY);
    Recovery {
        before_per_s,
        below_half_s: longest(f64::NEG_INFINITY, f64::INFINITY),
        below_half_faulted_s: longest(f64::NEG_INFINITY, heal),
        below_half_healing_s: fault.heal_began_s.map(|h| longest(h, f64::INFINITY)),
        first_ok_s,
        back_to_half_s: back,
        fault,
    }
}

#[cfg(test)]
mod tests {
    use super::super::history::Call;
    use super::super::nemesis::Nemesis;
    use super::*;
    use crate::trial::check::testing::ok;

    /// 100 acknowledged operations a second from 0 to `until_ms`, but none in `gaps` (ms).
    fn steady(until_ms: f64, gaps: &[std::ops::Range<f64>]) -> Vec<Op> {
        let mut ops = Vec::new();
        let mut t = 5.0;
        while t < until_ms {
            if !gaps.iter().any(|g| g.contains(&t)) {
                ops.push(ok(ops.len() as u64, Call::Feed { uid: 1 }, (t - 5.0, t)));
            }
            t += 10.0;
        }
        ops
    }

    #[test]
    fn recovery_counts_the_low_windows_after_the_fault_and_not_the_load_s_end() {
        // 100 acknowledged operations a second for 30 s but none from 10 s to 11.5 s, then
        // a trickle of late answers after the load's end.
        let mut ops = steady(30_000.0, &[10_000.0..11_500.0]);
        for late in [30_500.0, 31_500.0, 32_500.0] {
            ops.push(ok(ops.len() as u64, Call::Feed { uid: 1 }, (late - 2_000.0, late)));
        }
        let fault = Fault {
            nemesis: Nemesis::PauseCassandra,
            what: "x".into(),
            at_s: 10.0,
            heal_began_s: Some(12.0),
            healed_s: 12.0,
        };
        let r = recovery(fault, &ops, 30.0);
        assert!((r.before_per_s - 100.0).abs() < 1.0, "{}", r.before_per_s);
        // Windows starting from 9.5 s to 11.0 s hold fewer than 50: from 10.0 (the fault)
        // to 11.0 + 1 s.
        assert!((r.below_half_s - 2.0).abs() < 0.15, "below half {}", r.below_half_s);
        assert_eq!(r.below_half_faulted_s, r.below_half_s, "it began while the fault held");
        assert_eq!(r.below_half_healing_s, Some(0.0));
        assert!((r.first_ok_s.unwrap() - 1.5).abs() < 0.02);
    }

    #[test]
    fn recovery_tells_a_stretch_during_the_fault_from_one_after_healing_began() {
        // 100 a second, none from 10 s to 11.5 s (the fault, from 10 s) and none from 20 s
        // to 23 s (a restart that began at 14 s).
        let ops = steady(40_000.0, &[10_000.0..11_500.0, 20_000.0..23_000.0]);
        let fault = Fault {
            nemesis: Nemesis::KillCassandra,
            what: "x".into(),
            at_s: 10.0,
            heal_began_s: Some(14.0),
            healed_s: 30.0,
        };
        let r = recovery(fault, &ops, 40.0);
        assert!((r.below_half_faulted_s - 2.0).abs() < 0.15, "{}", r.below_half_faulted_s);
        let healing = r.below_half_healing_s.unwrap();
        assert!((3.7..4.1).contains(&healing), "{healing}");
        assert_eq!(r.below_half_s, healing);
    }

    #[test]
    fn each_fault_is_judged_until_the_next_one() {
        // 100 a second, none from 25 s to 27 s: after the second fault, not the first.
        let ops = steady(40_000.0, &[25_000.0..27_000.0]);
        let fault = |at_s: f64| Fault {
            nemesis: Nemesis::PauseKith,
            what: "x".into(),
            at_s,
            heal_began_s: Some(at_s + 2.0),
            healed_s: at_s + 2.0,
        };
        let r = all(vec![fault(10.0), fault(20.0)], &ops, 40.0);
        assert_eq!(r[0].below_half_s, 0.0, "the first fault's window ends at 20 s");
        assert!(r[1].below_half_healing_s.unwrap() > 2.0, "{:?}", r[1].below_half_healing_s);
    }
}
