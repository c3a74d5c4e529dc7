//! The storage seam: [`Engine`], Parker's API (and the feed's follows and posts) as Rust
//! methods. The service and the feeds reach storage only through it, as `Arc<dyn Engine>`;
//! today the RocksDB [`Store`](crate::Store) implements it, and the contract test
//! (`tests/engine.rs`) holds any implementation to the same behaviour as a plain in-memory
//! reference.

use std::fmt::Debug;
use std::time::Duration;

use rand::RngCore;

use crate::error::Result;
use crate::feed_db::Degree;
use crate::feed_log::IdempotencyRecord;
use crate::page::{FriendsPage, UsersCursor, UsersPage, check_limit, friends_page, page_range};
use crate::paths::{self, Neighborhood};
use crate::post::Post;
use crate::progress::Progress;
use crate::record::{Profile, User};
use crate::relayout::RelayoutReport;
use crate::status::{Status, StoreGraph};
use crate::write::UserWrite;

/// A page of friends with the start of their data blocks ([`Engine::list_friends_data`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FriendsData {
    /// (friend, the first bytes of its data block), in the engine's order.
    pub friends: Vec<(u64, Vec<u8>)>,
    /// How many friends the user has.
    pub total: usize,
}

/// How many copies a read must consult.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadLevel {
    /// A read reflects every acknowledged write (on a replicated engine, a quorum of
    /// replicas answers).
    #[default]
    Strong,
    /// The nearest copy answers alone: on a replicated engine faster and available with a
    /// minority of replicas up, but it may miss a write that has not reached that copy yet.
    /// An engine with one copy reads it either way.
    One,
}

/// A storage engine for users, friendships, follows and posts.
///
/// Every write is durable when it returns. Methods block (they do I/O): async callers run
/// them on a blocking pool. Errors name what was wrong: an unknown user is
/// [`Error::UnknownUser`](crate::Error::UnknownUser), a limit passed is
/// [`Error::TooLarge`](crate::Error::TooLarge), and so on, the same for every engine.
///
/// Object safe: the service holds an `Arc<dyn Engine>`.
pub trait Engine: Send + Sync + Debug {
    /// Whether a user exists.
    fn contains(&self, uid: u64) -> Result<bool>;

    /// The whole user: profile, friends (ascending), data size.
    fn get_user(&self, uid: u64) -> Result<User>;

    /// Creates or replaces a whole user: profile, friends (each must exist, none the user;
    /// friendships change on both sides at once, dropped ones included) and, if given, the
    /// data block (a new user without one gets an empty block). Returns whether the user is
    /// new and, ascending, the user and every user whose friend list changed.
    fn put_user(
        &self,
        uid: u64,
        profile: &Profile,
        friends: &[u64],
        data: Option<&[u8]>,
    ) -> Result<UserWrite>;

    /// The user's profile.
    fn get_profile(&self, uid: u64) -> Result<Profile>;

    /// [`Engine::get_user`] at a read level; an engine with one copy of each user reads it
    /// whatever the level.
    fn get_user_at(&self, uid: u64, level: ReadLevel) -> Result<User> {
        let _ = level;
        self.get_user(uid)
    }

    /// [`Engine::get_profile`] at a read level, as [`Engine::get_user_at`].
    fn get_profile_at(&self, uid: u64, level: ReadLevel) -> Result<Profile> {
        let _ = level;
        self.get_profile(uid)
    }

    /// Replaces the profile of an existing user.
    fn put_profile(&self, uid: u64, profile: &Profile) -> Result<()>;

    /// The first `max_bytes` of the user's data block (all of it for `None`).
    fn get_data(&self, uid: u64, max_bytes: Option<u64>) -> Result<Vec<u8>>;

    /// Replaces the data block of an existing user.
    fn put_data(&self, uid: u64, data: &[u8]) -> Result<()>;

    /// The user's whole friend list, ascending.
    fn get_all_friends(&self, uid: u64) -> Result<Vec<u64>>;

    /// Bondhu's query, "list all friends' data", a page at a time: the user's friends in the
    /// engine's order (layout order where it keeps one; ascending here), from `offset`, at
    /// most `limit` (≤ [`MAX_PAGE`](crate::MAX_PAGE)), each with the first `max_bytes` of
    /// its data block (all of it for `None`); and how many friends the user has. A friend
    /// removed while the page is read is left out.
    fn list_friends_data(
        &self,
        uid: u64,
        max_bytes: Option<u64>,
        offset: usize,
        limit: usize,
    ) -> Result<FriendsData> {
        check_limit("friends page", limit)?;
        let friends = self.get_all_friends(uid)?;
        let mut data = Vec::new();
        for &f in &friends[page_range(friends.len(), offset, limit)] {
            match self.get_data(f, max_bytes) {
                Ok(bytes) => data.push((f, bytes)),
                Err(crate::Error::UnknownUser(gone)) if gone == f => {}
                Err(e) => return Err(e),
            }
        }
        Ok(FriendsData { friends: data, total: friends.len() })
    }

    /// A page of the friend list: [`friends_page`](crate::friends_page) of the whole list.
    fn get_friends_list(&self, uid: u64, offset: usize, limit: usize) -> Result<FriendsPage> {
        check_limit("friends page", limit)?;
        friends_page(&self.get_all_friends(uid)?, offset, limit)
    }

    /// Adds the friendship u–v on both sides at once. Returns whether it was new.
    fn add_friend(&self, u: u64, v: u64) -> Result<bool>;

    /// Removes the friendship u–v from both sides. Returns whether it existed.
    fn delete_friend(&self, u: u64, v: u64) -> Result<bool>;

    /// [`Engine::add_friend`] (`add`) or [`Engine::delete_friend`] for one attempt of a
    /// request under idempotency key `key`, whose other attempts may run on other servers:
    /// nothing is written, and `None` returned, when the record under `key` is one that
    /// `finished` accepts (another attempt answered the request) as the write is about to
    /// go. Without this check an attempt delayed past another's answer, and past the
    /// client's next write of the pair, undoes that write. By default the record is read
    /// just before the write; a store whose writes carry timestamps reads it just after it
    /// has chosen the write's, so that a write the check let through is stamped before any
    /// answer of another attempt and loses to whatever the client wrote after that answer.
    fn change_friendship_unless_finished(
        &self,
        u: u64,
        v: u64,
        add: bool,
        key: &str,
        finished: fn(&IdempotencyRecord) -> bool,
    ) -> Result<Option<bool>> {
        if self.idempotency_record(key)?.is_some_and(|r| finished(&r)) {
            return Ok(None);
        }
        let changed = if add { self.add_friend(u, v)? } else { self.delete_friend(u, v)? };
        Ok(Some(changed))
    }

    /// One page of every user, (uid, profile), in the engine's order: the first `limit`
    /// after `cursor` (`None` = from the start), and the cursor of the next page if there is
    /// one. A cursor the engine can no longer honour is refused
    /// ([`Error::StaleCursor`](crate::Error::StaleCursor)), never skips or repeats users.
    fn users_page(&self, cursor: Option<UsersCursor>, limit: usize) -> Result<UsersPage>;

    /// Up to `n` distinct users drawn uniformly at random with `rng`, (uid, profile).
    fn random_users(&self, n: usize, rng: &mut dyn RngCore) -> Result<Vec<(u64, Profile)>>;

    /// The number of users.
    fn count_users(&self) -> Result<u64>;

    /// A shortest friendship path from `from` to `to` (both ends included) of at most
    /// `max_hops` (≤ [`MAX_PATH_HOPS`](crate::MAX_PATH_HOPS)) edges, or `None`; both users
    /// must exist. Bidirectional breadth-first search over [`Engine::get_all_friends`].
    fn shortest_path(&self, from: u64, to: u64, max_hops: u32) -> Result<Option<Vec<u64>>> {
        let budget = self.traversal_budget();
        paths::shortest_path(
            from,
            to,
            max_hops,
            budget,
            |u| self.contains(u),
            |u| self.get_all_friends(u),
        )
    }

    /// Users within `hops` (1 to [`MAX_NEIGHBORHOOD_HOPS`](crate::MAX_NEIGHBORHOOD_HOPS))
    /// of `uid`, by distance then uid, at most `limit` of them; breadth-first over
    /// [`Engine::get_all_friends`].
    fn neighborhood(&self, uid: u64, hops: u32, limit: usize) -> Result<Neighborhood> {
        paths::neighborhood(uid, hops, limit, self.traversal_budget(), |u| self.get_all_friends(u))
    }

    /// The most friend-list entries one `shortest_path` or `neighborhood` may read before it
    /// is refused with [`Error::TooExpensive`](crate::Error::TooExpensive).
    fn traversal_budget(&self) -> u64 {
        paths::DEFAULT_TRAVERSAL_BUDGET
    }

    /// The layout's administration (the stored graph and order, the status, a relayout) where
    /// the service may drive it; `None` (the default) where the layout is administered from
    /// the command line only.
    fn layout_admin(&self) -> Option<&dyn LayoutAdmin> {
        None
    }

    /// Makes `uid` follow every target (1 to
    /// [`MAX_FOLLOW_TARGETS`](crate::MAX_FOLLOW_TARGETS)), all or none: a target already
    /// followed, named twice or the user themselves changes nothing and is an error. Whether
    /// the users exist is the caller's to check (the feed checks before it follows).
    fn follow(&self, uid: u64, targets: &[u64]) -> Result<()>;

    /// Stops `uid` following `target`; returns the target's follower count before and after.
    /// With `repush_at = Some(t)` (hybrid feeds' celebrity threshold), an unfollow that
    /// brings the target's followers from above `t` to `t` also stores, atomically with it,
    /// a pending re-push of the target ([`Engine::pending_repushes`]).
    fn unfollow(&self, uid: u64, target: u64, repush_at: Option<u64>) -> Result<(u64, u64)>;

    /// A page of whom `uid` follows, ascending.
    fn followees(&self, uid: u64, offset: usize, limit: usize) -> Result<Vec<u64>>;

    /// A page of who follows `uid`, ascending.
    fn followers(&self, uid: u64, offset: usize, limit: usize) -> Result<Vec<u64>>;

    /// The user's follow counts (in memory for RocksDB; a read of the store on Cassandra,
    /// so that every server sees every other's follows). Called from the blocking pool.
    fn follow_degree(&self, uid: u64) -> Result<Degree>;

    /// The counts of several users, in their order (one request where the engine can).
    fn follow_degrees(&self, uids: &[u64]) -> Result<Vec<Degree>> {
        uids.iter().map(|&u| self.follow_degree(u)).collect()
    }

    /// Stores posts (and indexes them by author) at once. Storing a post again changes
    /// nothing.
    fn put_posts(&self, posts: &[&Post]) -> Result<()>;

    /// The posts with these ids, in the same order (`None` for ids not stored).
    fn get_posts(&self, ids: &[u64]) -> Result<Vec<Option<Post>>>;

    /// Up to `limit` of the author's post ids below `before`, newest (largest) first.
    fn author_posts(&self, author: u64, before: u64, limit: usize) -> Result<Vec<u64>>;

    /// [`Engine::author_posts`] of each of `authors`, in their order: one round trip where
    /// the engine can (a pull feed reads a list per followee).
    fn authors_posts(&self, authors: &[u64], before: u64, limit: usize) -> Result<Vec<Vec<u64>>> {
        authors.iter().map(|&a| self.author_posts(a, before, limit)).collect()
    }

    /// The largest post id stored (0 with none).
    fn last_post_id(&self) -> Result<u64>;

    /// Up to `limit` followers of `uid` with uids `from` or above, ascending: the way to
    /// page through a follower list of any length with memory bounded by a page.
    fn followers_from(&self, uid: u64, from: u64, limit: usize) -> Result<Vec<u64>>;

    /// Up to `limit` stored posts with ids above `after`, ascending by id.
    fn posts_after(&self, after: u64, limit: usize) -> Result<Vec<Post>>;

    /// How many feed servers may share this store at once: each holds a server number
    /// below this, and hands out post ids congruent to its number modulo this. 1 for a
    /// store one process opens (RocksDB locks its directory).
    fn server_slots(&self) -> u16 {
        1
    }

    /// Takes a free server number (`only`: that one, if free) for `owner` for `lease`,
    /// `None` if none is free. A number is free once its owner released it or let its
    /// lease lapse. One process's store: always 0.
    fn claim_server(&self, owner: &str, lease: Duration, only: Option<u16>) -> Result<Option<u16>> {
        let _ = (owner, lease);
        Ok(only.map_or(Some(0), |n| (n == 0).then_some(0)))
    }

    /// Extends `owner`'s lease on `server`; false if it is no longer `owner`'s (it lapsed
    /// and another took it), in which case the caller must stop using the number.
    fn renew_server(&self, server: u16, owner: &str, lease: Duration) -> Result<bool> {
        let _ = (server, owner, lease);
        Ok(true)
    }

    /// Frees `server` if `owner` holds it.
    fn release_server(&self, server: u16, owner: &str) -> Result<()> {
        let _ = (server, owner);
        Ok(())
    }

    /// Server numbers with a stored fan-out watermark whose lease (`lease` long) has lapsed:
    /// a server that stopped without finishing (or handing over) its fan-out. A store may
    /// judge a lease lapsed by watching it for `lease` across calls.
    fn orphaned_servers(&self, lease: Duration) -> Result<Vec<u16>> {
        let _ = lease;
        Ok(Vec::new())
    }

    /// Server `server`'s fan-out watermark (every post it opened at or below it has been
    /// delivered to followers' timelines), `None` if none is stored.
    fn fanout_watermark(&self, server: u16) -> Result<Option<u64>>;

    /// Stores server `server`'s fan-out watermark; durable on return only when `sync`.
    fn set_fanout_watermark(&self, server: u16, watermark: u64, sync: bool) -> Result<()>;

    /// Forgets server `server`'s fan-out watermark (its fan-out was taken over and done).
    fn drop_fanout_watermark(&self, server: u16) -> Result<()> {
        let _ = server;
        Ok(())
    }

    /// The token of the author's pending re-push (see [`Engine::unfollow`]), if one is
    /// stored. A new token is stored each time an unfollow stores the re-push again.
    fn pending_repush(&self, author: u64) -> Result<Option<u64>>;

    /// The authors with a pending re-push, ascending: what a crash may have left undone.
    fn pending_repushes(&self) -> Result<Vec<u64>>;

    /// Removes the author's pending re-push if its token is still `token`, so a re-push
    /// stored again while an earlier one ran stays pending.
    fn repush_done(&self, author: u64, token: u64) -> Result<()>;

    /// Finishes follow edits left half done (an engine whose follow edit is not one atomic
    /// write keeps the follower index in line here); returns the edges repaired, as
    /// (uid, target, following). The feed calls it every second. Nothing to do by default.
    fn repair_follows(&self) -> Result<Vec<(u64, u64, bool)>> {
        Ok(Vec::new())
    }

    /// The idempotency record under `key`, if one is stored (expired or not: the caller
    /// compares [`IdempotencyRecord::expires_ms`] with its clock).
    fn idempotency_record(&self, key: &str) -> Result<Option<IdempotencyRecord>>;

    /// Stores an idempotency record on its own, durably (for writes outside the follow and
    /// post storage, whose own methods store the record atomically with the write).
    fn put_idempotency_record(&self, record: &IdempotencyRecord) -> Result<()>;

    /// Claims `record.key`: stores `record` unless a live record is stored under its key,
    /// atomically for every process that shares the store, and returns the record found
    /// there (`None`: this call stored `record`). A store that several servers share
    /// implements it with a compare-and-set; the default, for a store one process owns,
    /// reads then writes (that process serialises each key itself).
    fn claim_idempotency_record(
        &self,
        record: &IdempotencyRecord,
    ) -> Result<Option<IdempotencyRecord>> {
        if let Some(found) = self.idempotency_record(&record.key)? {
            return Ok(Some(found));
        }
        self.put_idempotency_record(record)?;
        Ok(None)
    }

    /// Stores `record` over a claim only while its key still holds that claim (`expected`:
    /// the claim's result, unique to the attempt that made it), atomically for every
    /// process that shares the store; whether it did. An attempt taking a key over from
    /// another, or storing an answer that another attempt may have superseded, does so by
    /// this, so that of two attempts only one answer stands. The default, for a store one
    /// process owns, reads then writes (that process serialises each key itself).
    fn swap_idempotency_record(&self, expected: &[u8], record: &IdempotencyRecord) -> Result<bool> {
        if self.idempotency_record(&record.key)?.is_none_or(|r| r.result != expected) {
            return Ok(false);
        }
        self.put_idempotency_record(record)?;
        Ok(true)
    }

    /// [`Engine::put_posts`] with an idempotency record stored atomically with the posts.
    fn put_posts_recorded(&self, posts: &[&Post], record: &IdempotencyRecord) -> Result<()>;

    /// [`Engine::follow`] with an idempotency record stored atomically with the follows.
    fn follow_recorded(&self, uid: u64, targets: &[u64], record: &IdempotencyRecord) -> Result<()>;

    /// [`Engine::follow`] for one attempt of a keyed request whose other attempts may run
    /// on other servers: `None`, and nothing of it left applied, once `fence` finds another
    /// attempt's answer as an edge write is about to go (a success answer leaves the edges
    /// this attempt switched, which that answer may count; a refusal has them undone).
    /// Without this check an attempt delayed past another's answer, and past the client's
    /// next write of the edge, undoes that write. By default the record is read once, just
    /// before the follow; a store that switches edges by condition reads it between the
    /// edge's read and its conditioned write, so that a write the check let through
    /// applies only if the edge has not changed since, and loses to any later write.
    fn follow_unless_answered(
        &self,
        uid: u64,
        targets: &[u64],
        fence: crate::Fence<'_>,
    ) -> Result<Option<()>> {
        if self.idempotency_record(fence.key)?.is_some_and(|r| (fence.answered)(&r)) {
            return Ok(None);
        }
        self.follow(uid, targets).map(Some)
    }

    /// [`Engine::unfollow`] as [`Engine::follow_unless_answered`] does a follow.
    fn unfollow_unless_answered(
        &self,
        uid: u64,
        target: u64,
        repush_at: Option<u64>,
        fence: crate::Fence<'_>,
    ) -> Result<Option<(u64, u64)>> {
        if self.idempotency_record(fence.key)?.is_some_and(|r| (fence.answered)(&r)) {
            return Ok(None);
        }
        self.unfollow(uid, target, repush_at).map(Some)
    }

    /// [`Engine::unfollow`] with an idempotency record stored atomically with the change.
    fn unfollow_recorded(
        &self,
        uid: u64,
        target: u64,
        repush_at: Option<u64>,
        record: &IdempotencyRecord,
    ) -> Result<(u64, u64)>;
}

/// The layout's administration, as the service's dashboard drives it.
pub trait LayoutAdmin: Send + Sync {
    /// The friendship graph as stored, with each user's position.
    fn stored_graph(&self) -> Result<StoreGraph>;

    /// The size of a record and of a page the store's layout was made for, in bytes.
    fn paging(&self) -> Result<(u64, u64)>;

    /// Users, friendships, the layout's cost against a fresh one of the same method (which it
    /// computes: seconds on a large store), pages per friend list.
    fn status(&self) -> Result<Status>;

    /// A fresh layout by the store's own method, written as the next generation and switched
    /// to, reporting its phases to `progress`.
    fn relayout(&self, progress: &Progress) -> Result<RelayoutReport>;
}
