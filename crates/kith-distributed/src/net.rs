//! A worker's rounds over timely: envelopes into an input, exchanged by destination worker,
//! collected in an inbox keyed by round, and a probe that says when a round is complete on
//! every worker. A fast worker's next round can reach this worker before its current round
//! is complete, hence the keying.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::Probe;
use timely::dataflow::operators::generic::operator::Operator;
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::worker::Worker;

/// What travels between workers: a body, addressed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Envelope<T> {
    pub(crate) to: u32,
    pub(crate) from: u32,
    pub(crate) body: T,
}

/// Received envelopes by round.
type Inbox<T> = Rc<RefCell<BTreeMap<u64, Vec<Envelope<T>>>>>;

/// One worker's end of the rounds.
pub(crate) struct Net<T: Clone + 'static> {
    input: InputHandle<u64, CapacityContainerBuilder<Vec<Envelope<T>>>>,
    probe: ProbeHandle<u64>,
    inbox: Inbox<T>,
    wait_timeout: Duration,
}

impl<T: Clone + Send + Serialize + DeserializeOwned + 'static> Net<T> {
    /// Builds the dataflow on `worker`.
    pub(crate) fn new(worker: &mut Worker, wait_timeout: Duration) -> Net<T> {
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        let inbox: Inbox<T> = Rc::default();
        let sink = Rc::clone(&inbox);
        worker.dataflow::<u64, _, _>(|scope| {
            input
                .to_stream(scope)
                .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
                    Exchange::new(|p: &Envelope<T>| u64::from(p.to)),
                    "Inbox",
                    move |_, _| {
                        move |input, _output| {
                            input.for_each(|time, data| {
                                let mut inbox = sink.borrow_mut();
                                let round = time.least().copied().unwrap_or_default();
                                inbox.entry(round).or_default().append(data);
                            });
                        }
                    },
                )
                .probe_with(&probe);
        });
        Net { input, probe, inbox, wait_timeout }
    }

    /// Sends `envelopes` and returns what this worker received in the same round, once the
    /// round is complete on every worker.
    pub(crate) fn round(
        &mut self,
        worker: &mut Worker,
        envelopes: Vec<Envelope<T>>,
        what: &str,
    ) -> Result<Vec<Envelope<T>>, String> {
        for e in envelopes {
            self.input.send(e);
        }
        let now = *self.input.time();
        self.input.advance_to(now + 1);
        let start = Instant::now();
        while self.probe.less_than(self.input.time()) {
            worker.step_or_park(Some(Duration::from_millis(20)));
            if start.elapsed() > self.wait_timeout {
                return Err(format!(
                    "waited {} s for the other workers in {what}; a process is stuck or \
                     unreachable (raise --wait-timeout for very unbalanced runs)",
                    self.wait_timeout.as_secs()
                ));
            }
        }
        Ok(self.inbox.borrow_mut().remove(&now).unwrap_or_default())
    }

    /// Checks that every worker runs the same thing: each sends `mine` to all others.
    pub(crate) fn hello(
        &mut self,
        worker: &mut Worker,
        mine: &str,
        wrap: impl Fn(String) -> T,
        unwrap: impl Fn(&T) -> Option<&str>,
    ) -> Result<(), String> {
        let me = worker.index();
        let envelopes = (0..worker.peers())
            .filter(|&w| w != me)
            .map(|w| Envelope { to: w as u32, from: me as u32, body: wrap(mine.to_string()) })
            .collect();
        for e in self.round(worker, envelopes, "the start-up check")? {
            if let Some(theirs) = unwrap(&e.body)
                && theirs != mine
            {
                return Err(format!(
                    "the processes disagree: worker {} runs [{theirs}] but worker {me} runs [{mine}]",
                    e.from
                ));
            }
        }
        Ok(())
    }
}
