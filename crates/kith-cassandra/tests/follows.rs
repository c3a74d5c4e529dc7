//! Follow edits left half done (a server killed, or a write failed, after the edge changed
//! and before the follower index did) are finished by the store's repair, and by any read of
//! the followers, on a real cluster: the follower lists and counts agree with the edges.

use std::sync::{Arc, Mutex};

use kith_cassandra::{BuildConfig, CassandraOptions, CassandraStore, build, drop_store, testing};
use kith_graph::Graph;
use kith_layout::Layout;
use kith_store::{Engine, Fence, IdempotencyRecord, LayoutMeta};
use scylla::client::session_builder::SessionBuilder;

/// The stored form of a uid (bigint, order kept).
fn key(uid: u64) -> i64 {
    (uid ^ (1 << 63)) as i64
}

fn now_ms() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    now.as_millis() as i64
}

#[test]
fn follow_edits_left_half_done_are_repaired() {
    let ks = testing::keyspace("halfdone");
    let options = CassandraOptions::new(testing::hosts(), &ks);
    let graph = Graph::from_edges(vec![10, 11, 12, 13], false, vec![(0, 1), (2, 3)]);
    let layout = Layout::identity(graph.num_nodes());
    let (store, _) =
        build(&options, &graph, &layout, LayoutMeta::default(), &BuildConfig::default()).unwrap();
    let (a, b, c, d) = (10u64, 11u64, 12u64, 13u64);
    store.follow(a, &[b, d]).unwrap();
    assert_eq!(store.followers(b, 0, 10).unwrap(), [a]);
    // By hand, what a server killed between the two halves leaves: a → c switched on and
    // a → b off by lightweight transactions, each with its intent (30 s old: its bucket of
    // the intent log is past its first checkpoints), the index untouched.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = rt.block_on(SessionBuilder::new().known_nodes(testing::hosts()).build()).unwrap();
    let half_edit = |from: u64, target: u64, on: bool, nonce: i64, age_ms: i64| {
        rt.block_on(async {
            let cas = format!(
                "UPDATE {ks}.follows SET active = {on} WHERE uid = ? AND target = ? IF active != {on}"
            );
            s.query_unpaged(cas, (key(from), key(target))).await.unwrap();
            let at = now_ms() - age_ms;
            let by_target = format!(
                "INSERT INTO {ks}.follow_intents_at (target, at_ms, uid, nonce) VALUES (?, ?, ?, ?)"
            );
            s.query_unpaged(by_target, (key(target), at, key(from), nonce)).await.unwrap();
            let logged = format!(
                "INSERT INTO {ks}.follow_intent_log (bucket, shard, target, uid, nonce, at_ms) \
                 VALUES (?, ?, ?, ?, ?, ?)"
            );
            let (bucket, shard) = (at.div_euclid(2_000), nonce.rem_euclid(4) as i32);
            s.query_unpaged(logged, (bucket, shard, key(target), key(from), nonce, at))
                .await
                .unwrap();
        })
    };
    half_edit(a, c, true, 1, 30_000);
    half_edit(a, b, false, 2, 30_000);
    let mut repaired = store.repair_follows().unwrap();
    repaired.sort_unstable();
    assert_eq!(repaired, [(a, b, false), (a, c, true)]);
    assert_eq!(store.followees(a, 0, 10).unwrap(), [c, d]);
    assert!(store.followers(b, 0, 10).unwrap().is_empty());
    assert_eq!(store.followers(c, 0, 10).unwrap(), [a]);
    assert_eq!(store.followers(d, 0, 10).unwrap(), [a]);
    // An edit cut short a moment ago: the repair leaves its intent to its own edit for a
    // second, but a read of the followers settles it at once, so both sides agree.
    half_edit(d, c, true, 3, 0);
    assert!(!store.repair_follows().unwrap().contains(&(d, c, true)));
    assert_eq!(store.followers(c, 0, 10).unwrap(), [a, d]);
    for u in [a, b, c, d] {
        let deg = store.follow_degree(u).unwrap();
        assert_eq!(deg.followees, store.followees(u, 0, 10).unwrap().len() as u64, "{u}");
        assert_eq!(deg.followers, store.followers(u, 0, 10).unwrap().len() as u64, "{u}");
    }
    store.unfollow(d, c, None).unwrap();
    // Edits after a repair go on as usual, the edge's row switched off and on again.
    store.unfollow(a, c, None).unwrap();
    store.follow(a, &[c]).unwrap();
    assert_eq!(store.followers(c, 0, 10).unwrap(), [a]);
    assert_eq!(store.follow_degree(a).unwrap().followees, 2);
    // An edit found done by another whose row is not written yet (its server between the
    // two) is refused only once the row is: a retry answered by the refusal sees both sides.
    rt.block_on(async {
        let cas = format!(
            "UPDATE {ks}.follows SET active = true WHERE uid = ? AND target = ? IF active != true"
        );
        s.query_unpaged(cas, (key(d), key(b))).await.unwrap();
    });
    assert!(store.followers(b, 0, 10).unwrap().is_empty());
    assert!(matches!(store.follow(d, &[b]), Err(kith_store::Error::AlreadyFollowing { .. })));
    assert_eq!(store.followers(b, 0, 10).unwrap(), [d]);
    store.unfollow(d, b, None).unwrap();
    // Refusals: following twice, unfollowing what is not followed.
    assert!(matches!(
        store.follow(a, &[b, c]),
        Err(kith_store::Error::AlreadyFollowing { target, .. }) if target == c
    ));
    assert!(store.followers(b, 0, 10).unwrap().is_empty(), "a refused follow left no follower");
    assert!(matches!(store.unfollow(a, b, None), Err(kith_store::Error::NotFollowing { .. })));
    // A switch's round sent again (the driver resends it through another node after a
    // timeout or 500 ms) finds its own edit and does not apply twice, even after a later
    // edit: a round that a paused node held and ran late cannot undo that edit. The store's
    // conditions, on an edge never switched (`edit` null).
    let (u, v) = (9_000u64, 9_001u64);
    rt.block_on(async {
        let round = |on: bool, mine: i64, from: Option<i64>| {
            let s = &s;
            let cql = if on {
                format!(
                    "UPDATE {ks}.follows SET active = true, edit = ? WHERE uid = ? AND target = ? \
                     IF edit = ? AND active != true"
                )
            } else {
                format!(
                    "UPDATE {ks}.follows SET active = false, edit = ? WHERE uid = ? AND target = ? \
                     IF edit = ? AND active = true"
                )
            };
            async move {
                let rows = s
                    .query_unpaged(cql, (mine, key(u), key(v), from))
                    .await
                    .unwrap()
                    .into_rows_result()
                    .unwrap();
                let row = rows.first_row::<scylla::value::Row>().unwrap();
                let at = |name: &str| rows.column_specs().get_by_name(name).map(|(k, _)| k);
                use scylla::value::CqlValue::{BigInt, Boolean};
                let applied = matches!(row.columns[at("[applied]").unwrap()], Some(Boolean(true)));
                let found = match at("edit").and_then(|k| row.columns[k].clone()) {
                    Some(BigInt(e)) => Some(e),
                    _ => None,
                };
                (applied, found)
            }
        };
        assert_eq!(round(false, 6, None).await, (false, None), "not followed: refused");
        assert_eq!(round(true, 7, None).await, (true, None), "the first round applies");
        assert_eq!(round(true, 7, None).await, (false, Some(7)), "it finds its own");
        assert_eq!(round(true, 9, None).await, (false, Some(7)), "another finds 7's");
        assert_eq!(round(false, 8, Some(7)).await, (true, None), "a later unfollow");
        assert_eq!(round(true, 7, None).await, (false, Some(8)), "7 late: not again");
    });
    drop(store);
    drop_store(&options).unwrap();
}

/// What runs, once, the first time a fence checks the key's record: another attempt's work,
/// done while this one is between that check and its write.
type Between = Mutex<Option<Box<dyn FnOnce() + Send>>>;
static BETWEEN: Between = Mutex::new(None);
/// Checks that pass before [`BETWEEN`] runs.
static SKIP: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A claim (result 2, as the feed writes) is not an answer; the first check runs
/// [`BETWEEN`] and answers "not answered", as the record read then held.
fn answered_after_between(r: &IdempotencyRecord) -> bool {
    use std::sync::atomic::Ordering::SeqCst;
    if SKIP.fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1)).is_ok() {
        return r.result.first() != Some(&2);
    }
    let between = BETWEEN.lock().unwrap().take();
    if let Some(f) = between {
        f();
        return false;
    }
    r.result.first() != Some(&2)
}

fn record(key: &str, result: Vec<u8>) -> IdempotencyRecord {
    let expires_ms = now_ms() as u64 + 600_000;
    IdempotencyRecord { key: key.to_string(), fingerprint: 7, expires_ms, result }
}

/// Another server's attempt of the request: it writes the edge, answers, and the client
/// then writes the edge back.
fn another_attempt(other: &Arc<CassandraStore>, key: &'static str, uid: u64, t: u64, on: bool) {
    let other = other.clone();
    let work = move || {
        let flip = |on: bool| {
            if on { other.follow(uid, &[t]) } else { other.unfollow(uid, t, None).map(|_| ()) }
        };
        flip(on).unwrap();
        other.put_idempotency_record(&record(key, Vec::new())).unwrap();
        flip(!on).unwrap();
    };
    *BETWEEN.lock().unwrap() = Some(Box::new(move || std::thread::spawn(work).join().unwrap()));
}

/// One attempt of a keyed follow held between its check of the key and its edge write (a
/// paused server), while another server's attempt applies the request and answers and the
/// client writes the edge back: the held attempt applies nothing when it goes on, and the
/// client's write stands. Reading the record only before the write (the default) fails it.
#[test]
fn an_attempt_held_past_anothers_answer_does_not_undo_the_next_write() {
    let ks = testing::keyspace("fenced");
    let options = CassandraOptions::new(testing::hosts(), &ks);
    let graph = Graph::from_edges(vec![20, 21, 22, 23], false, vec![]);
    let layout = Layout::identity(graph.num_nodes());
    let (store, _) =
        build(&options, &graph, &layout, LayoutMeta::default(), &BuildConfig::default()).unwrap();
    let other = Arc::new(CassandraStore::open(&options).unwrap());
    let (a, b, c, d) = (20u64, 21u64, 22u64, 23u64);
    let fence = |key, taken_over| Fence {
        key,
        answered: answered_after_between,
        refused: |r: &IdempotencyRecord| r.result.first() == Some(&3),
        taken_over,
    };

    store.put_idempotency_record(&record("follow-held", vec![2])).unwrap();
    another_attempt(&other, "follow-held", a, b, true);
    assert_eq!(store.follow_unless_answered(a, &[b], fence("follow-held", false)).unwrap(), None);
    assert!(store.followees(a, 0, 10).unwrap().is_empty(), "the client's unfollow stands");
    assert!(store.followers(b, 0, 10).unwrap().is_empty());

    store.follow(a, &[b]).unwrap();
    store.put_idempotency_record(&record("unfollow-held", vec![2])).unwrap();
    another_attempt(&other, "unfollow-held", a, b, false);
    let held = store.unfollow_unless_answered(a, b, None, fence("unfollow-held", false));
    assert_eq!(held.unwrap(), None);
    assert_eq!(store.followees(a, 0, 10).unwrap(), [b], "the client's follow stands");
    assert_eq!(store.followers(b, 0, 10).unwrap(), [a]);

    // An attempt that took over from one that claimed the key and followed c, but did not
    // answer, counts c as followed and follows the rest.
    store.follow(a, &[c]).unwrap();
    store.put_idempotency_record(&record("taken-over", vec![2])).unwrap();
    let got = store.follow_unless_answered(a, &[c, d], fence("taken-over", true)).unwrap();
    assert_eq!(got, Some(()));
    assert_eq!(store.followees(a, 0, 10).unwrap(), [b, c, d]);
    // Not taken over, the same finds c followed: a refusal, and d is left alone.
    store.unfollow(a, d, None).unwrap();
    let refused = store.follow_unless_answered(a, &[d, c], fence("taken-over", false));
    assert!(
        matches!(refused, Err(kith_store::Error::AlreadyFollowing { target, .. }) if target == c)
    );
    assert_eq!(store.followees(a, 0, 10).unwrap(), [b, c]);

    // The claimer of `follow a → [c, d]` switches c on and is held before d; another server
    // takes the key over, follows c and d (c found on), and has yet to answer. The claimer
    // then finds d followed and refuses: its undo of c must not apply, as the take-over
    // made c its own edit.
    store.unfollow(a, c, None).unwrap();
    store.put_idempotency_record(&record("claimer", vec![2, 1])).unwrap();
    let taker = other.clone();
    SKIP.store(1, std::sync::atomic::Ordering::SeqCst);
    let take_over = move || {
        let got = taker.follow_unless_answered(a, &[c, d], fence("claimer", true)).unwrap();
        assert_eq!(got, Some(()), "the take-over follows both");
    };
    *BETWEEN.lock().unwrap() =
        Some(Box::new(move || std::thread::spawn(take_over).join().unwrap()));
    let refused = store.follow_unless_answered(a, &[c, d], fence("claimer", false));
    assert!(
        matches!(refused, Err(kith_store::Error::AlreadyFollowing { target, .. }) if target == d)
    );
    assert_eq!(store.followees(a, 0, 10).unwrap(), [b, c, d], "the take-over's edges stand");
    assert_eq!(store.followers(c, 0, 10).unwrap(), [a]);
    drop(store);
    drop(other);
    drop_store(&options).unwrap();
}
