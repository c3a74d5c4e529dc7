//! Posts on the cluster: by time bucket (a bucket holds 2^30 ids, about 65 s) with the list
//! of non-empty buckets, and an index by author, newest first.

use std::collections::BTreeSet;

use futures_util::{StreamExt, TryStreamExt, stream};
use kith_store::{IdempotencyRecord, Post, Result};

use super::rows::{FAN, key};
use super::{CassandraStore, Writes, bad_rows, i, u};
use crate::error::driver;

/// Post ids are milliseconds shifted left by 14 bits; a bucket holds 2^30 ids (about 65 s).
const BUCKET_SHIFT: u32 = 30;

/// Encoded posts per logged batch, at most (a batch must stay under Cassandra's threshold).
const BATCH_POST_BYTES: usize = 2 << 20;

fn bucket(id: u64) -> i64 {
    (id >> BUCKET_SHIFT) as i64
}

/// Clamps an id bound to what a bigint holds (post ids are below 2^53).
fn bound(id: u64) -> i64 {
    id.min(i64::MAX as u64) as i64
}

impl CassandraStore {
    /// Stores posts with their author index entries and buckets, in logged batches of at
    /// most [`BATCH_POST_BYTES`]; the idempotency record goes with the last.
    pub(crate) fn put_posts_impl(
        &self,
        posts: &[&Post],
        record: Option<&IdempotencyRecord>,
    ) -> Result<()> {
        self.wait(async {
            let mut w = Writes::logged();
            let mut bytes = 0;
            let mut buckets = BTreeSet::new();
            for p in posts {
                let encoded = p.encode();
                bytes += encoded.len();
                w.push(&self.fixed.post_put, (bucket(p.id), bound(p.id), encoded));
                w.push(&self.fixed.author_put, (key(p.author), bound(p.id)));
                if buckets.insert(bucket(p.id)) {
                    w.push(&self.fixed.bucket_put, (bucket(p.id),));
                }
                if bytes >= BATCH_POST_BYTES {
                    std::mem::replace(&mut w, Writes::logged())
                        .run(self.session(), "storing posts")
                        .await?;
                    bytes = 0;
                    buckets.clear();
                }
            }
            if let Some(r) = record {
                self.push_record(&mut w, r)?;
            }
            w.run(self.session(), "storing posts").await
        })
    }

    pub(crate) fn get_posts_impl(&self, ids: &[u64]) -> Result<Vec<Option<Post>>> {
        self.wait(async {
            stream::iter(ids.iter().copied())
                .map(|id| async move {
                    let rows = self
                        .session()
                        .execute_unpaged(&self.fixed.post_get, (bucket(id), bound(id)))
                        .await
                        .map_err(|e| driver("reading a post", e))?
                        .into_rows_result()
                        .map_err(|e| bad_rows("post", e))?;
                    match rows.maybe_first_row::<(Vec<u8>,)>().map_err(|e| bad_rows("post", e))? {
                        None => Ok(None),
                        Some((bytes,)) => Post::decode(&bytes, || format!("post {id}")).map(Some),
                    }
                })
                .buffered(FAN)
                .try_collect()
                .await
        })
    }

    pub(crate) fn author_posts_impl(
        &self,
        author: u64,
        before: u64,
        limit: usize,
    ) -> Result<Vec<u64>> {
        self.wait(self.author_page(author, before, limit))
    }

    /// Each author's page at once, [`FAN`] requests in flight (a pull feed's followees).
    pub(crate) fn authors_posts_impl(
        &self,
        authors: &[u64],
        before: u64,
        limit: usize,
    ) -> Result<Vec<Vec<u64>>> {
        self.wait(
            stream::iter(authors.iter().copied())
                .map(|a| self.author_page(a, before, limit))
                .buffered(FAN)
                .try_collect(),
        )
    }

    async fn author_page(&self, author: u64, before: u64, limit: usize) -> Result<Vec<u64>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let rows = self
            .session()
            .execute_unpaged(
                &self.fixed.author_before,
                (key(author), bound(before), limit.min(i32::MAX as usize) as i32),
            )
            .await
            .map_err(|e| driver("reading an author's posts", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("author posts", e))?;
        rows.rows::<(i64,)>()
            .map_err(|e| bad_rows("author posts", e))?
            .map(|r| r.map(|(id,)| u(id)).map_err(|e| bad_rows("author posts", e)))
            .collect()
    }

    pub(crate) fn last_post_id_impl(&self) -> Result<u64> {
        self.wait(async {
            let rows = self
                .session()
                .execute_unpaged(&self.fixed.bucket_last, ())
                .await
                .map_err(|e| driver("reading the last post", e))?
                .into_rows_result()
                .map_err(|e| bad_rows("buckets", e))?;
            let Some((b,)) =
                rows.maybe_first_row::<(i64,)>().map_err(|e| bad_rows("buckets", e))?
            else {
                return Ok(0);
            };
            let rows = self
                .session()
                .execute_unpaged(&self.fixed.post_last, (b,))
                .await
                .map_err(|e| driver("reading the last post", e))?
                .into_rows_result()
                .map_err(|e| bad_rows("posts", e))?;
            Ok(rows
                .maybe_first_row::<(i64,)>()
                .map_err(|e| bad_rows("posts", e))?
                .map_or(0, |(id,)| u(id)))
        })
    }

    pub(crate) fn posts_after_impl(&self, after: u64, limit: usize) -> Result<Vec<Post>> {
        if after >= i64::MAX as u64 || limit == 0 {
            return Ok(Vec::new());
        }
        self.wait(async {
            let mut out = Vec::new();
            let mut from_bucket = bucket(after);
            'buckets: while out.len() < limit {
                let rows = self
                    .session()
                    .execute_unpaged(&self.fixed.buckets_from, (from_bucket, 64i32))
                    .await
                    .map_err(|e| driver("listing post buckets", e))?
                    .into_rows_result()
                    .map_err(|e| bad_rows("buckets", e))?;
                let buckets: Vec<i64> = rows
                    .rows::<(i64,)>()
                    .map_err(|e| bad_rows("buckets", e))?
                    .map(|r| r.map(|(b,)| b).map_err(|e| bad_rows("buckets", e)))
                    .collect::<Result<_>>()?;
                let Some(&last) = buckets.last() else { break };
                for b in buckets {
                    let want = (limit - out.len()).min(i32::MAX as usize) as i32;
                    let rows = self
                        .session()
                        .execute_unpaged(&self.fixed.posts_after, (b, i(after), want))
                        .await
                        .map_err(|e| driver("reading posts", e))?
                        .into_rows_result()
                        .map_err(|e| bad_rows("posts", e))?;
                    for row in rows.rows::<(Vec<u8>,)>().map_err(|e| bad_rows("posts", e))? {
                        let (bytes,) = row.map_err(|e| bad_rows("posts", e))?;
                        out.push(Post::decode(&bytes, || format!("post in bucket {b}"))?);
                        if out.len() == limit {
                            break 'buckets;
                        }
                    }
                }
                from_bucket = last + 1;
            }
            Ok(out)
        })
    }
}
