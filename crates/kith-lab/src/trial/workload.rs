//! The trial's load: clients that each send a random mix of every write and read kind to
//! random servers, concentrated on a few hot users (and, for posts with the client's own
//! id, on a few ids per 50 ms window), so that clients on different servers contend for
//! the same keys. Writes carry an `Idempotency-Key`; some are first sent with a timeout too
//! short to finish and then again on another server, some are sent to two servers at once.
//! Every attempt is recorded.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use tokio::time::Instant;

use super::client::{Answer, send};
use super::history::{Call, Entry, Outcome, Value};

/// Who the load touches.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Users every write and read is about: the first `hot` of them take most requests.
    pub users: Vec<u64>,
    pub hot: usize,
    /// A run's tag, in every post's content and key, so runs on one store never mix.
    pub tag: String,
    pub clients: usize,
    pub duration: Duration,
    /// A client's patience with one request.
    pub timeout: Duration,
    /// How long it waits on one server before it sends a read or a keyed write to another
    /// (the last attempt waits `timeout`).
    pub patience: Duration,
    pub seed: u64,
}

/// What every client shares: the servers, the history, the ids of acknowledged posts.
pub struct Shared {
    pub servers: Vec<String>,
    pub start: Instant,
    pub history: Mutex<Vec<Entry>>,
    recent: Mutex<Vec<u64>>,
    next_op: std::sync::atomic::AtomicU64,
    /// Servers the health checks found down.
    pub(super) down: Vec<std::sync::atomic::AtomicBool>,
    /// When each server last answered a request (ms since `start`, as `f64` bits).
    pub(super) answered: Vec<std::sync::atomic::AtomicU64>,
}

impl Shared {
    pub fn new(servers: Vec<String>, start: Instant) -> Shared {
        let n = servers.len();
        Shared {
            servers,
            start,
            history: Mutex::new(Vec::new()),
            recent: Mutex::new(Vec::new()),
            next_op: Default::default(),
            down: (0..n).map(|_| Default::default()).collect(),
            answered: (0..n).map(|_| Default::default()).collect(),
        }
    }

    pub(super) fn ms(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1e3
    }
}

/// Ids count milliseconds from 2025-01-01 in their high bits, as the servers' do.
const EPOCH_MS: u64 = 1_735_689_600_000;

/// Runs the clients until `plan.duration` has passed.
pub async fn drive(plan: Arc<Plan>, shared: Arc<Shared>) -> anyhow::Result<()> {
    let http = reqwest::Client::builder().pool_max_idle_per_host(64).build()?;
    let checks = tokio::spawn(shared.clone().health_checks(shared.start + plan.duration));
    let mut tasks = Vec::new();
    for c in 0..plan.clients {
        let (plan, shared, http) = (plan.clone(), shared.clone(), http.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = Pcg64Mcg::seed_from_u64(plan.seed.wrapping_mul(7919) + c as u64);
            let until = shared.start + plan.duration;
            let mut seq = 0u64;
            while Instant::now() < until {
                seq += 1;
                let call = next_call(&mut rng, &plan, &shared, c, seq);
                run_op(&http, &plan, &shared, &mut rng, c as u32, call).await;
            }
        }));
    }
    for t in tasks {
        t.await?;
    }
    checks.await?;
    Ok(())
}

/// A user: hot ones three times out of five.
fn user(rng: &mut impl Rng, plan: &Plan) -> u64 {
    if rng.random_bool(0.6) {
        plan.users[rng.random_range(0..plan.hot.min(plan.users.len()))]
    } else {
        plan.users[rng.random_range(0..plan.users.len())]
    }
}

fn two_users(rng: &mut impl Rng, plan: &Plan) -> (u64, u64) {
    loop {
        let (u, v) = (user(rng, plan), user(rng, plan));
        if u != v {
            return (u, v);
        }
    }
}

/// A post id of the clients' own, shared by every client posting in the same 50 ms.
fn hot_post_id(rng: &mut impl Rng) -> u64 {
    let unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let now = unix_ms.saturating_sub(EPOCH_MS);
    ((now / 50 * 50) << 14) + rng.random_range(0..8)
}

fn next_call(rng: &mut impl Rng, plan: &Plan, shared: &Shared, c: usize, seq: u64) -> Call {
    let name = || format!("{}-c{c}-{seq}", plan.tag);
    match rng.random_range(0..100) {
        0..14 => Call::Post { author: user(rng, plan), content: format!("p{}", name()), id: None },
        14..19 => {
            let id = Some(hot_post_id(rng));
            Call::Post { author: user(rng, plan), content: format!("p{}", name()), id }
        }
        19..26 => {
            let (u, v) = two_users(rng, plan);
            Call::AddFriend { u, v }
        }
        26..31 => {
            let (u, v) = two_users(rng, plan);
            Call::DeleteFriend { u, v }
        }
        31..34 => {
            let uid = user(rng, plan);
            let n = rng.random_range(0..6);
            let mut friends: Vec<u64> =
                (0..n).map(|_| user(rng, plan)).filter(|&f| f != uid).collect();
            friends.sort_unstable();
            friends.dedup();
            Call::PutUser { uid, name: format!("u{}", name()), friends }
        }
        34..39 => Call::PutProfile { uid: user(rng, plan), name: format!("n{}", name()) },
        39..45 => {
            let (uid, target) = two_users(rng, plan);
            Call::Follow { uid, target }
        }
        45..49 => {
            let (uid, target) = two_users(rng, plan);
            Call::Unfollow { uid, target }
        }
        49..57 => Call::Friends { uid: user(rng, plan), strong: true },
        57..65 => Call::Friends { uid: user(rng, plan), strong: false },
        65..70 => Call::Profile { uid: user(rng, plan), strong: true },
        70..74 => Call::Profile { uid: user(rng, plan), strong: false },
        74..84 => Call::Feed { uid: user(rng, plan) },
        84..90 => Call::Follows { uid: user(rng, plan) },
        _ => {
            let recent = shared.recent.lock().expect("not poisoned");
            let id = match recent.len() {
                0 => hot_post_id(rng),
                n => recent[n - 1 - rng.random_range(0..n.min(64))],
            };
            Call::GetPost { id }
        }
    }
}

/// Sends one logical operation: reads once (again on another server, [`Shared::after`],
/// when it reached none, or when the client's patience with one server ran out); writes
/// with a key, again on another server while the answer is unknown or 503 (at most four attempts, 0.5, 1 and 2 s
/// apart after an answer of 503 or one within the client's patience), sometimes first
/// with a timeout too short to finish, sometimes to two servers at once.
async fn run_op(
    http: &reqwest::Client,
    plan: &Plan,
    shared: &Shared,
    rng: &mut Pcg64Mcg,
    client: u32,
    call: Call,
) {
    let op = shared.next_op.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let key = format!("{}-op{op}", plan.tag);
    let n = shared.servers.len();
    let mut server = shared.pick(rng);
    let mut tried = 1u64 << server.min(63);
    let mut next_server = |from: usize| {
        let to = shared.after(from, tried);
        tried |= 1 << to.min(63);
        to
    };
    let keyed = call.takes_key();
    let impatient = plan.patience < plan.timeout;
    let attempt = |attempt: u32, server: usize, timeout: Duration| {
        let (call, key) = (call.clone(), key.clone());
        async move {
            let invoke_ms = shared.ms();
            let a = send(http, &shared.servers[server], &call, Some(&key), timeout).await;
            let next = record(shared, op, attempt, client, server, invoke_ms, call, a);
            // A server that let the client's patience run out, and answered no one for
            // half of it, is left out of new choices until a health check finds it up
            // again, as a load balancer's passive check does. One that answers others is
            // alive: this request waits on something another server would wait on too
            // (another attempt's claim of its key, a slow store).
            let silent = shared.silent(server, plan.patience);
            if impatient && timeout == plan.patience && next == Next::Lost && silent {
                shared.down[server].store(true, std::sync::atomic::Ordering::Relaxed);
            }
            next
        }
    };
    // Every attempt but the last waits the client's patience with one server; the last,
    // its whole timeout.
    let wait = |tries: u32, most: u32| {
        if tries + 1 < most { plan.patience.min(plan.timeout) } else { plan.timeout }
    };
    if !keyed {
        // Sent again only when it reached no server (no connection): then it did nothing.
        // A read is also sent on when the client's patience ran out: reading twice is
        // harmless. A whole-value `PUT` is not: it carries no key.
        let most = n as u32;
        for tries in 0..most {
            let t = if call.is_write() { plan.timeout } else { wait(tries, most) };
            let next = attempt(tries, server, t).await;
            let gave_up = impatient && !call.is_write() && next == Next::Lost;
            if next != Next::Unreached && !gave_up {
                return;
            }
            server = next_server(server);
        }
        return;
    }
    let mut tries = 0u32;
    let pick = rng.random_range(0..100);
    if pick < 5 {
        // Given up on after a few milliseconds, then sent again to another server.
        let short = Duration::from_millis(rng.random_range(1..40));
        attempt(tries, server, short).await;
        tries += 1;
        server = next_server(server);
    } else if pick < 8 {
        // The same write to two servers at once.
        let other = next_server(server);
        let (a, b) = tokio::join!(
            attempt(0, server, wait(0, ATTEMPTS)),
            attempt(1, other, wait(1, ATTEMPTS))
        );
        if a == Next::Settled || b == Next::Settled {
            return;
        }
        tries = 2;
        server = next_server(other);
    }
    // Backing off as a client should: a Redis master's failover (about 2–4 s here) answers
    // 503 at once, and three attempts in a row all met it, leaving the write unknown. A
    // server that did not answer within the client's patience is left at once.
    let mut backoff = Duration::from_millis(500);
    while tries < ATTEMPTS {
        let done = attempt(tries, server, wait(tries, ATTEMPTS)).await;
        tries += 1;
        if done == Next::Settled {
            return;
        }
        let left_at_once = impatient && done == Next::Lost;
        if done != Next::Unreached && !left_at_once && tries < ATTEMPTS {
            tokio::time::sleep(backoff).await;
            backoff *= 2;
        }
        // Chosen after the back-off: the health checks may have learnt more meanwhile.
        server = next_server(server);
    }
}

/// The most attempts of one keyed write.
const ATTEMPTS: u32 = 4;

/// What an attempt leaves for its operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    /// Answered: nothing to send again.
    Settled,
    /// Unknown with an answer (a 5xx), or 503: a keyed write may be sent again.
    Retry,
    /// No answer in time, or the connection broke: the outcome is unknown, and a keyed
    /// write may be sent again.
    Lost,
    /// It reached no server (no connection): it did nothing, so any request may go again.
    Unreached,
}

/// Records an attempt; returns what it leaves for its operation.
#[allow(clippy::too_many_arguments)]
fn record(
    shared: &Shared,
    op: u64,
    attempt: u32,
    client: u32,
    server: usize,
    invoke_ms: f64,
    call: Call,
    a: Answer,
) -> Next {
    if let Some(Value::PostId { id }) = &a.value {
        let mut recent = shared.recent.lock().expect("not poisoned");
        recent.push(*id);
        if recent.len() > 4096 {
            recent.drain(..2048);
        }
    }
    if a.status.is_some() {
        shared.answered_now(server);
    }
    let next = match (a.outcome, a.status) {
        (Outcome::Fail, None) => Next::Unreached,
        (Outcome::Unknown, None) => Next::Lost,
        (Outcome::Unknown, _) | (_, Some(503)) => Next::Retry,
        _ => Next::Settled,
    };
    shared.history.lock().expect("not poisoned").push(Entry {
        op,
        attempt,
        client,
        server: server as u32,
        invoke_ms,
        complete_ms: shared.ms(),
        call,
        outcome: a.outcome,
        status: a.status,
        value: a.value,
        warned: a.warned,
        timing: a.timing,
    });
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A server that takes connections and never answers (a paused process), and one that
    /// answers every request with a profile of its own; their base URLs.
    async fn paused_and_live() -> (String, String) {
        let paused = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let live = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let urls = (
            format!("http://{}", paused.local_addr().unwrap()),
            format!("http://{}", live.local_addr().unwrap()),
        );
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((s, _)) = paused.accept().await {
                held.push(s);
            }
        });
        tokio::spawn(async move {
            while let Ok((mut s, _)) = live.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf).await;
                    let body = r#"{"name":"live"}"#;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = s.write_all(format!("{head}{body}").as_bytes()).await;
                });
            }
        });
        urls
    }

    fn plan(timeout_ms: u64, patience_ms: u64) -> Plan {
        Plan {
            users: vec![1, 2],
            hot: 1,
            tag: "t".into(),
            clients: 1,
            duration: Duration::from_secs(1),
            timeout: Duration::from_millis(timeout_ms),
            patience: Duration::from_millis(patience_ms),
            seed: 1,
        }
    }

    /// Runs `call` once from a client whose first pick is the paused server; its attempts.
    async fn one_op(plan: &Plan, call: Call, seed: u64) -> (Vec<Entry>, Duration) {
        let (paused, live) = paused_and_live().await;
        let shared = Shared::new(vec![paused, live], Instant::now());
        // The live server looks down to the health checks, so the first pick is the other.
        shared.down[1].store(true, std::sync::atomic::Ordering::Relaxed);
        let http = reqwest::Client::new();
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let began = Instant::now();
        run_op(&http, plan, &shared, &mut rng, 0, call).await;
        let history = std::mem::take(&mut *shared.history.lock().unwrap());
        (history, began.elapsed())
    }

    #[tokio::test]
    async fn an_impatient_client_leaves_a_paused_server_for_another() {
        let plan = plan(5_000, 200);
        let read = Call::Profile { uid: 1, strong: true };
        let (h, took) = one_op(&plan, read, 1).await;
        let op = &super::super::history::fold(&h)[0];
        assert_eq!(op.outcome, Outcome::Ok, "{h:?}");
        assert_eq!((h[0].server, h[0].outcome), (0, Outcome::Unknown));
        assert!(took < Duration::from_secs(2), "{took:?}");
        // Keyed writes too, whichever way the client first sends them.
        for seed in 0..12 {
            let write = Call::AddFriend { u: 1, v: 2 };
            let (h, took) = one_op(&plan, write, seed).await;
            let op = &super::super::history::fold(&h)[0];
            assert_eq!(op.outcome, Outcome::Ok, "seed {seed}: {h:?}");
            assert!(took < Duration::from_secs(2), "seed {seed}: {took:?}");
        }
    }

    /// Sends one read, first to a server that never answers it, while that server answers
    /// others (as `answering`); whether the client then left that server out.
    async fn left_out_after_a_hung_read(answering: bool) -> bool {
        let (paused, live) = paused_and_live().await;
        let shared = Arc::new(Shared::new(vec![paused, live], Instant::now()));
        shared.down[1].store(true, std::sync::atomic::Ordering::Relaxed);
        let others = answering.then(|| {
            let shared = shared.clone();
            tokio::spawn(async move {
                loop {
                    shared.answered_now(0);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        });
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let read = Call::Profile { uid: 1, strong: true };
        run_op(&reqwest::Client::new(), &plan(5_000, 200), &shared, &mut rng, 0, read).await;
        if let Some(t) = others {
            t.abort();
        }
        shared.down[0].load(std::sync::atomic::Ordering::Relaxed)
    }

    #[tokio::test]
    async fn a_server_that_answers_others_stays_in_a_silent_one_is_left_out() {
        assert!(left_out_after_a_hung_read(false).await, "a paused server is left out");
        assert!(!left_out_after_a_hung_read(true).await, "a live one that kept one waiting");
    }

    #[tokio::test]
    async fn a_write_without_a_key_waits_the_whole_timeout_and_is_not_sent_again() {
        let plan = plan(600, 100);
        let put = Call::PutProfile { uid: 1, name: "n".into() };
        let (h, took) = one_op(&plan, put, 1).await;
        assert_eq!(h.len(), 1, "one attempt: {h:?}");
        assert_eq!(h[0].outcome, Outcome::Unknown);
        assert!(took >= Duration::from_millis(600), "{took:?}");
    }

    #[tokio::test]
    async fn a_patient_client_waits_its_whole_timeout_on_a_read() {
        let plan = plan(300, 300);
        let (h, took) = one_op(&plan, Call::Profile { uid: 1, strong: true }, 1).await;
        assert_eq!(h.len(), 1, "one attempt: {h:?}");
        assert_eq!(h[0].outcome, Outcome::Unknown);
        assert!(took >= Duration::from_millis(300), "{took:?}");
    }
}
