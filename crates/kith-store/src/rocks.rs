//! The RocksDB [`Store`] as an [`Engine`]: users and friendships from the layout-ordered key
//! space (the store's own methods), follows and posts from the feed database in
//! `<store>/feed`, opened on first use.

use rand::RngCore;

use crate::engine::{Engine, LayoutAdmin};
use crate::error::Result;
use crate::feed_db::Degree;
use crate::feed_log::IdempotencyRecord;
use crate::page::{FriendsPage, UsersCursor, UsersPage};
use crate::post::Post;
use crate::progress::Progress;
use crate::record::{Profile, User};
use crate::relayout::{NewLayout, RelayoutReport};
use crate::status::{Status, StoreGraph};
use crate::store::Store;
use crate::write::UserWrite;

impl Engine for Store {
    fn layout_admin(&self) -> Option<&dyn LayoutAdmin> {
        Some(self)
    }

    fn contains(&self, uid: u64) -> Result<bool> {
        Store::contains(self, uid)
    }

    fn get_user(&self, uid: u64) -> Result<User> {
        Store::get_user(self, uid)
    }

    fn put_user(
        &self,
        uid: u64,
        profile: &Profile,
        friends: &[u64],
        data: Option<&[u8]>,
    ) -> Result<UserWrite> {
        Store::put_user(self, uid, profile, friends, data)
    }

    fn get_profile(&self, uid: u64) -> Result<Profile> {
        Store::get_profile(self, uid)
    }

    fn put_profile(&self, uid: u64, profile: &Profile) -> Result<()> {
        Store::put_profile(self, uid, profile)
    }

    fn get_data(&self, uid: u64, max_bytes: Option<u64>) -> Result<Vec<u8>> {
        Store::get_data(self, uid, max_bytes)
    }

    fn put_data(&self, uid: u64, data: &[u8]) -> Result<()> {
        Store::put_data(self, uid, data)
    }

    fn get_all_friends(&self, uid: u64) -> Result<Vec<u64>> {
        Store::get_all_friends(self, uid)
    }

    fn list_friends_data(
        &self,
        uid: u64,
        max_bytes: Option<u64>,
        offset: usize,
        limit: usize,
    ) -> Result<crate::FriendsData> {
        Store::list_friends_data_page(self, uid, max_bytes, offset, limit)
    }

    fn get_friends_list(&self, uid: u64, offset: usize, limit: usize) -> Result<FriendsPage> {
        Store::get_friends_list(self, uid, offset, limit)
    }

    fn add_friend(&self, u: u64, v: u64) -> Result<bool> {
        Store::add_friend(self, u, v)
    }

    fn delete_friend(&self, u: u64, v: u64) -> Result<bool> {
        Store::delete_friend(self, u, v)
    }

    fn users_page(&self, cursor: Option<UsersCursor>, limit: usize) -> Result<UsersPage> {
        Store::users_page(self, cursor, limit)
    }

    fn random_users(&self, n: usize, mut rng: &mut dyn RngCore) -> Result<Vec<(u64, Profile)>> {
        Store::get_random_users(self, n, &mut rng)
    }

    fn count_users(&self) -> Result<u64> {
        Store::count_users(self)
    }

    fn traversal_budget(&self) -> u64 {
        self.traversal_budget
    }

    fn follow(&self, uid: u64, targets: &[u64]) -> Result<()> {
        self.feed_db()?.follow(uid, targets, None)
    }

    fn unfollow(&self, uid: u64, target: u64, repush_at: Option<u64>) -> Result<(u64, u64)> {
        self.feed_db()?.unfollow(uid, target, repush_at, None)
    }

    fn followees(&self, uid: u64, offset: usize, limit: usize) -> Result<Vec<u64>> {
        self.feed_db()?.followees(uid, offset, limit)
    }

    fn followers(&self, uid: u64, offset: usize, limit: usize) -> Result<Vec<u64>> {
        self.feed_db()?.followers(uid, offset, limit)
    }

    fn follow_degree(&self, uid: u64) -> Result<Degree> {
        Ok(self.feed_db()?.degree(uid))
    }

    fn put_posts(&self, posts: &[&Post]) -> Result<()> {
        self.feed_db()?.put_posts(posts, None)
    }

    fn get_posts(&self, ids: &[u64]) -> Result<Vec<Option<Post>>> {
        self.feed_db()?.get_posts(ids)
    }

    fn author_posts(&self, author: u64, before: u64, limit: usize) -> Result<Vec<u64>> {
        self.feed_db()?.author_posts(author, before, limit)
    }

    fn last_post_id(&self) -> Result<u64> {
        self.feed_db()?.last_post_id()
    }

    fn followers_from(&self, uid: u64, from: u64, limit: usize) -> Result<Vec<u64>> {
        self.feed_db()?.followers_from(uid, from, limit)
    }

    fn posts_after(&self, after: u64, limit: usize) -> Result<Vec<Post>> {
        self.feed_db()?.posts_after(after, limit)
    }

    fn fanout_watermark(&self, server: u16) -> Result<Option<u64>> {
        one_server(server)?;
        self.feed_db()?.fanout_watermark()
    }

    fn set_fanout_watermark(&self, server: u16, watermark: u64, sync: bool) -> Result<()> {
        one_server(server)?;
        self.feed_db()?.set_fanout_watermark(watermark, sync)
    }

    fn pending_repush(&self, author: u64) -> Result<Option<u64>> {
        self.feed_db()?.pending_repush(author)
    }

    fn pending_repushes(&self) -> Result<Vec<u64>> {
        self.feed_db()?.pending_repushes()
    }

    fn repush_done(&self, author: u64, token: u64) -> Result<()> {
        self.feed_db()?.repush_done(author, token)
    }

    fn idempotency_record(&self, key: &str) -> Result<Option<IdempotencyRecord>> {
        self.feed_db()?.idempotency_record(key)
    }

    fn put_idempotency_record(&self, record: &IdempotencyRecord) -> Result<()> {
        self.feed_db()?.put_idempotency_record(record)
    }

    fn put_posts_recorded(&self, posts: &[&Post], record: &IdempotencyRecord) -> Result<()> {
        self.feed_db()?.put_posts(posts, Some(record))
    }

    fn follow_recorded(&self, uid: u64, targets: &[u64], record: &IdempotencyRecord) -> Result<()> {
        self.feed_db()?.follow(uid, targets, Some(record))
    }

    fn unfollow_recorded(
        &self,
        uid: u64,
        target: u64,
        repush_at: Option<u64>,
        record: &IdempotencyRecord,
    ) -> Result<(u64, u64)> {
        self.feed_db()?.unfollow(uid, target, repush_at, Some(record))
    }
}

/// A RocksDB store has one process, so one server number: 0.
fn one_server(server: u16) -> Result<()> {
    match server {
        0 => Ok(()),
        n => Err(crate::Error::Invalid(format!(
            "server number {n}: a RocksDB store is opened by one process, server 0"
        ))),
    }
}

impl LayoutAdmin for Store {
    fn stored_graph(&self) -> Result<StoreGraph> {
        self.graph()
    }

    fn paging(&self) -> Result<(u64, u64)> {
        let c = self.layout_config()?;
        Ok((c.record_bytes, c.page_bytes))
    }

    fn status(&self) -> Result<Status> {
        Store::status(self, None)
    }

    fn relayout(&self, progress: &Progress) -> Result<RelayoutReport> {
        let config = self.layout_config()?;
        self.relayout_reporting(NewLayout::Compute(config), progress)
    }
}
