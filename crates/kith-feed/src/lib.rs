//! `kith-feed`: Twibo's feeds on kith.
//!
//! What it is: a directed follow graph and posts, kept by the storage engine
//! ([`kith_store::Engine`]); feeds built by **pull** (k-way merge of the followees' newest posts at read time),
//! **push** (post ids fanned out to followers' timelines on write, asynchronously and
//! pipelined, timelines bounded in length) or **hybrid** (push for ordinary authors, pull for
//! authors above a follower threshold); post bodies cached **aside** (read-through,
//! invalidated on write) or **write-back** (acknowledged once in an fsynced local journal,
//! moved into the database in the background, replayed on start, so no acknowledged post is
//! lost); caches and timelines in process (bounded in bytes) or in Redis.
//!
//! Friendship writes go through the feed too ([`Feed::put_user`], [`Feed::add_friend`],
//! [`Feed::delete_friend`]), so that every change also drops the cached friend lists it made
//! stale, and friend-list reads through [`Feed::friends`], strong or eventual.
//!
//! What it is not: the HTTP layer (`kith-server`) or storage (`kith-store`).
//!
//! Invariants: a post id is below 2^53 and larger than every id before it; a timeline read
//! never returns ids below the timeline's floor (the point down to which it is complete);
//! a post is acknowledged only once it is in the feed database or the journal.

mod cache;
mod config;
mod error;
mod feed;
#[doc(hidden)]
pub mod fuzzing;
mod journal;
mod metrics;
mod post;
pub mod redis_cluster;
mod task;
#[doc(hidden)]
pub mod testing;
pub mod timing;

pub use config::{CacheMode, FeedConfig, Strategy};
pub use error::{Error, Result};
pub use feed::{Applied, Consistency, Feed, MAX_FEED_PAGE, PostRequest, Posted};
pub use post::{decode_cursor, encode_cursor};
pub use task::{blocking, detached};
