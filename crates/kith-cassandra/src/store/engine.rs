//! [`CassandraStore`] as a [`kith_store::Engine`]: each method runs its requests on the
//! store's runtime and blocks until they are answered.

use kith_store::price::{Price, step};
use std::time::Duration;

use kith_store::{
    Degree, Engine, Fence, IdempotencyRecord, Post, Profile, ReadLevel, Result, User, UserWrite,
    UsersCursor, UsersPage,
};

use super::CassandraStore;

impl Engine for CassandraStore {
    fn contains(&self, uid: u64) -> Result<bool> {
        self.contains_impl(uid)
    }

    fn get_user(&self, uid: u64) -> Result<User> {
        self.get_user_impl(uid, ReadLevel::Strong)
    }

    /// `ReadLevel::One` reads the user's rows at consistency ONE.
    fn get_user_at(&self, uid: u64, level: ReadLevel) -> Result<User> {
        self.get_user_impl(uid, level)
    }

    fn put_user(
        &self,
        uid: u64,
        profile: &Profile,
        friends: &[u64],
        data: Option<&[u8]>,
    ) -> Result<UserWrite> {
        self.put_user_impl(uid, profile, friends, data)
    }

    fn get_profile(&self, uid: u64) -> Result<Profile> {
        self.get_profile_impl(uid, ReadLevel::Strong)
    }

    fn get_profile_at(&self, uid: u64, level: ReadLevel) -> Result<Profile> {
        self.get_profile_impl(uid, level)
    }

    fn put_profile(&self, uid: u64, profile: &Profile) -> Result<()> {
        self.put_profile_impl(uid, profile)
    }

    fn get_data(&self, uid: u64, max_bytes: Option<u64>) -> Result<Vec<u8>> {
        self.get_data_impl(uid, max_bytes)
    }

    fn put_data(&self, uid: u64, data: &[u8]) -> Result<()> {
        self.put_data_impl(uid, data)
    }

    fn get_all_friends(&self, uid: u64) -> Result<Vec<u64>> {
        self.get_all_friends_impl(uid)
    }

    fn add_friend(&self, u: u64, v: u64) -> Result<bool> {
        Ok(self.change_friendship(u, v, true, None)?.unwrap_or(false))
    }

    fn delete_friend(&self, u: u64, v: u64) -> Result<bool> {
        Ok(self.change_friendship(u, v, false, None)?.unwrap_or(false))
    }

    fn change_friendship_unless_finished(
        &self,
        u: u64,
        v: u64,
        add: bool,
        key: &str,
        finished: fn(&IdempotencyRecord) -> bool,
    ) -> Result<Option<bool>> {
        self.change_friendship(u, v, add, Some((key, finished)))
    }

    fn users_page(&self, cursor: Option<UsersCursor>, limit: usize) -> Result<UsersPage> {
        self.users_page_impl(cursor, limit)
    }

    fn random_users(&self, n: usize, rng: &mut dyn rand::RngCore) -> Result<Vec<(u64, Profile)>> {
        self.random_users_impl(n, rng)
    }

    fn count_users(&self) -> Result<u64> {
        self.count_users_impl()
    }

    fn traversal_budget(&self) -> u64 {
        self.traversal_budget
    }

    fn follow(&self, uid: u64, targets: &[u64]) -> Result<()> {
        self.follow_impl(uid, targets, None, None).map(|_| ())
    }

    fn unfollow(&self, uid: u64, target: u64, repush_at: Option<u64>) -> Result<(u64, u64)> {
        Ok(self.unfollow_impl(uid, target, repush_at, None, None)?.unwrap_or_default())
    }

    fn follow_unless_answered(
        &self,
        uid: u64,
        targets: &[u64],
        fence: Fence<'_>,
    ) -> Result<Option<()>> {
        self.follow_impl(uid, targets, None, Some(fence))
    }

    fn unfollow_unless_answered(
        &self,
        uid: u64,
        target: u64,
        repush_at: Option<u64>,
        fence: Fence<'_>,
    ) -> Result<Option<(u64, u64)>> {
        self.unfollow_impl(uid, target, repush_at, None, Some(fence))
    }

    fn followees(&self, uid: u64, offset: usize, limit: usize) -> Result<Vec<u64>> {
        self.followees_impl(uid, offset, limit)
    }

    fn followers(&self, uid: u64, offset: usize, limit: usize) -> Result<Vec<u64>> {
        self.followers_impl(uid, offset, limit)
    }

    fn follow_degree(&self, uid: u64) -> Result<Degree> {
        self.degree(uid)
    }

    fn follow_degrees(&self, uids: &[u64]) -> Result<Vec<Degree>> {
        self.wait(self.degrees(uids))
    }

    fn put_posts(&self, posts: &[&Post]) -> Result<()> {
        self.put_posts_impl(posts, None)
    }

    fn get_posts(&self, ids: &[u64]) -> Result<Vec<Option<Post>>> {
        self.get_posts_impl(ids)
    }

    fn author_posts(&self, author: u64, before: u64, limit: usize) -> Result<Vec<u64>> {
        self.author_posts_impl(author, before, limit)
    }

    fn authors_posts(&self, authors: &[u64], before: u64, limit: usize) -> Result<Vec<Vec<u64>>> {
        self.authors_posts_impl(authors, before, limit)
    }

    fn last_post_id(&self) -> Result<u64> {
        self.last_post_id_impl()
    }

    fn followers_from(&self, uid: u64, from: u64, limit: usize) -> Result<Vec<u64>> {
        self.followers_from_impl(uid, from, limit)
    }

    fn posts_after(&self, after: u64, limit: usize) -> Result<Vec<Post>> {
        self.posts_after_impl(after, limit)
    }

    fn server_slots(&self) -> u16 {
        crate::store::servers::SLOTS
    }

    fn claim_server(&self, owner: &str, lease: Duration, only: Option<u16>) -> Result<Option<u16>> {
        self.claim_server_impl(owner, lease, only)
    }

    fn renew_server(&self, server: u16, owner: &str, lease: Duration) -> Result<bool> {
        self.renew_server_impl(server, owner, lease)
    }

    fn release_server(&self, server: u16, owner: &str) -> Result<()> {
        self.release_server_impl(server, owner)
    }

    fn orphaned_servers(&self, lease: Duration) -> Result<Vec<u16>> {
        self.orphaned_servers_impl(lease)
    }

    fn fanout_watermark(&self, server: u16) -> Result<Option<u64>> {
        self.fanout_watermark_impl(server)
    }

    /// Every write is quorum-acknowledged, so `sync` changes nothing.
    fn set_fanout_watermark(&self, server: u16, watermark: u64, sync: bool) -> Result<()> {
        self.set_fanout_watermark_impl(server, watermark, sync)
    }

    fn drop_fanout_watermark(&self, server: u16) -> Result<()> {
        self.drop_fanout_watermark_impl(server)
    }

    fn pending_repush(&self, author: u64) -> Result<Option<u64>> {
        self.pending_repush_impl(author)
    }

    fn repair_follows(&self) -> Result<Vec<(u64, u64, bool)>> {
        self.repair_follows_impl()
    }

    fn pending_repushes(&self) -> Result<Vec<u64>> {
        self.pending_repushes_impl()
    }

    fn repush_done(&self, author: u64, token: u64) -> Result<()> {
        self.repush_done_impl(author, token)
    }

    fn idempotency_record(&self, key: &str) -> Result<Option<IdempotencyRecord>> {
        let _s = step(Price::KeyRead);
        self.idempotency_record_impl(key)
    }

    fn put_idempotency_record(&self, record: &IdempotencyRecord) -> Result<()> {
        let _s = step(Price::KeyFinish);
        self.put_idempotency_record_impl(record)
    }

    fn claim_idempotency_record(
        &self,
        record: &IdempotencyRecord,
    ) -> Result<Option<IdempotencyRecord>> {
        let _s = step(Price::KeyClaim);
        self.claim_idempotency_record_impl(record)
    }

    fn swap_idempotency_record(&self, expected: &[u8], record: &IdempotencyRecord) -> Result<bool> {
        // Mostly a keyed follow's answer over its claim (a take-over's swap is rare).
        let _s = step(Price::KeyFinish);
        self.swap_idempotency_record_impl(expected, record)
    }

    fn put_posts_recorded(&self, posts: &[&Post], record: &IdempotencyRecord) -> Result<()> {
        self.put_posts_impl(posts, Some(record))
    }

    fn follow_recorded(&self, uid: u64, targets: &[u64], record: &IdempotencyRecord) -> Result<()> {
        self.follow_impl(uid, targets, Some(record), None).map(|_| ())
    }

    fn unfollow_recorded(
        &self,
        uid: u64,
        target: u64,
        repush_at: Option<u64>,
        record: &IdempotencyRecord,
    ) -> Result<(u64, u64)> {
        Ok(self.unfollow_impl(uid, target, repush_at, Some(record), None)?.unwrap_or_default())
    }
}
