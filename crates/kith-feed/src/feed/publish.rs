//! Publishing: a post stored (or journaled) and queued for fan-out, optionally under an
//! idempotency key or a client's id. On a store several servers share, the key, and a
//! client's id, are claimed in the store before the post is stored, so a post is stored
//! once, under one id, whatever server each attempt reaches.
//!
//! Once a post is durable nothing fails the request: a cache error after that point
//! becomes a warning in the answer, and delivery to timelines is the fan-out's, which
//! retries and is redone after a crash (see `feed/marks.rs`).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use kith_store::IdempotencyRecord;

use super::idempotent::fingerprint;
use super::{FanJob, Feed};
use crate::config::{CacheMode, Strategy};
use crate::error::{Error, Result};
use crate::journal::lock;
use crate::post::{Post, check_client_id, check_content, now_ms};
use crate::task::blocking;

/// A post to publish, with the options of Twibo's API.
#[derive(Clone, Debug, Default)]
pub struct PostRequest {
    /// The author.
    pub author: u64,
    /// The text.
    pub content: String,
    /// A client-chosen id (1 to 2^53 - 1): posting it again with the same author and
    /// content answers with the stored post; another post's id is `Error::PostIdTaken`.
    pub id: Option<u64>,
    /// The client's time for its id (milliseconds since the Unix epoch; now if absent).
    /// Only with `id`.
    pub ts_ms: Option<u64>,
    /// A retry with the same key and request is answered with the first result and stores
    /// nothing; the same key with another request is `Error::IdempotencyKeyReused`.
    pub idempotency_key: Option<String>,
}

/// A published post.
#[derive(Clone, Debug)]
pub struct Posted {
    /// The post, durable.
    pub post: Arc<Post>,
    /// Whether this answers a retry (by idempotency key or client id): nothing was stored.
    pub replayed: bool,
    /// What failed after the post was durable without undoing it, for the client to see.
    pub warnings: Vec<String>,
}

impl Feed {
    /// Publishes a post; returns it with its id and time once it is durable.
    pub async fn post(&self, author: u64, content: String) -> Result<Arc<Post>> {
        Ok(self.post_with(PostRequest { author, content, ..Default::default() }).await?.post)
    }

    /// Publishes a post with Twibo's options (idempotency key, client id); answers once it
    /// is durable, or with the first answer to a retry.
    pub async fn post_with(&self, req: PostRequest) -> Result<Posted> {
        check_content(&req.content)?;
        let client = match (req.id, req.ts_ms) {
            (None, None) => None,
            (Some(id), ts) => {
                let ts = ts.unwrap_or_else(now_ms);
                check_client_id(id, ts)?;
                Some((id, ts))
            }
            (None, Some(_)) => {
                return Err(Error::Invalid("a post's ts_ms is accepted only with its id".into()));
            }
        };
        if self.closing.load(Ordering::SeqCst) {
            return Err(Error::ShuttingDown);
        }
        if !self.holds_number() {
            return Err(Error::Store(kith_store::Error::Unavailable(format!(
                "this server does not hold its server number {} (its lease on the store lapsed), \
                 so it hands out no post ids; another server can take the post",
                self.server
            ))));
        }
        let author = req.author;
        self.require_users(vec![author]).await?;
        // The request's fingerprint matters only under an idempotency key: a post without
        // one does not hash its content.
        let fp = match req.idempotency_key {
            Some(_) => fingerprint(&[
                b"post",
                &author.to_le_bytes(),
                req.content.as_bytes(),
                &req.id.unwrap_or(0).to_le_bytes(),
                &req.ts_ms.unwrap_or(0).to_le_bytes(),
            ]),
            None => 0,
        };
        let _key_guard = match &req.idempotency_key {
            Some(k) => Some(self.key_stripe(k)?.lock().await),
            None => None,
        };
        let (mut chosen, mut exclusive) = (client, client.is_some());
        if let Some(key) = &req.idempotency_key
            && let Some(first) = self.recorded(key, fp).await?
        {
            let (id, ts) = decode_post_result(key, &first)?;
            if let Some(post) = self.stored_post(id).await? {
                return Ok(Posted { post, replayed: true, warnings: Vec::new() });
            }
            // Recorded but not stored: write-back records the key before its journal
            // append, and a crash came between. Apply it now, under the recorded id.
            (chosen, exclusive) = (Some((id, ts)), false);
        }
        let (id, ts_ms) = match chosen {
            None if self.shared_store() => self.allocate_claimed(author, &req.content).await?,
            None => (self.marks.allocate(&self.ids), now_ms()),
            Some((id, ts)) => {
                let (engine, marks, ids) =
                    (self.engine.clone(), self.marks.clone(), self.ids.clone());
                blocking(move || marks.claim(id, &ids, engine.as_ref(), exclusive)).await?;
                if exclusive {
                    let existing = self.stored_post(id).await;
                    if !matches!(existing, Ok(None)) {
                        self.marks.close(id);
                        let post = existing?.expect("not None");
                        if post.author != author || post.content != req.content {
                            return Err(Error::PostIdTaken(id));
                        }
                        return Ok(Posted { post, replayed: true, warnings: Vec::new() });
                    }
                }
                if exclusive && self.shared_store() {
                    match self.claim_post_id(id, author, &req.content, ts).await {
                        Ok(ts) => (id, ts),
                        Err(e) => {
                            self.marks.close(id);
                            return Err(e);
                        }
                    }
                } else {
                    (id, ts)
                }
            }
        };
        let mut record = req.idempotency_key.map(|key| IdempotencyRecord {
            key,
            fingerprint: fp,
            expires_ms: now_ms().saturating_add(self.config.idempotency_ttl.as_millis() as u64),
            result: [id.to_le_bytes(), ts_ms.to_le_bytes()].concat(),
        });
        // On a store several servers share, the key is claimed with the post's id before the
        // post is stored: an attempt on any server that finds the claim stores the same post
        // under the same id (an overwrite with equal values), so the post exists once.
        let (mut id, mut ts_ms) = (id, ts_ms);
        if chosen.is_none_or(|_| exclusive)
            && self.shared_store()
            && let Some(r) = record.take()
        {
            let key = r.key.clone();
            match self.claim(r).await {
                Ok(None) => {}
                Ok(Some(first)) => {
                    self.marks.close(id);
                    (id, ts_ms) = decode_post_result(&key, &first)?;
                    if let Some(post) = self.stored_post(id).await? {
                        return Ok(Posted { post, replayed: true, warnings: Vec::new() });
                    }
                    let (engine, marks, ids) =
                        (self.engine.clone(), self.marks.clone(), self.ids.clone());
                    blocking(move || marks.claim(id, &ids, engine.as_ref(), false)).await?;
                }
                Err(e) => {
                    self.marks.close(id);
                    return Err(e);
                }
            }
        }
        let post = Arc::new(Post { id, author, ts_ms, content: req.content });
        let mut warnings = Vec::new();
        if let Err(e) = self.store_post(&post, record, &mut warnings).await {
            self.marks.close(id);
            return Err(e);
        }
        if self.config.strategy == Strategy::Pull {
            self.marks.close(id);
        } else {
            self.enqueue(FanJob::Post { author, id }).await;
        }
        Ok(Posted { post, replayed: false, warnings })
    }

    /// A new id of this server's, claimed in the store as a client's id is: a client may
    /// have taken it first (ids are the clients' to choose too), and then the next one is
    /// tried.
    async fn allocate_claimed(&self, author: u64, content: &str) -> Result<(u64, u64)> {
        loop {
            let (id, ts) = (self.marks.allocate(&self.ids), now_ms());
            match self.claim_post_id(id, author, content, ts).await {
                Ok(ts) => return Ok((id, ts)),
                Err(Error::PostIdTaken(_)) => self.marks.close(id),
                Err(e) => {
                    self.marks.close(id);
                    return Err(e);
                }
            }
        }
    }

    /// Claims a client's post id in the store (a lightweight transaction under a key no
    /// client can send, the id's own), so that of two servers taking one id at once one
    /// stores its post and the other refuses another post (`Error::PostIdTaken`); the same
    /// post again is stored again, with the time the claim holds, as a retry.
    async fn claim_post_id(&self, id: u64, author: u64, content: &str, ts: u64) -> Result<u64> {
        // Twenty years, as long as Cassandra keeps anything (its store may keep it less).
        const FOREVER_MS: u64 = 20 * 365 * 24 * 3600 * 1000;
        let record = IdempotencyRecord {
            key: format!("\u{1}post-id {id}"),
            fingerprint: fingerprint(&[b"post-id", &author.to_le_bytes(), content.as_bytes()]),
            expires_ms: now_ms().saturating_add(FOREVER_MS),
            result: ts.to_le_bytes().to_vec(),
        };
        match self.claim(record).await {
            Ok(None) => Ok(ts),
            Ok(Some(first)) => {
                Ok(first.get(..8).map_or(ts, |b| u64::from_le_bytes(b.try_into().expect("8"))))
            }
            Err(Error::IdempotencyKeyReused { .. }) => Err(Error::PostIdTaken(id)),
            Err(e) => Err(e),
        }
    }

    /// Makes a post durable (with its idempotency record): in the feed database, or in
    /// write-back mode in the journal. Cache errors after that are warnings.
    async fn store_post(
        &self,
        post: &Arc<Post>,
        record: Option<IdempotencyRecord>,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        if self.shared_writeback {
            return self.store_post_shared(post, record, warnings).await;
        }
        match (&self.journal, self.config.cache) {
            (Some(journal), _) => {
                if let Some(r) = record {
                    let engine = self.engine.clone();
                    blocking(move || engine.put_idempotency_record(&r)).await?;
                }
                journal.append(post.clone()).await?;
                self.metrics.pending.inc();
                if let Err(e) = self.backend.put_posts(std::slice::from_ref(post)).await {
                    // Durable in the journal; the cache only misses it.
                    self.metrics.cache_errors.inc();
                    eprintln!("kith feed: caching post {} failed: {e}", post.id);
                }
            }
            (None, mode) => {
                let engine = self.engine.clone();
                let p = post.clone();
                blocking(move || match record {
                    Some(r) => engine.put_posts_recorded(&[p.as_ref()], &r),
                    None => engine.put_posts(&[p.as_ref()]),
                })
                .await?;
                // A new id has no cached copy (only stored posts are cached), so a failed
                // invalidation serves nothing stale: the post stands, with a warning.
                if mode == CacheMode::Aside
                    && let Err(e) = self.backend.del_posts(&[post.id]).await
                {
                    self.metrics.cache_errors.inc();
                    warnings.push(format!(
                        "post {} is stored, but invalidating its cache entry failed ({e}); \
                         its timelines get it through the fan-out's retries",
                        post.id
                    ));
                }
            }
        }
        Ok(())
    }

    /// Shared write-back: the post waits in the Redis Cluster once a replica confirmed
    /// it; when Redis fails or no replica confirms in time, it is stored at once instead.
    /// Either way it is durable, and visible to every server, when this returns.
    async fn store_post_shared(
        &self,
        post: &Arc<Post>,
        record: Option<IdempotencyRecord>,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        if let Some(r) = &record {
            let (engine, r) = (self.engine.clone(), r.clone());
            blocking(move || engine.put_idempotency_record(&r)).await?;
        }
        let queued = match self.backend.shared_writeback() {
            Ok(r) => r.wb_put(post).await,
            Err(e) => Err(e),
        };
        match queued {
            Ok(true) => {
                self.metrics.pending.inc();
                if let Err(e) = self.backend.put_posts(std::slice::from_ref(post)).await {
                    self.metrics.cache_errors.inc();
                    eprintln!("kith feed: caching post {} failed: {e}", post.id);
                }
                Ok(())
            }
            Ok(false) | Err(_) => {
                if let Err(e) = &queued {
                    self.backend.carried_on("queueing a post for write-back", e);
                }
                let (engine, p) = (self.engine.clone(), post.clone());
                blocking(move || engine.put_posts(&[p.as_ref()])).await?;
                warnings.push(format!(
                    "post {} was stored at once: the write-back queue could not take it",
                    post.id
                ));
                Ok(())
            }
        }
    }

    /// A post from the pending set or the feed database, not the cache.
    async fn stored_post(&self, id: u64) -> Result<Option<Arc<Post>>> {
        if let Some(p) = lock(&self.pending).posts.get(&id) {
            return Ok(Some(p.clone()));
        }
        if self.shared_writeback
            && let Ok(r) = self.backend.shared_writeback()
            && let Some(p) =
                r.wb_get(&[id]).await.map_err(super::waiting_unavailable)?.pop().flatten()
        {
            return Ok(Some(p));
        }
        let engine = self.engine.clone();
        let mut got = blocking(move || engine.get_posts(&[id])).await?;
        Ok(got.pop().flatten().map(Arc::new))
    }
}

/// Reads a post's recorded (id, time).
fn decode_post_result(key: &str, bytes: &[u8]) -> Result<(u64, u64)> {
    let word = |i: usize| bytes.get(i..i + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8")));
    match (word(0), word(8)) {
        (Some(id), Some(ts)) if bytes.len() == 16 => Ok((id, ts)),
        _ => Err(Error::Corrupt {
            what: format!("the idempotency record of key {key:?}"),
            reason: format!("{} bytes where a post's id and time take 16", bytes.len()),
        }),
    }
}
