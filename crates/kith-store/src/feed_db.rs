//! The feed database: the follow graph and the posts, in a RocksDB of their own inside the
//! user store's directory (`<store>/feed`), every write synced before it is acknowledged.
//!
//! Keys (big-endian, so RocksDB's order is the order we scan in):
//! - `F uid target` — uid follows target (followees of uid, ascending)
//! - `R target uid` — the same edge from the other side (followers of target)
//! - `P id` — a post
//! - `A author id` — the author's posts, oldest first (scanned backwards for "newest")
//! - `W`, `Q author`, `I key`, `E expiry key` — the fan-out watermark, pending re-pushes and
//!   idempotency records, see `feed_log.rs`

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

use rocksdb::{DB, Direction, IteratorMode, Options, ReadOptions, WriteBatch, WriteOptions};

use crate::error::{Error, Result};
use crate::feed_log::{self, IdempotencyRecord, add_record};
use crate::post::Post;
use crate::sync::lock;

const FOLLOWS: u8 = b'F';
const FOLLOWERS: u8 = b'R';
const POST: u8 = b'P';
const AUTHOR: u8 = b'A';

/// The most targets one follow request may name.
pub const MAX_FOLLOW_TARGETS: usize = 1000;

fn key1(tag: u8, a: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = tag;
    k[1..].copy_from_slice(&a.to_be_bytes());
    k
}

fn key2(tag: u8, a: u64, b: u64) -> [u8; 17] {
    let mut k = [0u8; 17];
    k[..9].copy_from_slice(&key1(tag, a));
    k[9..].copy_from_slice(&b.to_be_bytes());
    k
}

fn second(key: &[u8]) -> u64 {
    u64::from_be_bytes(key[9..17].try_into().expect("17-byte key"))
}

/// Follower and followee counts, kept in memory (rebuilt by one scan at open).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Degree {
    /// How many users this user follows.
    pub followees: u64,
    /// How many users follow this user.
    pub followers: u64,
}

/// Checks a follow request's targets before any is looked up: 1 to
/// [`MAX_FOLLOW_TARGETS`] of them, not the user, none named twice (the same errors whatever
/// the engine).
pub fn check_follow_targets(uid: u64, targets: &[u64]) -> Result<()> {
    if targets.is_empty() {
        return Err(Error::Invalid("no targets to follow".into()));
    }
    if targets.len() > MAX_FOLLOW_TARGETS {
        return Err(Error::TooLarge {
            what: "follow targets",
            got: targets.len() as u64,
            limit: MAX_FOLLOW_TARGETS as u64,
        });
    }
    let mut seen = std::collections::HashSet::new();
    for &t in targets {
        if t == uid {
            return Err(Error::SelfFollow(uid));
        }
        if !seen.insert(t) {
            return Err(Error::AlreadyFollowing { uid, target: t });
        }
    }
    Ok(())
}

/// The feed database.
pub(crate) struct FeedDb {
    db: DB,
    degrees: RwLock<HashMap<u64, Degree>>,
    /// Serialises follow-graph edits so "already following" checks and counts stay exact.
    follow_lock: Mutex<()>,
    /// The next pending re-push token: seeded from the clock at open, so tokens differ
    /// across restarts too.
    next_token: AtomicU64,
}

impl std::fmt::Debug for FeedDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedDb").field("path", &self.db.path()).finish_non_exhaustive()
    }
}

impl FeedDb {
    /// Opens (creating if needed) the feed database in `dir`.
    pub(crate) fn open(dir: &Path) -> Result<FeedDb> {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_paranoid_checks(true);
        let db = DB::open(&o, dir)?;
        let mut degrees: HashMap<u64, Degree> = HashMap::new();
        for item in db.prefix_iterator([FOLLOWS]) {
            let (k, _) = item?;
            if k.first() != Some(&FOLLOWS) {
                break;
            }
            let uid = u64::from_be_bytes(k[1..9].try_into().expect("17-byte key"));
            degrees.entry(uid).or_default().followees += 1;
            degrees.entry(second(&k)).or_default().followers += 1;
        }
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        let seed = since.map_or(1, |d| d.as_nanos() as u64);
        Ok(FeedDb {
            db,
            degrees: RwLock::new(degrees),
            follow_lock: Mutex::new(()),
            next_token: AtomicU64::new(seed),
        })
    }

    pub(crate) fn write(&self, batch: WriteBatch) -> Result<()> {
        let mut w = WriteOptions::default();
        w.set_sync(true);
        Ok(self.db.write_opt(batch, &w)?)
    }

    /// The user's follow counts.
    pub(crate) fn degree(&self, uid: u64) -> Degree {
        let d = self.degrees.read().unwrap_or_else(PoisonError::into_inner);
        d.get(&uid).copied().unwrap_or_default()
    }

    /// Whether `uid` follows `target`.
    pub(crate) fn follows(&self, uid: u64, target: u64) -> Result<bool> {
        Ok(self.db.get_pinned(key2(FOLLOWS, uid, target))?.is_some())
    }

    /// Makes `uid` follow every target, atomically: if any is already followed (or named
    /// twice) nothing changes. Existence of the users is the caller's to check. The
    /// idempotency record, if any, is stored in the same batch.
    pub(crate) fn follow(
        &self,
        uid: u64,
        targets: &[u64],
        record: Option<&IdempotencyRecord>,
    ) -> Result<()> {
        check_follow_targets(uid, targets)?;
        let _g = lock(&self.follow_lock);
        let mut batch = WriteBatch::default();
        for &t in targets {
            if self.follows(uid, t)? {
                return Err(Error::AlreadyFollowing { uid, target: t });
            }
            batch.put(key2(FOLLOWS, uid, t), []);
            batch.put(key2(FOLLOWERS, t, uid), []);
        }
        if let Some(r) = record {
            add_record(&self.db, &mut batch, r)?;
        }
        self.write(batch)?;
        let mut d = self.degrees.write().unwrap_or_else(PoisonError::into_inner);
        d.entry(uid).or_default().followees += targets.len() as u64;
        for &t in targets {
            d.entry(t).or_default().followers += 1;
        }
        Ok(())
    }

    /// Removes the follow; returns the target's follower count before and after. With
    /// `repush_at = Some(t)`, an unfollow that brings the target's followers from above `t`
    /// to `t` stores a pending re-push of the target. The re-push and the idempotency record,
    /// if any, are stored in the same batch.
    pub(crate) fn unfollow(
        &self,
        uid: u64,
        target: u64,
        repush_at: Option<u64>,
        record: Option<&IdempotencyRecord>,
    ) -> Result<(u64, u64)> {
        let _g = lock(&self.follow_lock);
        if !self.follows(uid, target)? {
            return Err(Error::NotFollowing { uid, target });
        }
        let mut batch = WriteBatch::default();
        batch.delete(key2(FOLLOWS, uid, target));
        batch.delete(key2(FOLLOWERS, target, uid));
        if repush_at.is_some_and(|t| self.degree(target).followers == t + 1) {
            let token = self.next_token.fetch_add(1, Ordering::Relaxed);
            batch.put(feed_log::repush_key(target), token.to_be_bytes());
        }
        if let Some(r) = record {
            add_record(&self.db, &mut batch, r)?;
        }
        self.write(batch)?;
        let mut d = self.degrees.write().unwrap_or_else(PoisonError::into_inner);
        d.entry(uid).or_default().followees -= 1;
        let t = d.entry(target).or_default();
        t.followers -= 1;
        Ok((t.followers + 1, t.followers))
    }

    fn scan(&self, tag: u8, uid: u64, offset: usize, limit: usize) -> Result<Vec<u64>> {
        self.scan_from(tag, uid, 0, offset, limit)
    }

    /// A page of `tag`'s second ids under `uid`, from `from` on, after skipping `offset`.
    fn scan_from(
        &self,
        tag: u8,
        uid: u64,
        from: u64,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<u64>> {
        let mut read = ReadOptions::default();
        read.set_iterate_upper_bound(key1(tag, uid.wrapping_add(1)).to_vec());
        if uid == u64::MAX {
            read.set_iterate_upper_bound(vec![tag + 1]);
        }
        let start = key2(tag, uid, from);
        let it = self.db.iterator_opt(IteratorMode::From(&start, Direction::Forward), read);
        let mut out = Vec::new();
        for item in it.skip(offset).take(limit) {
            let (k, _) = item?;
            out.push(second(&k));
        }
        Ok(out)
    }

    /// Who `uid` follows, ascending, a page.
    pub(crate) fn followees(&self, uid: u64, offset: usize, limit: usize) -> Result<Vec<u64>> {
        self.scan(FOLLOWS, uid, offset, limit)
    }

    /// Who follows `uid`, ascending, a page.
    pub(crate) fn followers(&self, uid: u64, offset: usize, limit: usize) -> Result<Vec<u64>> {
        self.scan(FOLLOWERS, uid, offset, limit)
    }

    /// Up to `limit` followers of `uid` with uids `from` or above, ascending: a seek, so
    /// paging through a large follower list costs one page per call.
    pub(crate) fn followers_from(&self, uid: u64, from: u64, limit: usize) -> Result<Vec<u64>> {
        self.scan_from(FOLLOWERS, uid, from, 0, limit)
    }

    /// Stores posts (and their author index entries) in one synced batch, with the
    /// idempotency record if any. Idempotent.
    pub(crate) fn put_posts(
        &self,
        posts: &[&Post],
        record: Option<&IdempotencyRecord>,
    ) -> Result<()> {
        let mut batch = WriteBatch::default();
        for p in posts {
            batch.put(key1(POST, p.id), p.encode());
            batch.put(key2(AUTHOR, p.author, p.id), []);
        }
        if let Some(r) = record {
            add_record(&self.db, &mut batch, r)?;
        }
        self.write(batch)
    }

    /// The posts with these ids that exist, in the same order (`None` for the others).
    pub(crate) fn get_posts(&self, ids: &[u64]) -> Result<Vec<Option<Post>>> {
        let keys: Vec<[u8; 9]> = ids.iter().map(|&id| key1(POST, id)).collect();
        let mut out = Vec::with_capacity(ids.len());
        for (got, &id) in self.db.multi_get(&keys).into_iter().zip(ids) {
            out.push(match got? {
                None => None,
                Some(v) => Some(Post::decode(&v, || format!("post {id}"))?),
            });
        }
        Ok(out)
    }

    /// Up to `limit` of the author's post ids below `before`, newest first.
    pub(crate) fn author_posts(&self, author: u64, before: u64, limit: usize) -> Result<Vec<u64>> {
        let mut read = ReadOptions::default();
        read.set_iterate_lower_bound(key1(AUTHOR, author).to_vec());
        let upper = key2(AUTHOR, author, before);
        let it = self.db.iterator_opt(IteratorMode::From(&upper, Direction::Reverse), read);
        let mut out = Vec::with_capacity(limit.min(64));
        for item in it {
            if out.len() == limit {
                break;
            }
            let (k, _) = item?;
            let id = second(&k);
            if id < before {
                out.push(id);
            }
        }
        Ok(out)
    }

    /// Up to `limit` posts with ids above `after`, ascending.
    pub(crate) fn posts_after(&self, after: u64, limit: usize) -> Result<Vec<Post>> {
        let mut out = Vec::new();
        if after == u64::MAX {
            return Ok(out);
        }
        let mut read = ReadOptions::default();
        read.set_iterate_upper_bound(vec![POST + 1]);
        let start = key1(POST, after + 1);
        let it = self.db.iterator_opt(IteratorMode::From(&start, Direction::Forward), read);
        for item in it.take(limit) {
            let (k, v) = item?;
            let id = u64::from_be_bytes(k[1..9].try_into().expect("9-byte key"));
            out.push(Post::decode(&v, || format!("post {id}"))?);
        }
        Ok(out)
    }

    /// The fan-out watermark, `None` if none was ever stored.
    pub(crate) fn fanout_watermark(&self) -> Result<Option<u64>> {
        feed_log::fanout_watermark(&self.db)
    }

    /// Stores the fan-out watermark; synced only when `sync` (lowering it must be durable
    /// before the posts it uncovers are acknowledged; a lost raise only repeats work).
    pub(crate) fn set_fanout_watermark(&self, watermark: u64, sync: bool) -> Result<()> {
        feed_log::set_fanout_watermark(&self.db, watermark, sync)
    }

    pub(crate) fn pending_repush(&self, author: u64) -> Result<Option<u64>> {
        feed_log::pending_repush(&self.db, author)
    }

    pub(crate) fn pending_repushes(&self) -> Result<Vec<u64>> {
        feed_log::pending_repushes(&self.db)
    }

    /// Removes the author's pending re-push if its token is still `token` (no unfollow stored
    /// it again since). Not synced: a removal lost in a crash only repeats the re-push.
    pub(crate) fn repush_done(&self, author: u64, token: u64) -> Result<()> {
        let _g = lock(&self.follow_lock);
        if self.pending_repush(author)? == Some(token) {
            self.db.delete(feed_log::repush_key(author))?;
        }
        Ok(())
    }

    /// The idempotency record under `key`, expired or not.
    pub(crate) fn idempotency_record(&self, key: &str) -> Result<Option<IdempotencyRecord>> {
        feed_log::idempotency_record(&self.db, key)
    }

    /// Stores an idempotency record on its own (for writes kept outside this database).
    pub(crate) fn put_idempotency_record(&self, record: &IdempotencyRecord) -> Result<()> {
        let mut batch = WriteBatch::default();
        add_record(&self.db, &mut batch, record)?;
        self.write(batch)
    }

    /// The largest post id stored.
    pub(crate) fn last_post_id(&self) -> Result<u64> {
        let mut it =
            self.db.iterator(IteratorMode::From(&key1(POST, u64::MAX), Direction::Reverse));
        match it.next().transpose()? {
            Some((k, _)) if k.first() == Some(&POST) && k.len() == 9 => {
                Ok(u64::from_be_bytes(k[1..9].try_into().expect("9-byte key")))
            }
            _ => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_and_posts() {
        let dir = tempfile::tempdir().unwrap();
        let db = FeedDb::open(dir.path()).unwrap();
        db.follow(1, &[2, 3, u64::MAX], None).unwrap();
        assert!(matches!(
            db.follow(1, &[4, 2], None),
            Err(Error::AlreadyFollowing { target: 2, .. })
        ));
        assert!(matches!(
            db.follow(1, &[4, 4], None),
            Err(Error::AlreadyFollowing { target: 4, .. })
        ));
        assert!(matches!(db.follow(1, &[1], None), Err(Error::SelfFollow(1))));
        assert_eq!(db.followees(1, 0, 10).unwrap(), vec![2, 3, u64::MAX]);
        assert_eq!(db.followees(1, 1, 1).unwrap(), vec![3]);
        assert_eq!(db.followers(u64::MAX, 0, 10).unwrap(), vec![1]);
        assert_eq!(db.degree(1), Degree { followees: 3, followers: 0 });
        assert_eq!(db.unfollow(1, 3, None, None).unwrap(), (1, 0));
        assert!(matches!(db.unfollow(1, 3, None, None), Err(Error::NotFollowing { .. })));
        let posts: Vec<Post> = (1..=5)
            .map(|i| Post { id: i * 10, author: i % 2, ts_ms: i, content: format!("p{i}") })
            .collect();
        db.put_posts(&posts.iter().collect::<Vec<_>>(), None).unwrap();
        assert_eq!(db.author_posts(1, u64::MAX, 10).unwrap(), vec![50, 30, 10]);
        assert_eq!(db.author_posts(1, 50, 1).unwrap(), vec![30]);
        assert_eq!(db.author_posts(0, 40, 10).unwrap(), vec![20]);
        assert_eq!(db.get_posts(&[20, 21]).unwrap(), vec![Some(posts[1].clone()), None]);
        assert_eq!(db.last_post_id().unwrap(), 50);
        let after: Vec<u64> = db.posts_after(20, 2).unwrap().iter().map(|p| p.id).collect();
        assert_eq!(after, vec![30, 40]);
        assert!(db.posts_after(50, 10).unwrap().is_empty());
        db.follow(7, &[3], None).unwrap();
        db.follow(9, &[3], None).unwrap();
        assert_eq!(db.followers_from(3, 0, 10).unwrap(), vec![7, 9]);
        assert_eq!(db.followers_from(3, 8, 10).unwrap(), vec![9]);
        assert_eq!(db.followers_from(3, 0, 1).unwrap(), vec![7]);
        drop(db);
        let db = FeedDb::open(dir.path()).unwrap();
        assert_eq!(db.degree(1), Degree { followees: 2, followers: 0 });
        assert_eq!(db.degree(2), Degree { followees: 0, followers: 1 });
    }
}
