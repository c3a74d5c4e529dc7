//! The store's prepared statements: those of the fixed tables, and those of one layout
//! generation's tables (prepared again when the generation changes).

use std::sync::Arc;

use scylla::client::session::Session;
use scylla::policies::speculative_execution::SimpleSpeculativeExecutionPolicy;
use scylla::statement::prepared::PreparedStatement;

use crate::error::{Error, Result};

async fn prepare(session: &Session, cql: String, idempotent: bool) -> Result<PreparedStatement> {
    let mut p = session
        .prepare(cql.as_str())
        .await
        .map_err(|e| Error::Cluster(format!("preparing `{cql}`: {e}")))?;
    // Reads, and writes that set values (not counters, not appends), may be retried by the
    // driver on another node.
    p.set_is_idempotent(idempotent);
    // A lightweight transaction marked idempotent (its caller tells its own earlier round
    // from another's) goes once more through another node after a timeout
    // (`crate::retries`), and to a second node once if the first has not answered in
    // `crate::schema::LWT_SPECULATIVE_AFTER`, later than other requests; the others (the
    // driver never resends them) never go twice.
    if cql.contains(" IF ") {
        let later = SimpleSpeculativeExecutionPolicy {
            max_retry_count: 1,
            retry_interval: crate::schema::LWT_SPECULATIVE_AFTER,
        };
        let profile = session.get_default_execution_profile_handle().pointee_to_builder();
        p.set_execution_profile_handle(Some(
            profile.speculative_execution_policy(Some(Arc::new(later))).build().into_handle(),
        ));
    }
    Ok(p)
}

macro_rules! statements {
    ($name:ident ($($arg:ident: $ty:ty),*) { $($field:ident = $idem:literal, $cql:literal;)* }) => {
        /// Prepared statements.
        pub(crate) struct $name {
            $(pub $field: PreparedStatement,)*
        }

        impl $name {
            pub(crate) async fn prepare(session: &Session, $($arg: $ty),*) -> Result<$name> {
                Ok($name {
                    $($field: prepare(session, format!($cql), $idem).await?,)*
                })
            }
        }
    };
}

statements! { Fixed(ks: &str) {
    store_get = true, "SELECT format, generation FROM {ks}.store WHERE id = 0";
    store_switch = false, "UPDATE {ks}.store SET generation = ? WHERE id = 0 IF generation = ?";
    generation_get = true, "SELECT partition_users, friend_copies, layout FROM {ks}.generations WHERE generation = ?";
    next_pos_get = true, "SELECT next_pos FROM {ks}.generations WHERE generation = ?";
    next_pos_cas = false, "UPDATE {ks}.generations SET next_pos = ? WHERE generation = ? IF next_pos = ?";
    follower_put = true, "INSERT INTO {ks}.followers (uid, follower) VALUES (?, ?) USING TIMESTAMP ?";
    follower_del = true, "DELETE FROM {ks}.followers USING TIMESTAMP ? WHERE uid = ? AND follower = ?";
    follow_on = true, "UPDATE {ks}.follows SET active = true, edit = ? WHERE uid = ? AND target = ? IF edit = ? AND active != true";
    follow_off = true, "UPDATE {ks}.follows SET active = false, edit = ? WHERE uid = ? AND target = ? IF edit = ? AND active = true";
    follow_adopt = true, "UPDATE {ks}.follows SET edit = ? WHERE uid = ? AND target = ? IF edit = ? AND active = true";
    follow_state = true, "SELECT active, writetime(active), edit FROM {ks}.follows WHERE uid = ? AND target = ?";
    followees_from = true, "SELECT target FROM {ks}.follows WHERE uid = ? AND target >= ? AND active = true LIMIT ? ALLOW FILTERING";
    followers_from = true, "SELECT follower FROM {ks}.followers WHERE uid = ? AND follower >= ? LIMIT ?";
    followees_count = true, "SELECT COUNT(*) FROM {ks}.follows WHERE uid = ? AND active = true ALLOW FILTERING";
    followers_count = true, "SELECT COUNT(*) FROM {ks}.followers WHERE uid = ?";
    intent_put = true, "INSERT INTO {ks}.follow_intents_at (target, at_ms, uid, nonce) VALUES (?, ?, ?, ?) USING TIMESTAMP ?";
    intent_del = true, "DELETE FROM {ks}.follow_intents_at USING TIMESTAMP ? WHERE target = ? AND at_ms = ? AND uid = ? AND nonce = ?";
    intents_of = true, "SELECT uid FROM {ks}.follow_intents_at WHERE target = ? AND at_ms >= ?";
    intent_log_put = true, "INSERT INTO {ks}.follow_intent_log (bucket, shard, target, uid, nonce, at_ms) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?";
    intent_log_del = true, "DELETE FROM {ks}.follow_intent_log USING TIMESTAMP ? WHERE bucket = ? AND shard = ? AND target = ? AND uid = ? AND nonce = ?";
    intent_log_of = true, "SELECT target, uid, nonce, at_ms FROM {ks}.follow_intent_log WHERE bucket = ? AND shard IN (0, 1, 2, 3)";
    post_put = true, "INSERT INTO {ks}.posts (bucket, id, post) VALUES (?, ?, ?)";
    post_get = true, "SELECT post FROM {ks}.posts WHERE bucket = ? AND id = ?";
    posts_after = true, "SELECT post FROM {ks}.posts WHERE bucket = ? AND id > ? LIMIT ?";
    bucket_put = true, "INSERT INTO {ks}.post_buckets (shard, bucket) VALUES (0, ?)";
    buckets_from = true, "SELECT bucket FROM {ks}.post_buckets WHERE shard = 0 AND bucket >= ? LIMIT ?";
    bucket_last = true, "SELECT bucket FROM {ks}.post_buckets WHERE shard = 0 ORDER BY bucket DESC LIMIT 1";
    post_last = true, "SELECT id FROM {ks}.posts WHERE bucket = ? ORDER BY id DESC LIMIT 1";
    author_put = true, "INSERT INTO {ks}.author_posts (author, id) VALUES (?, ?)";
    author_before = true, "SELECT id FROM {ks}.author_posts WHERE author = ? AND id < ? LIMIT ?";
    state_get = true, "SELECT value, writetime(value) FROM {ks}.feed_state WHERE name = ?";
    state_put = true, "INSERT INTO {ks}.feed_state (name, value) VALUES (?, ?) USING TIMESTAMP ?";
    state_all = true, "SELECT name, value FROM {ks}.feed_state";
    server_claim = false, "INSERT INTO {ks}.servers (n, owner) VALUES (?, ?) IF NOT EXISTS";
    server_switch = true, "UPDATE {ks}.servers SET owner = ? WHERE n = ? IF owner = ?";
    server_release = false, "DELETE FROM {ks}.servers WHERE n = ? IF owner = ?";
    servers_all = true, "SELECT n, owner FROM {ks}.servers";
    repush_put = true, "INSERT INTO {ks}.repushes (author, ticket) VALUES (?, ?) USING TIMESTAMP ?";
    repush_get = true, "SELECT ticket, writetime(ticket) FROM {ks}.repushes WHERE author = ?";
    repush_all = true, "SELECT author, ticket FROM {ks}.repushes";
    repush_clear = true, "INSERT INTO {ks}.repushes (author, ticket) VALUES (?, ?) USING TIMESTAMP ? AND TTL ?";
    record_put = true, "INSERT INTO {ks}.idempotency (key, fingerprint, expires_ms, result) VALUES (?, ?, ?, ?) USING TTL ?";
    record_get = true, "SELECT fingerprint, expires_ms, result FROM {ks}.idempotency WHERE key = ?";
    record_written = true, "SELECT writetime(result) FROM {ks}.idempotency WHERE key = ?";
    record_put_at = true, "INSERT INTO {ks}.idempotency (key, fingerprint, expires_ms, result) VALUES (?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?";
    record_claim = true, "INSERT INTO {ks}.idempotency (key, fingerprint, expires_ms, result) VALUES (?, ?, ?, ?) IF NOT EXISTS USING TTL ?";
    record_swap = false, "UPDATE {ks}.idempotency USING TTL ? SET fingerprint = ?, expires_ms = ?, result = ? WHERE key = ? IF result = ?";
    record_replace = false, "UPDATE {ks}.idempotency USING TTL ? SET fingerprint = ?, expires_ms = ?, result = ? WHERE key = ? IF expires_ms = ?";
}}

/// The reads of [`GenStatements`] that `ReadLevel::One` runs at consistency ONE.
pub(crate) struct OneReads {
    pub index_get: PreparedStatement,
    pub user_get: PreparedStatement,
}

impl OneReads {
    pub(crate) fn of(st: &GenStatements) -> OneReads {
        let one = |s: &PreparedStatement| {
            let mut s = s.clone();
            s.set_consistency(scylla::statement::Consistency::One);
            s
        };
        OneReads { index_get: one(&st.index_get), user_get: one(&st.user_get) }
    }
}

statements! { GenStatements(ks: &str, g: u32) {
    index_get = true, "SELECT pos, data_bytes, friends, copied_to, writetime(clock) FROM {ks}.index_g{g} WHERE uid = ?";
    index_copied = true, "SELECT copied_to FROM {ks}.index_g{g} WHERE uid = ?";
    index_copy_add = true, "UPDATE {ks}.index_g{g} SET copied_to = copied_to + ? WHERE uid = ?";
    index_probe = true, "SELECT pos, data_bytes, friends[?], collection_count(friends), writetime(clock) FROM {ks}.index_g{g} WHERE uid = ?";
    index_claim = false, "INSERT INTO {ks}.index_g{g} (uid, pos) VALUES (?, ?) IF NOT EXISTS";
    index_put = true, "UPDATE {ks}.index_g{g} SET data_bytes = ?, friends = ?, clock = 1 WHERE uid = ?";
    index_bytes = true, "UPDATE {ks}.index_g{g} SET data_bytes = ?, clock = 1 WHERE uid = ?";
    index_clock = true, "UPDATE {ks}.index_g{g} SET clock = 1 WHERE uid = ?";
    index_load = true, "INSERT INTO {ks}.index_g{g} (uid, pos, data_bytes, friends, copied_to, clock) VALUES (?, ?, ?, ?, ?, 1)";
    index_scan = true, "SELECT uid, data_bytes FROM {ks}.index_g{g}";
    index_scan_all = true, "SELECT uid, pos, data_bytes, friends FROM {ks}.index_g{g}";
    friend_add = true, "UPDATE {ks}.index_g{g} SET friends[?] = ?, clock = 1 WHERE uid = ?";
    friend_del = true, "UPDATE {ks}.index_g{g} SET friends = friends - ?, clock = 1 WHERE uid = ?";
    user_put = true, "INSERT INTO {ks}.users_g{g} (part, pos, uid, profile) VALUES (?, ?, ?, ?)";
    user_get = true, "SELECT uid, profile FROM {ks}.users_g{g} WHERE part = ? AND pos = ?";
    user_stamped = true, "SELECT uid, profile, writetime(profile) FROM {ks}.users_g{g} WHERE part = ? AND pos = ?";
    user_put_at = true, "INSERT INTO {ks}.users_g{g} (part, pos, uid, profile) VALUES (?, ?, ?, ?) USING TIMESTAMP ?";
    users_in = true, "SELECT pos, uid, profile FROM {ks}.users_g{g} WHERE part = ? AND pos IN ?";
    users_after = true, "SELECT pos, uid, profile FROM {ks}.users_g{g} WHERE part = ? AND pos > ? AND pos < ? LIMIT ?";
    data_put = true, "INSERT INTO {ks}.data_g{g} (part, pos, chunk, bytes) VALUES (?, ?, ?, ?)";
    data_trim = true, "DELETE FROM {ks}.data_g{g} WHERE part = ? AND pos = ? AND chunk >= ?";
    data_get = true, "SELECT bytes FROM {ks}.data_g{g} WHERE part = ? AND pos = ? LIMIT ?";
}}
