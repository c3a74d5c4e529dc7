//! `kith-feed`: Twibo's feeds on kith.
//!
//! What it is: a directed follow graph and posts in their own RocksDB next to the user store;
//! feeds built by **pull** (k-way merge of the followees' newest posts at read time),
//! **push** (post ids fanned out to followers' timelines on write, asynchronously and
//! pipelined, timelines bounded in length) or **hybrid** (push for ordinary authors, pull for
//! authors above a follower threshold); post bodies cached **aside** (read-through,
//! invalidated on write) or **write-back** (acknowledged once in an fsynced local journal,
//! moved into the database in the background, replayed on start, so no acknowledged post is
//! lost); caches and timelines in process (bounded in bytes) or in Redis.
//!
//! What it is not: the HTTP layer (`kith-server`) or the user store (`kith-store`).
//!
//! Invariants: a post id is below 2^53 and larger than every id before it; a timeline read
//! never returns ids below the timeline's floor (the point down to which it is complete);
//! a post is acknowledged only once it is in the feed database or the journal.

mod cache;
mod config;
mod db;
mod error;
mod feed;
mod journal;
mod metrics;
mod post;

pub use cache::Backend;
pub use config::{CacheMode, FeedConfig, Strategy};
pub use db::{Degree, FeedDb, MAX_FOLLOW_TARGETS};
pub use error::{Error, Result};
pub use feed::{Feed, FeedPage, Follows, HitRate, MAX_FEED_PAGE, merge_newest};
pub use journal::{Journal, JournalCounters, Pending, SharedPending};
pub use post::{
    IdGen, MAX_CONTENT_BYTES, Post, check_content, decode_cursor, encode_cursor, now_ms,
};
