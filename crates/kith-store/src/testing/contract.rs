//! The engine contract: random operations applied through `&dyn Engine` and to a plain
//! in-memory reference (BTreeMaps) must agree, and paths and neighbourhoods must match a
//! brute-force breadth-first search of the reference. [`contract`] knows nothing but the
//! trait; each engine's test hands it one (`tests/engine.rs` here, and every other engine's
//! crate).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::{Engine, Error, IdempotencyRecord, Neighborhood, Post, Profile, UserWrite, UsersPage};

/// What an engine should hold.
#[derive(Debug, Default)]
struct Reference {
    friends: BTreeMap<u64, BTreeSet<u64>>,
    profiles: BTreeMap<u64, Profile>,
    data: BTreeMap<u64, Vec<u8>>,
    /// (follower, followee).
    follows: BTreeSet<(u64, u64)>,
    posts: BTreeMap<u64, Post>,
    /// Authors with a pending re-push (followers brought down to `REPUSH_AT`).
    repushes: BTreeSet<u64>,
    /// Re-pushes stored so far, so the test can tell it exercised them.
    repushes_stored: u32,
}

/// The celebrity threshold the contract's unfollows pass: small, so random follows cross it.
const REPUSH_AT: u64 = 2;

impl Reference {
    /// The users the engine holds at the start, read through the listing.
    fn read(engine: &dyn Engine) -> Reference {
        let mut r = Reference::default();
        let mut cursor = None;
        loop {
            let (page, next): UsersPage = engine.users_page(cursor, 7).unwrap();
            for (uid, profile) in page {
                let user = engine.get_user(uid).unwrap();
                assert_eq!(user.profile, profile);
                r.friends.insert(uid, user.friends.into_iter().collect());
                r.profiles.insert(uid, profile);
                r.data.insert(uid, engine.get_data(uid, None).unwrap());
            }
            match next {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(engine.count_users().unwrap(), r.friends.len() as u64);
        r
    }

    fn followees(&self, uid: u64) -> Vec<u64> {
        self.follows.range((uid, 0)..=(uid, u64::MAX)).map(|&(_, t)| t).collect()
    }

    fn followers(&self, uid: u64) -> Vec<u64> {
        self.follows.iter().filter(|&&(_, t)| t == uid).map(|&(f, _)| f).collect()
    }

    /// Breadth-first distances from `from`.
    fn distances(&self, from: u64) -> HashMap<u64, u32> {
        let mut dist = HashMap::from([(from, 0)]);
        let mut queue = VecDeque::from([from]);
        while let Some(u) = queue.pop_front() {
            for &v in &self.friends[&u] {
                if !dist.contains_key(&v) {
                    dist.insert(v, dist[&u] + 1);
                    queue.push_back(v);
                }
            }
        }
        dist
    }
}

/// Random operations through `engine`, checked against the reference as they go and at the
/// end. The engine must hold at least two users; users it holds are read first.
///
/// # Panics
/// At the first disagreement, naming the operation.
pub fn contract(engine: &dyn Engine) {
    let mut r = Reference::read(engine);
    assert!(r.friends.len() >= 2, "the contract needs an engine with users");
    let mut rng = Pcg64Mcg::seed_from_u64(11);
    let mut next_uid = 1u64 << 40;
    let mut next_post = engine.last_post_id().unwrap() + 1;
    for step in 0..1500u32 {
        let uids: Vec<u64> = r.friends.keys().copied().collect();
        let u = uids[rng.random_range(0..uids.len())];
        let v = uids[rng.random_range(0..uids.len())];
        match rng.random_range(0..100) {
            0..18 => {
                let got = engine.add_friend(u, v);
                if u == v {
                    assert!(matches!(got, Err(Error::SelfFriendship(_))), "{got:?}");
                } else {
                    let new = r.friends.get_mut(&u).unwrap().insert(v);
                    r.friends.get_mut(&v).unwrap().insert(u);
                    assert_eq!(got.unwrap(), new, "add_friend({u}, {v})");
                }
            }
            18..28 if u != v => {
                let existed = r.friends.get_mut(&u).unwrap().remove(&v);
                r.friends.get_mut(&v).unwrap().remove(&u);
                assert_eq!(engine.delete_friend(u, v).unwrap(), existed, "delete_friend({u}, {v})");
            }
            28..34 => {
                let profile =
                    Profile { name: format!("p{step}"), age: Some(step), ..Profile::default() };
                engine.put_profile(u, &profile).unwrap();
                r.profiles.insert(u, profile);
            }
            34..40 => {
                let data: Vec<u8> = (0..rng.random_range(0..90)).map(|_| rng.random()).collect();
                engine.put_data(u, &data).unwrap();
                r.data.insert(u, data);
            }
            40..48 => put_user(engine, &mut r, &mut rng, &uids, &mut next_uid),
            48..58 => {
                let targets: Vec<u64> = (0..rng.random_range(1..4))
                    .map(|_| uids[rng.random_range(0..uids.len())])
                    .collect();
                follow(engine, &mut r, u, &targets);
            }
            58..64 => {
                let target = r.followees(u).first().copied().filter(|_| rng.random_bool(0.8));
                let target = target.unwrap_or(v);
                let got = engine.unfollow(u, target, Some(REPUSH_AT));
                if r.follows.remove(&(u, target)) {
                    let after = r.followers(target).len() as u64;
                    assert_eq!(got.unwrap(), (after + 1, after), "unfollow({u}, {target})");
                    if after == REPUSH_AT {
                        r.repushes.insert(target);
                        r.repushes_stored += 1;
                    }
                } else {
                    assert!(matches!(got, Err(Error::NotFollowing { .. })), "{got:?}");
                }
            }
            64..74 => {
                let posts: Vec<Post> = (0..rng.random_range(1..4))
                    .map(|i| {
                        next_post += rng.random_range(1..5);
                        let author = uids[rng.random_range(0..uids.len())];
                        let content = format!("post {i} of step {step}");
                        Post { id: next_post, author, ts_ms: u64::from(step), content }
                    })
                    .collect();
                engine.put_posts(&posts.iter().collect::<Vec<_>>()).unwrap();
                r.posts.extend(posts.into_iter().map(|p| (p.id, p)));
            }
            74..77 => repush(engine, &mut r, &mut rng),
            77..86 => check_user(engine, &r, u, &mut rng),
            86..96 => check_traversals(engine, &r, u, v, &mut rng),
            _ => check_feed(engine, &r, u, next_post, &mut rng),
        }
    }
    for &uid in r.friends.keys() {
        check_user(engine, &r, uid, &mut rng);
    }
    assert_eq!(Reference::read(engine).friends, r.friends, "the listing sees every user");
    assert_eq!(engine.last_post_id().unwrap(), r.posts.keys().last().copied().unwrap_or(0));
    let pending = engine.pending_repushes().unwrap();
    assert_eq!(pending, r.repushes.iter().copied().collect::<Vec<_>>());
    assert!(r.repushes_stored >= 5, "only {} re-pushes stored", r.repushes_stored);
    let sample = engine.random_users(9, &mut rng).unwrap();
    let distinct: BTreeSet<u64> = sample.iter().map(|(uid, _)| *uid).collect();
    assert_eq!((sample.len(), distinct.len()), (9, 9));
    assert!(sample.iter().all(|(uid, p)| r.profiles.get(uid) == Some(p)));
    let mut users = r.friends.keys().copied();
    let (a, b) = (users.next().unwrap(), users.next().unwrap());
    check_records(engine, &mut r, a, b, next_post);
    check_friendship_once(engine, &mut r, a, b);
    assert_eq!(engine.last_post_id().unwrap(), r.posts.keys().last().copied().unwrap_or(0));
    let unknown = next_uid + 1;
    assert!(matches!(engine.get_user(unknown), Err(Error::UnknownUser(x)) if x == unknown));
    assert!(matches!(engine.add_friend(unknown, next_uid - 1), Err(Error::UnknownUser(_))));
    assert!(matches!(engine.get_friends_list(unknown, 0, 10), Err(Error::UnknownUser(_))));
}

/// A whole user, new or replaced, with a few friends; the engine reports whose lists changed.
fn put_user(
    engine: &dyn Engine,
    r: &mut Reference,
    rng: &mut Pcg64Mcg,
    uids: &[u64],
    next_uid: &mut u64,
) {
    let uid = if rng.random_bool(0.4) { *next_uid } else { uids[rng.random_range(0..uids.len())] };
    *next_uid += 1;
    let friends: BTreeSet<u64> = (0..rng.random_range(0..5))
        .map(|_| uids[rng.random_range(0..uids.len())])
        .filter(|&f| f != uid)
        .collect();
    let profile = Profile { name: format!("whole {uid}"), ..Profile::default() };
    let data = rng.random_bool(0.5).then(|| vec![uid as u8; rng.random_range(0..60)]);
    let listed: Vec<u64> = friends.iter().copied().collect();
    let wrote = engine.put_user(uid, &profile, &listed, data.as_deref()).unwrap();
    let created = !r.friends.contains_key(&uid);
    let old = r.friends.get(&uid).cloned().unwrap_or_default();
    let mut touched: Vec<u64> = old.symmetric_difference(&friends).copied().collect();
    touched.push(uid);
    touched.sort_unstable();
    assert_eq!(wrote, UserWrite { created, touched }, "put_user({uid})");
    for f in &old {
        r.friends.get_mut(f).unwrap().remove(&uid);
    }
    for f in &friends {
        r.friends.get_mut(f).unwrap().insert(uid);
    }
    r.friends.insert(uid, friends);
    r.profiles.insert(uid, profile);
    match data {
        Some(d) => r.data.insert(uid, d),
        None => r.data.insert(uid, r.data.get(&uid).cloned().unwrap_or_default()),
    };
}

/// Follows all of `targets` or, if one is the user, already followed or named twice, none.
fn follow(engine: &dyn Engine, r: &mut Reference, uid: u64, targets: &[u64]) {
    let mut seen = BTreeSet::new();
    let mut refused = None;
    for &t in targets {
        if t == uid {
            refused = Some(Error::SelfFollow(uid));
        } else if !seen.insert(t) || r.follows.contains(&(uid, t)) {
            refused = Some(Error::AlreadyFollowing { uid, target: t });
        }
        if refused.is_some() {
            break;
        }
    }
    let got = engine.follow(uid, targets);
    match refused {
        Some(want) => assert_eq!(got.unwrap_err().to_string(), want.to_string()),
        None => {
            got.unwrap();
            r.follows.extend(targets.iter().map(|&t| (uid, t)));
        }
    }
}

/// Everything about one user reads back as the reference has it.
fn check_user(engine: &dyn Engine, r: &Reference, uid: u64, rng: &mut Pcg64Mcg) {
    let friends: Vec<u64> = r.friends[&uid].iter().copied().collect();
    let user = engine.get_user(uid).unwrap();
    assert_eq!(user.friends, friends, "friends of {uid}");
    assert_eq!(user.profile, r.profiles[&uid]);
    assert_eq!(user.data_bytes, r.data[&uid].len() as u64);
    assert_eq!(engine.get_profile(uid).unwrap(), r.profiles[&uid]);
    assert_eq!(engine.get_data(uid, None).unwrap(), r.data[&uid]);
    let some = rng.random_range(0..40);
    let want = &r.data[&uid][..r.data[&uid].len().min(some as usize)];
    assert_eq!(engine.get_data(uid, Some(some)).unwrap(), want);
    assert_eq!(engine.get_all_friends(uid).unwrap(), friends);
    let (offset, limit) = (rng.random_range(0..6), rng.random_range(0..6));
    let page = engine.get_friends_list(uid, offset, limit).unwrap();
    let want: Vec<u64> = friends.iter().skip(offset).take(limit).copied().collect();
    assert_eq!((page.friends, page.total), (want, friends.len()));
    assert!(engine.contains(uid).unwrap());
    // "List all friends' data", page by page in the engine's own order: every friend once,
    // each with the first bytes of its block.
    let (limit, bytes) = (rng.random_range(1..5), rng.random_range(0..30));
    let mut seen = Vec::new();
    for offset in (0..=friends.len()).step_by(limit) {
        let page = engine.list_friends_data(uid, Some(bytes), offset, limit).unwrap();
        assert_eq!(page.total, friends.len());
        assert!(page.friends.len() <= limit);
        for (f, data) in page.friends {
            let block = &r.data[&f];
            assert_eq!(data, block[..block.len().min(bytes as usize)], "data of {f}");
            seen.push(f);
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, friends, "friends' data of {uid}");
}

/// Paths and neighbourhoods against breadth-first distances of the reference.
fn check_traversals(engine: &dyn Engine, r: &Reference, a: u64, b: u64, rng: &mut Pcg64Mcg) {
    let dist = r.distances(a);
    let max = rng.random_range(0..=6);
    let got = engine.shortest_path(a, b, max).unwrap();
    match (dist.get(&b), &got) {
        (Some(&d), Some(path)) if d <= max => {
            assert_eq!(path.len() as u32, d + 1, "{a}->{b} within {max}: {path:?}");
            assert_eq!((path[0], *path.last().unwrap()), (a, b));
            assert!(path.windows(2).all(|w| r.friends[&w[0]].contains(&w[1])), "{path:?}");
        }
        (Some(&d), None) => assert!(d > max, "{a}->{b} within {max}: none, distance {d}"),
        (None, None) => {}
        (want, _) => panic!("{a}->{b} within {max}: {got:?}, distance {want:?}"),
    }
    let (hops, limit) = (rng.random_range(1..=3), rng.random_range(1..30));
    let mut want: Vec<(u64, u32)> =
        dist.iter().filter(|&(&v, &d)| v != a && d <= hops).map(|(&v, &d)| (v, d)).collect();
    want.sort_by_key(|&(v, d)| (d, v));
    let truncated = want.len() > limit;
    want.truncate(limit);
    let hood = engine.neighborhood(a, hops, limit).unwrap();
    assert_eq!(hood, Neighborhood { users: want, truncated }, "{a} within {hops}");
    assert!(matches!(engine.shortest_path(a, b, 7), Err(Error::TooLarge { .. })));
    assert!(matches!(engine.neighborhood(a, 4, 10), Err(Error::Invalid(_))));
}

/// Follow lists, counts and posts read back as the reference has them.
/// Finishes a pending re-push, or tries to with a stale token (which must keep it), and
/// compares the pending set.
fn repush(engine: &dyn Engine, r: &mut Reference, rng: &mut Pcg64Mcg) {
    assert_eq!(engine.pending_repushes().unwrap(), r.repushes.iter().copied().collect::<Vec<_>>());
    let Some(&author) = r.repushes.iter().nth(rng.random_range(0..r.repushes.len().max(1))) else {
        return;
    };
    let token = engine.pending_repush(author).unwrap().expect("pending");
    if rng.random_bool(0.3) {
        engine.repush_done(author, token.wrapping_add(1)).unwrap();
        assert_eq!(engine.pending_repush(author).unwrap(), Some(token), "a stale token");
    } else {
        engine.repush_done(author, token).unwrap();
        r.repushes.remove(&author);
        assert_eq!(engine.pending_repush(author).unwrap(), None);
    }
}

fn check_feed(engine: &dyn Engine, r: &Reference, uid: u64, next_post: u64, rng: &mut Pcg64Mcg) {
    let (followees, followers) = (r.followees(uid), r.followers(uid));
    let degree = engine.follow_degree(uid).unwrap();
    assert_eq!(degree.followees, followees.len() as u64, "followees of {uid}");
    assert_eq!(degree.followers, followers.len() as u64, "followers of {uid}");
    let (offset, limit) = (rng.random_range(0..3), rng.random_range(0..4));
    let page = |l: &[u64]| l.iter().skip(offset).take(limit).copied().collect::<Vec<u64>>();
    assert_eq!(engine.followees(uid, offset, limit).unwrap(), page(&followees));
    assert_eq!(engine.followers(uid, offset, limit).unwrap(), page(&followers));
    let before = rng.random_range(0..=next_post + 1);
    let limit = rng.random_range(0..5);
    let of = |a| r.posts.values().rev().filter(move |p| p.author == a && p.id < before);
    let want: Vec<u64> = of(uid).map(|p| p.id).take(limit).collect();
    assert_eq!(engine.author_posts(uid, before, limit).unwrap(), want, "posts of {uid}");
    let all: Vec<u64> = [uid].into_iter().chain(followees.iter().copied()).collect();
    let want: Vec<Vec<u64>> =
        all.iter().map(|&a| of(a).map(|p| p.id).take(limit).collect()).collect();
    assert_eq!(engine.authors_posts(&all, before, limit).unwrap(), want, "posts of {all:?}");
    let ids: Vec<u64> = (0..4).map(|_| rng.random_range(0..=next_post)).collect();
    let want: Vec<Option<Post>> = ids.iter().map(|id| r.posts.get(id).cloned()).collect();
    assert_eq!(engine.get_posts(&ids).unwrap(), want);
    let from = followers.get(rng.random_range(0..=followers.len())).copied().unwrap_or(0);
    let want: Vec<u64> = followers.iter().copied().filter(|&f| f >= from).take(limit).collect();
    assert_eq!(engine.followers_from(uid, from, limit).unwrap(), want, "followers of {uid}");
    let after = rng.random_range(0..=next_post);
    let want: Vec<Post> = r.posts.range(after + 1..).map(|(_, p)| p.clone()).take(limit).collect();
    assert_eq!(engine.posts_after(after, limit).unwrap(), want, "posts after {after}");
}

/// The fan-out watermark and idempotency records, alone and stored with the writes they
/// record: a failed write stores no record.
fn check_records(engine: &dyn Engine, r: &mut Reference, a: u64, b: u64, next_post: u64) {
    engine.set_fanout_watermark(0, 7, false).unwrap();
    engine.set_fanout_watermark(0, 5, true).unwrap();
    assert_eq!(engine.fanout_watermark(0).unwrap(), Some(5));
    super::servers::check_servers(engine);
    let record = |key: &str, result: Vec<u8>| IdempotencyRecord {
        key: key.into(),
        fingerprint: 99,
        expires_ms: u64::MAX / 2,
        result,
    };
    assert_eq!(engine.idempotency_record("none").unwrap(), None);
    engine.put_idempotency_record(&record("alone", vec![1])).unwrap();
    assert_eq!(engine.idempotency_record("alone").unwrap(), Some(record("alone", vec![1])));
    // A claim stores its record once; a later claim of the key finds the first, unchanged.
    let key = format!("claim-{next_post}");
    assert_eq!(engine.claim_idempotency_record(&record(&key, vec![3])).unwrap(), None);
    let second = engine.claim_idempotency_record(&record(&key, vec![4])).unwrap();
    assert_eq!(second, Some(record(&key, vec![3])), "the second claim of {key}");
    assert_eq!(engine.idempotency_record(&key).unwrap(), Some(record(&key, vec![3])));
    // A swap stores over the claim it names only.
    assert!(engine.swap_idempotency_record(&[3], &record(&key, vec![5])).unwrap());
    assert!(!engine.swap_idempotency_record(&[3], &record(&key, vec![6])).unwrap());
    assert!(!engine.swap_idempotency_record(&[3], &record("absent", vec![6])).unwrap());
    assert_eq!(engine.idempotency_record(&key).unwrap(), Some(record(&key, vec![5])));
    let post = Post { id: next_post + 1, author: a, ts_ms: 1, content: "recorded".into() };
    engine.put_posts_recorded(&[&post], &record("post", vec![2])).unwrap();
    assert_eq!(engine.idempotency_record("post").unwrap(), Some(record("post", vec![2])));
    assert_eq!(engine.get_posts(&[post.id]).unwrap(), vec![Some(post.clone())]);
    r.posts.insert(post.id, post);
    let target = if r.follows.contains(&(a, b)) { a } else { b };
    let got = engine.follow_recorded(a, &[target], &record("follow", vec![]));
    if target == a || r.follows.contains(&(a, target)) {
        assert!(got.is_err());
        assert_eq!(engine.idempotency_record("follow").unwrap(), None, "nothing applied");
    } else {
        got.unwrap();
        r.follows.insert((a, target));
        assert!(engine.idempotency_record("follow").unwrap().is_some());
        engine.unfollow_recorded(a, target, Some(REPUSH_AT), &record("unfollow", vec![])).unwrap();
        r.follows.remove(&(a, target));
        if r.followers(target).len() as u64 == REPUSH_AT {
            r.repushes.insert(target);
            r.repushes_stored += 1;
        }
        assert!(engine.idempotency_record("unfollow").unwrap().is_some());
    }
}

/// A keyed friendship write applies while its key holds no record or a claim, and is left
/// out once the key holds a finished record (another attempt answered the request).
fn check_friendship_once(engine: &dyn Engine, r: &mut Reference, a: u64, b: u64) {
    fn finished(r: &IdempotencyRecord) -> bool {
        r.result.first() == Some(&1)
    }
    let record = |result: Vec<u8>| IdempotencyRecord {
        key: "friend-once".into(),
        fingerprint: 5,
        expires_ms: u64::MAX / 2,
        result,
    };
    let had = r.friends[&a].contains(&b);
    let add = !had;
    let got = engine.change_friendship_unless_finished(a, b, add, "friend-once", finished);
    assert_eq!(got.unwrap(), Some(true), "no record: the write applies");
    engine.put_idempotency_record(&record(vec![2])).unwrap();
    let got = engine.change_friendship_unless_finished(a, b, add, "friend-once", finished);
    assert_eq!(got.unwrap(), Some(false), "a claim: the write applies (again, unchanged)");
    engine.put_idempotency_record(&record(vec![1])).unwrap();
    let got = engine.change_friendship_unless_finished(a, b, had, "friend-once", finished);
    assert_eq!(got.unwrap(), None, "a finished record: nothing written");
    assert_eq!(
        engine.get_all_friends(a).unwrap().contains(&b),
        add,
        "{a}–{b} as the first left it"
    );
    assert_eq!(engine.get_all_friends(b).unwrap().contains(&a), add);
    for (x, y) in [(a, b), (b, a)] {
        let list = r.friends.get_mut(&x).unwrap();
        if add {
            list.insert(y)
        } else {
            list.remove(&y)
        };
    }
}
