//! LFGraph's vertex-program engine on timely workers. Before the first step, every worker
//! sends each owner the list of its vertices it needs (subscribe lists); the owners keep
//! them as publish lists. Each step then computes the worker's own vertices from slot
//! values, and sends every changed value to each subscribing worker (once, or once per
//! cross-worker edge), with the step's partial aggregates, in one timely round: data into
//! an input, exchanged by destination worker, and a probe that says when the round is
//! complete everywhere.

use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use crate::net::{Envelope, Net};
use crate::part::{ExchangeMode, Part, Shared, owner};
use crate::report::{Report, WorkerStep};

/// What a vertex sees during a step.
#[derive(Debug)]
pub struct Ctx<'a, V> {
    vertex: u32,
    step: usize,
    part: &'a Part,
    real: &'a [V],
    changed: &'a [bool],
}

impl<'a, V> Ctx<'a, V> {
    /// This vertex's slot.
    #[inline]
    pub fn vertex(&self) -> u32 {
        self.vertex
    }

    /// The step, from 0.
    #[inline]
    pub fn step(&self) -> usize {
        self.step
    }

    /// The part this vertex belongs to.
    #[inline]
    pub fn part(&self) -> &'a Part {
        self.part
    }

    /// In-link sources as slots, in ascending global id.
    #[inline]
    pub fn in_links(&self) -> &'a [u32] {
        self.part.in_links(self.vertex)
    }

    /// In-links whose source changed in the previous step (all in step 0), with weights (1
    /// when unweighted).
    #[inline]
    pub fn changed_weighted_in_links(&self) -> impl Iterator<Item = (u32, f64)> + 'a {
        let changed = self.changed;
        let weights = self.part.in_weights(self.vertex);
        self.in_links()
            .iter()
            .enumerate()
            .filter(move |&(_, &u)| changed[u as usize])
            .map(move |(i, &u)| (u, weights.map_or(1.0, |w| w[i])))
    }

    /// In-links whose source changed in the previous step (all in step 0).
    #[inline]
    pub fn changed_in_links(&self) -> impl Iterator<Item = u32> + 'a {
        let changed = self.changed;
        self.in_links().iter().copied().filter(move |&u| changed[u as usize])
    }

    /// A slot's value.
    #[inline]
    pub fn value(&self, slot: u32) -> &'a V {
        &self.real[slot as usize]
    }

    /// This vertex's own value.
    #[inline]
    pub fn own(&self) -> &'a V {
        &self.real[self.vertex as usize]
    }
}

/// Sums over all workers of what each computed in a step.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Totals {
    /// Vertices that changed.
    pub changed: u64,
    /// Σ over changed vertices of [`Program::delta`].
    pub delta: f64,
    /// Σ over vertices without out-links of [`Program::dangling`].
    pub dangling: f64,
}

impl Totals {
    fn add(&mut self, other: &Totals) {
        self.changed += other.changed;
        self.delta += other.delta;
        self.dangling += other.dangling;
    }
}

/// A vertex program for the distributed engine: the same model as `kith-analytics`', with
/// slots for vertex ids and global aggregates summed over workers.
pub trait Program: Send + 'static {
    /// A vertex's value; it travels between processes, so it serialises.
    type Value: Clone + Send + Serialize + DeserializeOwned + 'static;

    /// The name and parameters, compared between processes before a run.
    fn describe(&self) -> String;

    /// Steps at most.
    fn max_steps(&self) -> usize;

    /// The value of local slot `v` before step 0.
    fn init(&self, v: u32, part: &Part) -> Self::Value;

    /// Before each step, with the totals of the previous one (of the initial values before
    /// step 0): e.g. PageRank's per-slot contributions and dangling mass.
    fn before_step(&mut self, _step: usize, _part: &Part, _real: &[Self::Value], _t: &Totals) {}

    /// This step's value of `ctx.vertex()`: `Some` when it changed.
    fn compute(&self, ctx: &Ctx<'_, Self::Value>) -> Option<Self::Value>;

    /// The mass a vertex without out-links contributes to [`Totals::dangling`].
    fn dangling(&self, _value: &Self::Value) -> f64 {
        0.0
    }

    /// How far a changed value moved, summed into [`Totals::delta`].
    fn delta(&self, _old: &Self::Value, _new: &Self::Value) -> f64 {
        0.0
    }

    /// After each step, with its totals: whether to stop (besides when nothing changed).
    fn stop(&mut self, _step: usize, _totals: &Totals) -> bool {
        false
    }
}

/// What travels between workers.
type Packet<V> = Envelope<Body<V>>;

#[derive(Clone, Debug, Serialize, Deserialize)]
enum Body<V> {
    /// The run's description, compared by every worker.
    Hello(String),
    /// Global ids the sender needs from the receiver, in the order it wants them.
    Subscribe(Vec<u32>),
    /// Positions in the receiver's subscription to the sender, and their new values.
    Values(Vec<u32>, Vec<V>),
    /// New values for every position of the receiver's subscription, in order (when all
    /// of them changed, as in PageRank: no positions to send).
    Dense(Vec<V>),
    /// The sender's partial aggregates.
    Totals(Totals),
    /// To worker 0 at the end: the sender's own values (ascending global id) and step log.
    Gather(Vec<V>, Vec<WorkerStep>),
}

/// Settings of one worker's run.
#[derive(Clone, Debug)]
pub(crate) struct WorkerConfig {
    pub(crate) mode: ExchangeMode,
    pub(crate) wait_timeout: Duration,
    /// Compared between processes: the cluster's shape and the graph.
    pub(crate) description: String,
}

/// What worker 0 returns: values by global dense id, and the report.
#[derive(Debug)]
pub struct Output<V> {
    /// Values by global dense id.
    pub values: Vec<V>,
    /// Steps, times and traffic.
    pub report: Report,
    /// The totals of the last step (e.g. PageRank's L1 change in `delta`).
    pub last: Totals,
}

/// Runs `program` on this worker. Returns `Some` on worker 0.
pub(crate) fn run_worker<P: Program>(
    worker: &mut Worker,
    shared: &Shared,
    mut program: P,
    config: &WorkerConfig,
) -> Result<Option<Output<P::Value>>, String> {
    let (me, workers) = (worker.index(), worker.peers());
    let mut net = Net::<Body<P::Value>>::new(worker, config.wait_timeout);

    // Every worker checks that all run the same thing.
    let mine = format!("{}; {}", config.description, program.describe());
    net.hello(worker, &mine, Body::Hello, |b| match b {
        Body::Hello(s) => Some(s.as_str()),
        _ => None,
    })?;

    let setup = Instant::now();
    let graph = shared.take();
    let (part, subs) = Part::build(&graph, me, workers, config.mode);
    drop(graph);
    shared.release();
    let publish = publish_lists(&mut net, worker, &part, &subs)?;
    let setup_s = setup.elapsed().as_secs_f64();

    let mut state = State::new(&program, &part);
    let mut log: Vec<WorkerStep> = Vec::new();
    // The initial values, as if every vertex had just changed.
    let steps_start = Instant::now();
    let t = Instant::now();
    let partial = partials(&program, &part, &state.real, &state.shadow, &state.changed);
    let (packets, messages, bytes) =
        outgoing(me, &publish, &state.real, &state.changed, partial, workers);
    let received = net.round(worker, packets, "the initial exchange")?;
    let mut totals = state.apply(received, &subs.slots, partial, me);
    log.push(WorkerStep { compute_s: 0.0, exchange_s: t.elapsed().as_secs_f64(), messages, bytes });

    let no_changes = vec![false; part.slots()];
    let mut changed_per_step = Vec::new();
    for step in 0..program.max_steps() {
        let t = Instant::now();
        program.before_step(step, &part, &state.real, &totals);
        state.compute(&program, &part, step);
        let partial = partials(&program, &part, &state.real, &state.shadow, &state.changed);
        let compute_s = t.elapsed().as_secs_f64();

        let t = Instant::now();
        // After the last step nobody reads the values again: only the totals travel.
        let last = step + 1 == program.max_steps();
        let sent = if last { &no_changes[..] } else { &state.changed[..] };
        let (packets, messages, bytes) =
            outgoing(me, &publish, &state.real, sent, partial, workers);
        let received = net.round(worker, packets, &format!("step {step}"))?;
        totals = state.apply(received, &subs.slots, partial, me);
        log.push(WorkerStep { compute_s, exchange_s: t.elapsed().as_secs_f64(), messages, bytes });
        changed_per_step.push(totals.changed);
        if totals.changed == 0 || program.stop(step, &totals) {
            break;
        }
    }
    let steps_s = steps_start.elapsed().as_secs_f64();

    // Worker 0 gathers every worker's values and log.
    let mut own = state.real;
    own.truncate(part.locals());
    let gather = vec![Packet { to: 0, from: me as u32, body: Body::Gather(own, log) }];
    let received = net.round(worker, gather, "gathering the results")?;
    if me != 0 {
        return Ok(None);
    }
    let (values, logs) = assemble(received, part.num_global(), workers)?;
    let steps = changed_per_step.len();
    let report = Report::new(workers, steps, changed_per_step, (setup_s, steps_s), &logs);
    Ok(Some(Output { values, report, last: totals }))
}

/// Sends each owner the subscribe list for it, and turns the lists received into publish
/// lists: for each subscribing worker, the local slots it wants, in its order.
fn publish_lists<V: Clone + Send + Serialize + DeserializeOwned + 'static>(
    net: &mut Net<Body<V>>,
    worker: &mut Worker,
    part: &Part,
    subs: &crate::part::Subscriptions,
) -> Result<Vec<Vec<u32>>, String> {
    let (me, workers) = (worker.index(), worker.peers());
    let subscribe = (0..workers)
        .filter(|&w| w != me)
        .map(|w| Packet {
            to: w as u32,
            from: me as u32,
            body: Body::Subscribe(subs.wanted[w].clone()),
        })
        .collect();
    let mut publish: Vec<Vec<u32>> = vec![Vec::new(); workers];
    for p in net.round(worker, subscribe, "exchanging subscribe lists")? {
        if let Body::Subscribe(wanted) = p.body {
            publish[p.from as usize] = wanted
                .iter()
                .map(|&g| {
                    part.local_slot(g).ok_or_else(|| {
                        format!("worker {} asked worker {me} for vertex {g}, not its own", p.from)
                    })
                })
                .collect::<Result<_, String>>()?;
        }
    }
    Ok(publish)
}

/// A worker's values by slot: real and shadow (LFGraph's two versions), and changed flags.
struct State<V> {
    real: Vec<V>,
    shadow: Vec<V>,
    changed: Vec<bool>,
    next: Vec<bool>,
}

impl<V: Clone> State<V> {
    fn new<P: Program<Value = V>>(program: &P, part: &Part) -> State<V> {
        let locals = part.locals();
        let mut real: Vec<V> = (0..locals as u32).map(|v| program.init(v, part)).collect();
        // Replicas start as copies of some value; the initial exchange overwrites every one.
        if let Some(first) = real.first().cloned() {
            real.resize(part.slots(), first);
        }
        State {
            shadow: real.clone(),
            real,
            changed: vec![true; part.slots()],
            next: vec![false; locals],
        }
    }

    /// One step's compute over this worker's vertices, then the changed shadows made real.
    fn compute<P: Program<Value = V>>(&mut self, program: &P, part: &Part, step: usize) {
        let locals = part.locals();
        for v in 0..locals {
            let ctx =
                Ctx { vertex: v as u32, step, part, real: &self.real, changed: &self.changed };
            match program.compute(&ctx) {
                Some(value) => {
                    self.shadow[v] = value;
                    self.next[v] = true;
                }
                None => self.next[v] = false,
            }
        }
        for v in 0..locals {
            if self.next[v] {
                std::mem::swap(&mut self.real[v], &mut self.shadow[v]);
            }
        }
        self.changed[..locals].copy_from_slice(&self.next);
        self.changed[locals..].fill(false);
    }

    /// Writes received values into their replica slots (marking them changed) and sums the
    /// totals in worker order, so that every worker gets the same sums.
    fn apply(
        &mut self,
        received: Vec<Packet<V>>,
        slots: &[Vec<u32>],
        own: Totals,
        me: usize,
    ) -> Totals {
        let mut partial = vec![Totals::default(); slots.len()];
        partial[me] = own;
        for p in received {
            match p.body {
                Body::Values(positions, values) => {
                    let map = &slots[p.from as usize];
                    for (position, value) in positions.into_iter().zip(values) {
                        let slot = map[position as usize] as usize;
                        self.real[slot] = value;
                        self.changed[slot] = true;
                    }
                }
                Body::Dense(values) => {
                    for (&slot, value) in slots[p.from as usize].iter().zip(values) {
                        self.real[slot as usize] = value;
                        self.changed[slot as usize] = true;
                    }
                }
                Body::Totals(t) => partial[p.from as usize] = t,
                Body::Hello(_) | Body::Subscribe(_) | Body::Gather(..) => {}
            }
        }
        let mut totals = Totals::default();
        for t in &partial {
            totals.add(t);
        }
        totals
    }
}

/// Worker 0: every worker's values in global id order, and their step logs.
fn assemble<V>(
    received: Vec<Packet<V>>,
    n: usize,
    workers: usize,
) -> Result<(Vec<V>, Vec<Vec<WorkerStep>>), String> {
    let mut gathered: Vec<Option<std::vec::IntoIter<V>>> = (0..workers).map(|_| None).collect();
    let mut logs: Vec<Vec<WorkerStep>> = vec![Vec::new(); workers];
    for p in received {
        if let Body::Gather(values, log) = p.body {
            gathered[p.from as usize] = Some(values.into_iter());
            logs[p.from as usize] = log;
        }
    }
    let mut values = Vec::with_capacity(n);
    for v in 0..n as u32 {
        let w = owner(v, workers);
        let next = gathered[w].as_mut().and_then(Iterator::next);
        values.push(next.ok_or_else(|| format!("worker {w} sent too few values"))?);
    }
    Ok((values, logs))
}

/// This worker's contribution to the step's totals.
fn partials<P: Program>(
    program: &P,
    part: &Part,
    real: &[P::Value],
    previous: &[P::Value],
    changed: &[bool],
) -> Totals {
    let mut t = Totals::default();
    for v in 0..part.locals() {
        if changed[v] {
            t.changed += 1;
            t.delta += program.delta(&previous[v], &real[v]);
        }
        if part.out_degree(v as u32) == 0 {
            t.dangling += program.dangling(&real[v]);
        }
    }
    t
}

/// The packets of a round: changed published values to each subscriber, and this worker's
/// totals to every other worker. Returns them with the value messages and their serialised
/// bytes.
fn outgoing<V: Clone + Serialize>(
    me: usize,
    publish: &[Vec<u32>],
    real: &[V],
    changed: &[bool],
    partial: Totals,
    workers: usize,
) -> (Vec<Packet<V>>, u64, u64) {
    let (mut messages, mut bytes) = (0u64, 0u64);
    let mut packets = Vec::with_capacity(2 * workers);
    for (w, list) in publish.iter().enumerate() {
        if w == me {
            continue;
        }
        let count = list.iter().filter(|&&slot| changed[slot as usize]).count();
        let body = if count == 0 {
            None
        } else if count == list.len() {
            Some(Body::Dense(list.iter().map(|&slot| real[slot as usize].clone()).collect()))
        } else {
            let (mut positions, mut values) = (Vec::new(), Vec::new());
            for (position, &slot) in list.iter().enumerate() {
                if changed[slot as usize] {
                    positions.push(position as u32);
                    values.push(real[slot as usize].clone());
                }
            }
            Some(Body::Values(positions, values))
        };
        if let Some(body) = body {
            messages += count as u64;
            let p = Packet { to: w as u32, from: me as u32, body };
            bytes += bincode::serialized_size(&p).expect("values serialise");
            packets.push(p);
        }
        packets.push(Packet { to: w as u32, from: me as u32, body: Body::Totals(partial) });
    }
    (packets, messages, bytes)
}
