//! SONETOR's session model: for every user, sessions of activities, each a Publish or a
//! Retrieve chosen by a two-state Markov chain.
//!
//! Per user: draw the number of sessions; each session starts one inter-session gap after the
//! previous session's last activity (the first after time 0) and holds a drawn number of
//! activities, one inter-activity gap apart; activities at or after the time limit are
//! dropped. The chain runs across a user's sessions, from its start state. Users are
//! generated in blocks of [`BLOCK`], each from its own stream seeded by `(seed, block)`, so
//! the trace depends on the seed only, not on the thread count.
//!
//! `compat` reproduces SONETOR: every session starts one inter-session gap after time 0, so a
//! user's sessions overlap. Without it (the default) the gaps accumulate, as the model
//! describes.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Geometric, LogNormal, Zeta};
use rand_pcg::Pcg64Mcg;
use rayon::prelude::*;

use crate::config::{LogNorm, SonetorConfig, Zipf};

/// Users per independently seeded block.
pub(crate) const BLOCK: usize = 1024;
/// Most sessions drawn for one user (zipf's tail is unbounded; in `compat` mode each session
/// starts near time 0, so nothing else bounds them).
pub(crate) const MAX_SESSIONS: u64 = 100_000;

/// What a user does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Activity {
    /// Publishes a post (`attr` = its size in bytes).
    Publish,
    /// Reads their feed (`attr` = posts asked for).
    Retrieve,
}

impl Activity {
    /// The trace's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Activity::Publish => "Publish",
            Activity::Retrieve => "Retrieve",
        }
    }
}

/// One line of a trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Event {
    /// Seconds from the start of the trace.
    pub ts: f64,
    /// Publish or Retrieve.
    pub activity: Activity,
    /// The user (an original id of the graph).
    pub user: u64,
    /// Post size for Publish, posts asked for for Retrieve.
    pub attr: u64,
}

/// Raw draws of each distribution, for checking the samplers (the first `keep` of each).
#[derive(Clone, Debug, Default)]
pub struct Samples {
    /// Inter-session gaps, seconds.
    pub inter_session: Vec<f64>,
    /// Inter-activity gaps, seconds.
    pub inter_activity: Vec<f64>,
    /// Session lengths (activities, before the time limit).
    pub session_length: Vec<u64>,
    /// Sessions per user.
    pub sessions_per_user: Vec<u64>,
    /// Post sizes before the reduction.
    pub post_size_raw: Vec<u64>,
}

struct Samplers {
    inter_session: (LogNormal<f64>, LogNorm),
    inter_activity: (LogNormal<f64>, LogNorm),
    session_length: (Zeta<f64>, Zipf),
    sessions: (Zeta<f64>, Zipf),
    post: Geometric,
}

fn lognormal(d: LogNorm) -> (LogNormal<f64>, LogNorm) {
    (LogNormal::new(0.0, d.s).expect("checked: s > 0"), d)
}

fn zeta(z: Zipf) -> (Zeta<f64>, Zipf) {
    (Zeta::new(z.a).expect("checked: a > 1"), z)
}

impl Samplers {
    fn new(c: &SonetorConfig) -> Samplers {
        Samplers {
            inter_session: lognormal(c.inter_session),
            inter_activity: lognormal(c.inter_activity),
            session_length: zeta(c.session_length),
            sessions: zeta(c.sessions_per_user),
            post: Geometric::new(1.0 / c.post_size.mean).expect("checked: mean >= 1"),
        }
    }
}

fn draw_gap<R: Rng>(d: &(LogNormal<f64>, LogNorm), rng: &mut R) -> f64 {
    d.1.loc + d.1.scale * d.0.sample(rng)
}

fn draw_count<R: Rng>(d: &(Zeta<f64>, Zipf), rng: &mut R) -> u64 {
    let k = d.0.sample(rng) + d.1.loc;
    if k >= u64::MAX as f64 { u64::MAX } else { k as u64 }
}

fn rng_for(seed: u64, block: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed ^ (block + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Generates the trace for `users`, sorted by time (then user). With `keep > 0`, also returns
/// up to `keep` raw draws of each distribution (from the first blocks).
pub fn generate(
    users: &[u64],
    config: &SonetorConfig,
    seed: u64,
    keep: usize,
) -> (Vec<Event>, Samples) {
    let samplers = Samplers::new(config);
    let blocks: Vec<(Vec<Event>, Samples)> = users
        .par_chunks(BLOCK)
        .enumerate()
        .map(|(b, chunk)| {
            let mut rng = rng_for(seed, b as u64);
            let mut events = Vec::new();
            let mut samples = Samples::default();
            for &user in chunk {
                user_events(user, config, &samplers, &mut rng, &mut events, &mut samples, keep);
            }
            (events, samples)
        })
        .collect();
    let mut all = Vec::with_capacity(blocks.iter().map(|b| b.0.len()).sum());
    let mut samples = Samples::default();
    for (events, s) in blocks {
        all.extend(events);
        let room = |v: usize| keep.saturating_sub(v);
        let take = |dst: &mut Vec<f64>, src: Vec<f64>| {
            let n = room(dst.len()).min(src.len());
            dst.extend_from_slice(&src[..n]);
        };
        take(&mut samples.inter_session, s.inter_session);
        take(&mut samples.inter_activity, s.inter_activity);
        let take_u = |dst: &mut Vec<u64>, src: Vec<u64>| {
            let n = room(dst.len()).min(src.len());
            dst.extend_from_slice(&src[..n]);
        };
        take_u(&mut samples.session_length, s.session_length);
        take_u(&mut samples.sessions_per_user, s.sessions_per_user);
        take_u(&mut samples.post_size_raw, s.post_size_raw);
    }
    all.par_sort_by(|a, b| {
        a.ts.total_cmp(&b.ts).then(a.user.cmp(&b.user)).then(a.activity.cmp(&b.activity))
    });
    (all, samples)
}

fn user_events<R: Rng>(
    user: u64,
    c: &SonetorConfig,
    d: &Samplers,
    rng: &mut R,
    out: &mut Vec<Event>,
    samples: &mut Samples,
    keep: usize,
) {
    let limit = c.time_limit_s;
    let sessions = draw_count(&d.sessions, rng).clamp(1, MAX_SESSIONS);
    if samples.sessions_per_user.len() < keep {
        samples.sessions_per_user.push(sessions);
    }
    let mut publish = c.markov.start_with_publish;
    let mut last_end = 0.0f64;
    for _ in 0..sessions {
        let gap = draw_gap(&d.inter_session, rng);
        if samples.inter_session.len() < keep {
            samples.inter_session.push(gap);
        }
        let start = if c.compat { gap } else { last_end + gap };
        if start >= limit {
            if c.compat {
                continue;
            }
            break;
        }
        let length = draw_count(&d.session_length, rng).max(1);
        if samples.session_length.len() < keep {
            samples.session_length.push(length);
        }
        let mut t = start;
        let mut i = 0u64;
        while i < length {
            if i > 0 {
                let g = draw_gap(&d.inter_activity, rng);
                if samples.inter_activity.len() < keep {
                    samples.inter_activity.push(g);
                }
                t += g;
                if t >= limit {
                    break;
                }
            }
            let (activity, attr) = if publish {
                let raw = 1 + d.post.sample(rng);
                if samples.post_size_raw.len() < keep {
                    samples.post_size_raw.push(raw);
                }
                (Activity::Publish, reduce(raw, c))
            } else {
                (Activity::Retrieve, c.retrieve_limit)
            };
            out.push(Event { ts: t, activity, user, attr });
            let p_retrieve =
                if publish { c.markov.publish_to_retrieve } else { c.markov.retrieve_to_retrieve };
            publish = !rng.random_bool(p_retrieve);
            i += 1;
        }
        last_end = t;
    }
}

/// Twibo's reduction of post sizes: divide by the factor until at most the bound.
pub(crate) fn reduce(mut size: u64, c: &SonetorConfig) -> u64 {
    if c.post_size.reduce_above > 0 {
        while size > c.post_size.reduce_above {
            size /= c.post_size.reduce_factor;
        }
    }
    size.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_sorted_and_bounded() {
        let users: Vec<u64> = (0..5000).collect();
        let c = SonetorConfig { time_limit_s: 3600.0, ..Default::default() };
        let (a, _) = generate(&users, &c, 7, 0);
        let (b, _) = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| generate(&users, &c, 7, 0));
        assert_eq!(a, b, "depends on the thread count");
        assert!(!a.is_empty());
        assert!(a.windows(2).all(|w| w[0].ts <= w[1].ts));
        assert!(a.iter().all(|e| e.ts >= 0.0 && e.ts < 3600.0));
        assert!(
            a.iter()
                .filter(|e| e.activity == Activity::Publish)
                .all(|e| (1..=400).contains(&e.attr))
        );
        let (other, _) = generate(&users, &c, 8, 0);
        assert_ne!(a, other);
    }

    #[test]
    fn sessions_do_not_overlap_unless_compat() {
        let users: Vec<u64> = (0..300).collect();
        let c = SonetorConfig::default();
        let (events, _) = generate(&users, &c, 1, 0);
        // Per user, times strictly increase when gaps accumulate.
        let mut last = std::collections::HashMap::new();
        for e in &events {
            if let Some(prev) = last.insert(e.user, e.ts) {
                assert!(e.ts > prev);
            }
        }
        let compat = SonetorConfig { compat: true, ..Default::default() };
        let (c_events, _) = generate(&users, &compat, 1, 0);
        assert_ne!(events, c_events);
    }

    #[test]
    fn twibo_reduction() {
        let c = SonetorConfig::default();
        assert_eq!(reduce(10_000, &c), 400);
        assert_eq!(reduce(2_006, &c), 80);
        assert_eq!(reduce(400, &c), 400);
        assert_eq!(reduce(401, &c), 80);
        assert_eq!(reduce(2, &c), 2);
    }
}
