//! `kith bench feed-crash`: the feed's crash trial. `kith serve --cache write-back` (push
//! feeds by default, Redis optional) runs as a child process on a small generated store
//! while client threads send mixed writes: posts, follows, unfollows, friend adds and
//! deletes, profile changes. It is SIGKILLed at random moments and restarted; after each
//! restart every write acknowledged so far is checked: posts readable by id and at their
//! place in a follower's feed, follows and friendships as last acknowledged, profiles equal
//! to the last acknowledged one or a later tried one.
//!
//! Each client thread owns a share of the users (uid modulo the threads): it alone posts as
//! them, changes their follows and profiles, and their friendships with higher uids, so the
//! last acknowledged value of everything is well defined. A write whose answer was lost to
//! the kill may or may not have happened; the check then accepts either outcome, until a
//! later acknowledged write settles it.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use reqwest::blocking::Client;
use serde::Serialize;
use serde_json::{Value, json};

use crate::machine::{Machine, git_commit, utc_now, write_json};

mod check;
use check::check;

#[derive(Debug, Args)]
pub struct FeedCrashArgs {
    /// SIGKILLs.
    #[arg(long, default_value_t = 200)]
    kills: usize,
    /// Users of the LFR graph the store starts from.
    #[arg(long, default_value_t = 300)]
    users: usize,
    /// How feeds are assembled.
    #[arg(long, default_value = "push", value_parser = ["pull", "push", "hybrid"])]
    feed: String,
    /// Use Redis for caches and timelines (a Redis the trial does not restart).
    #[arg(long)]
    redis: Option<String>,
    /// Client threads writing at once.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Longest run between two kills, in milliseconds (each run is random below it).
    #[arg(long, default_value_t = 1500)]
    max_run_ms: u64,
    /// Where to write the JSON results (default: bench/results/feed-crash-<date>.json).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seed of the graph, the writes and the kill times.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// What the last acknowledged write says a follow or friendship is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    Yes,
    No,
    /// Never acknowledged, or a later write's outcome is unknown.
    Either,
}

/// Writes acknowledged, by kind.
#[derive(Clone, Copy, Debug, Default, Serialize)]
struct Counts {
    posts: u64,
    follows: u64,
    unfollows: u64,
    friend_adds: u64,
    friend_deletes: u64,
    profiles: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.posts += o.posts;
        self.follows += o.follows;
        self.unfollows += o.unfollows;
        self.friend_adds += o.friend_adds;
        self.friend_deletes += o.friend_deletes;
        self.profiles += o.profiles;
    }
}

/// One client thread's share of the expected state.
#[derive(Debug, Default)]
struct Part {
    /// (id, author, content) of acknowledged posts not yet checked after a restart.
    new_posts: Vec<(u64, u64, String)>,
    follows: BTreeMap<(u64, u64), Known>,
    friends: BTreeMap<(u64, u64), Known>,
    /// The last acknowledged name, and names tried since.
    profiles: BTreeMap<u64, (Option<String>, Vec<String>)>,
    acked: Counts,
    /// Writes whose answer the kill took.
    uncertain: u64,
    /// 5xx answers (never expected).
    server_errors: u64,
}

/// What the checks found.
#[derive(Debug, Default, Serialize)]
struct Lost {
    posts: u64,
    feed_position: u64,
    follows: u64,
    friendships: u64,
    profiles: u64,
}

impl Lost {
    fn total(&self) -> u64 {
        self.posts + self.feed_position + self.follows + self.friendships + self.profiles
    }
}

#[derive(Debug, Serialize)]
struct FeedCrashBench {
    benchmark: &'static str,
    date: String,
    commit: Option<String>,
    machine: Machine,
    feed: String,
    redis: bool,
    users: usize,
    threads: usize,
    kills: usize,
    acknowledged: Counts,
    /// Checks made after restarts: posts by id and in a feed, follow and friendship
    /// states, profiles.
    checks: u64,
    uncertain_writes: u64,
    server_errors: u64,
    lost: Lost,
    seconds: f64,
}

/// A `kith serve` child, SIGKILLed when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(exe: &Path, store: &Path, args: &FeedCrashArgs) -> Result<Server> {
        let mut cmd = Command::new(exe);
        cmd.args(["serve", "--dir"]).arg(store);
        cmd.args(["--addr", "127.0.0.1:0", "--cache", "write-back", "--feed", &args.feed]);
        // A few hundred milliseconds between flushes keep posts in the journal at the kill.
        cmd.args(["--flush-interval-ms", "300", "--celebrity-threshold", "20"]);
        if let Some(url) = &args.redis {
            cmd.args(["--redis", url]);
        }
        let mut child = cmd.stdout(Stdio::piped()).spawn().context("starting kith serve")?;
        let mut line = String::new();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        stdout.read_line(&mut line)?;
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        // Killed on any early return from here on.
        let mut server = Server { child, base: String::new() };
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .with_context(|| format!("kith serve did not start: {line:?}"))?;
        server.base = format!("http://{addr}");
        Ok(server)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Waits until the fan-out queue is empty.
    fn settle(&self, http: &Client) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let s: Value = http.get(self.url("/stats")).send()?.json()?;
            if s["fanout_queue_depth"] == 0 {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("fan-out did not drain: {s}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }
}

fn client() -> Client {
    Client::builder().timeout(Duration::from_secs(10)).build().expect("HTTP client")
}

/// The status of a write, or `None` when its answer was lost (connection closed).
fn send(req: reqwest::blocking::RequestBuilder) -> Option<(u16, Value)> {
    let r = req.send().ok()?;
    let status = r.status().as_u16();
    Some((status, r.json().unwrap_or(Value::Null)))
}

/// One client thread's writes until `stop` (or the server dies).
fn write(base: &str, part: &mut Part, me: u64, threads: u64, users: u64, seed: u64) {
    let http = client();
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let owned: Vec<u64> = (0..users).filter(|u| u % threads == me).collect();
    for i in 0.. {
        let u = owned[rng.random_range(0..owned.len())];
        let kind = rng.random_range(0..10);
        let answer = match kind {
            0..4 => {
                let content = format!("s{seed} t{me} #{i}");
                let r = send(
                    http.post(format!("{base}/posts"))
                        .json(&json!({"author": u, "content": content})),
                );
                if let Some((201, v)) = &r {
                    part.new_posts.push((v["id"].as_u64().unwrap_or(0), u, content));
                    part.acked.posts += 1;
                }
                r
            }
            4..6 => {
                let t = rng.random_range(0..users);
                if t == u {
                    continue;
                }
                let state = part.follows.entry((u, t)).or_insert(Known::No);
                let unfollow = *state == Known::Yes;
                let r = if unfollow {
                    send(http.delete(format!("{base}/users/{u}/follow/{t}")))
                } else {
                    send(
                        http.post(format!("{base}/users/{u}/follow"))
                            .json(&json!({"targets": [t]})),
                    )
                };
                *state = match (&r, unfollow) {
                    (Some((200, _)), false) => {
                        part.acked.follows += 1;
                        Known::Yes
                    }
                    (Some((200, _)), true) => {
                        part.acked.unfollows += 1;
                        Known::No
                    }
                    (Some((409, _)), _) => Known::Yes,
                    (Some((404, _)), _) => Known::No,
                    _ => Known::Either,
                };
                r
            }
            6..8 => {
                if u + 1 >= users {
                    continue;
                }
                let v = rng.random_range(u + 1..users);
                let state = part.friends.entry((u, v)).or_insert(Known::Either);
                let delete = *state == Known::Yes;
                let url = format!("{base}/users/{u}/friends/{v}");
                let r = send(if delete { http.delete(url) } else { http.post(url) });
                *state = match (&r, delete) {
                    (Some((200, _)), false) => {
                        part.acked.friend_adds += 1;
                        Known::Yes
                    }
                    (Some((200, _)), true) => {
                        part.acked.friend_deletes += 1;
                        Known::No
                    }
                    _ => Known::Either,
                };
                r
            }
            _ => {
                let name = format!("s{seed} t{me} #{i}");
                let url = format!("{base}/users/{u}/profile");
                if let Entry::Vacant(e) = part.profiles.entry(u) {
                    // The profile as it is before this run first changes it.
                    let Some((200, v)) = send(http.get(&url)) else { return };
                    e.insert((v["name"].as_str().map(str::to_string), Vec::new()));
                }
                let r = send(http.put(url).json(&json!({"name": name})));
                let entry = part.profiles.get_mut(&u).expect("inserted above");
                if let Some((200, _)) = r {
                    part.acked.profiles += 1;
                    *entry = (Some(name), Vec::new());
                } else {
                    entry.1.push(name);
                }
                r
            }
        };
        match answer {
            None => {
                // The kill took the answer (or the connection): this write is in doubt, and
                // the server is gone.
                part.uncertain += 1;
                return;
            }
            Some((s, _)) if s >= 500 => part.server_errors += 1,
            Some(_) => {}
        }
    }
}

fn lfr_store(dir: &Path, users: usize, seed: u64) -> Result<()> {
    let config = kith_graph::generate::LfrConfig {
        nodes: users,
        seed,
        ..kith_graph::generate::LfrConfig::default()
    };
    let graph = kith_graph::generate::lfr(&config)?.graph;
    let layout_config =
        kith_layout::LayoutConfig { method: kith_layout::Method::Bfs, ..Default::default() };
    let layout = kith_layout::compute(&graph, &layout_config)?.layout;
    let options = kith_store::BuildOptions {
        data: kith_store::DataSpec::Fixed(40),
        ..kith_store::BuildOptions::default()
    };
    let meta = kith_store::LayoutMeta::of(&layout_config);
    drop(kith_store::build(dir, &graph, &layout, meta, &options)?);
    Ok(())
}

pub(super) fn run(args: FeedCrashArgs) -> Result<()> {
    let start = Instant::now();
    let tmp = tempfile::tempdir()?;
    let store = tmp.path().join("store");
    lfr_store(&store, args.users, args.seed)?;
    let exe = std::env::current_exe()?;
    let mut rng = Pcg64Mcg::seed_from_u64(args.seed);
    let threads = args.threads.max(1);
    let mut parts: Vec<Part> = (0..threads).map(|_| Part::default()).collect();
    let mut every_post = Vec::new();
    let (mut lost, mut checks) = (Lost::default(), 0);
    for kill in 0..=args.kills {
        let server = Server::start(&exe, &store, &args)?;
        // Every post at the end; after each restart, the ones acknowledged since the last.
        let every: &[_] = if kill == args.kills { &every_post } else { &[] };
        checks += check(&server, &parts, &mut lost, every)?;
        for p in &mut parts {
            every_post.append(&mut p.new_posts);
        }
        if kill == args.kills {
            break;
        }
        let run = Duration::from_millis(rng.random_range(50..args.max_run_ms.max(51)));
        let base = server.base.clone();
        let users = args.users as u64;
        let round_seed: u64 = rng.random();
        std::thread::scope(|s| {
            for (me, part) in parts.iter_mut().enumerate() {
                let base = base.clone();
                let seed = round_seed ^ (me as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                s.spawn(move || write(&base, part, me as u64, threads as u64, users, seed));
            }
            std::thread::sleep(run);
            drop(server); // SIGKILL, mid-stream
        });
        if kill % 10 == 9 {
            eprintln!("{} kills, {} lost so far", kill + 1, lost.total());
        }
    }
    let mut acknowledged = Counts::default();
    for p in &parts {
        acknowledged.add(&p.acked);
    }
    let report = FeedCrashBench {
        benchmark: "feed-crash",
        date: utc_now(),
        commit: git_commit(),
        machine: Machine::describe(),
        feed: args.feed.clone(),
        redis: args.redis.is_some(),
        users: args.users,
        threads,
        kills: args.kills,
        acknowledged,
        checks,
        uncertain_writes: parts.iter().map(|p| p.uncertain).sum(),
        server_errors: parts.iter().map(|p| p.server_errors).sum(),
        lost,
        seconds: start.elapsed().as_secs_f64(),
    };
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!("bench/results/feed-crash-{}.json", &report.date[..10]))
    });
    write_json(&out, &report)?;
    crate::say!("wrote {}", out.display());
    crate::say!(
        "{} kills, {:?} acknowledged, {} checks: {} lost, {} server errors",
        report.kills,
        report.acknowledged,
        report.checks,
        report.lost.total(),
        report.server_errors
    );
    if report.lost.total() > 0 || report.server_errors > 0 {
        bail!("the feed crash trial failed");
    }
    Ok(())
}
