//! Timelines in Redis: reads, builds (begun, then finished only if still being built),
//! pushes, drops and removals, each one script or command on the user's slot. A push or a
//! drop that fails leaves the timeline stale: never served here, and deleted by the probe
//! (`upkeep.rs`) or by the next build's begin.

use redis::{AsyncCommands, RedisResult};

use super::{ADD_PIPELINE, LUA_ADD, Redis};
use crate::cache::Build;
use crate::error::Result;

impl Redis {
    /// `before` past 2^53 (no post id is that large) reads from the newest. A timeline
    /// that missed a push is a miss.
    pub(in crate::cache) async fn timeline_read(
        &self,
        uid: u64,
        before: u64,
        limit: usize,
    ) -> Result<Option<(Vec<u64>, u64)>> {
        if self.shared.health.is_timeline_stale(uid) {
            return Ok(None);
        }
        let mut con = self.con();
        let max = if before > 1 << 53 { "+inf".to_string() } else { format!("({before}") };
        let mut inv = self.read.key(self.timeline_key(uid));
        inv.arg(max).arg(limit);
        let got: Option<(String, Vec<String>)> =
            self.run("timeline read", inv.invoke_async(&mut con)).await?;
        Ok(got.map(|(floor, ids)| {
            let ids = ids.iter().filter_map(|s| s.parse().ok()).collect();
            (ids, floor.parse().unwrap_or(u64::MAX))
        }))
    }

    /// Begins a build, which the feed completes from the store. A timeline that missed a
    /// push is deleted first (its mark cleared once it is), so that a build that fails
    /// leaves nothing stale behind for any server to serve.
    pub(in crate::cache) async fn timeline_begin(&self, uid: u64, new: Build) -> Result<Build> {
        let mut con = self.con();
        let health = &self.shared.health;
        if health.is_timeline_stale(uid) {
            let since = health.clock();
            let key = self.timeline_key(uid);
            self.run("timeline drop before a build", con.unlink::<_, ()>(key)).await?;
            health.timelines_fresh(&[uid], since);
        }
        let mut inv = self.begin.key(self.timeline_key(uid));
        inv.arg(build_mark(new));
        let mark: String = self.run("timeline begin", inv.invoke_async(&mut con)).await?;
        // The mark of a build under way, or one left by a build that never finished
        // (which this build then finishes); always of the form `build_mark` writes.
        Ok(parse_mark(&mark).unwrap_or(new))
    }

    pub(in crate::cache) async fn timeline_finish(
        &self,
        uid: u64,
        build: Build,
        ids: &[u64],
        floor: u64,
        cap: usize,
    ) -> Result<()> {
        let mut con = self.con();
        let mut inv = self.finish.key(self.timeline_key(uid));
        inv.arg(build_mark(build)).arg(cap).arg(floor);
        for id in ids {
            inv.arg(id);
        }
        self.run("timeline finish", inv.invoke_async::<()>(&mut con)).await
    }

    /// EVALSHA of the add script per user, [`ADD_PIPELINE`] users per pipeline, one
    /// pipeline per master at a time on a cluster. When a pipeline fails, these users'
    /// timelines are remembered as stale.
    pub(in crate::cache) async fn timeline_add(
        &self,
        uids: &[u64],
        ids: &[u64],
        cap: usize,
    ) -> Result<()> {
        let added = self.run("timeline push", self.timeline_add_all(uids, ids, cap)).await;
        if let Err(e) = &added {
            self.shared.health.timelines_stale(uids);
            self.distrust(e);
        }
        added
    }

    async fn timeline_add_all(&self, uids: &[u64], ids: &[u64], cap: usize) -> RedisResult<()> {
        let hash = self.add.get_hash().to_string();
        for chunk in uids.chunks(ADD_PIPELINE) {
            let cmds = chunk.iter().map(|&u| {
                let key = self.timeline_key(u);
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(&hash).arg(1).arg(&key).arg(cap);
                for id in ids {
                    cmd.arg(id);
                }
                (key, cmd)
            });
            self.shared.per_master(cmds.collect(), LUA_ADD, false).await?;
        }
        Ok(())
    }

    /// One UNLINK; when it fails, the timeline is stale until the probe deletes it.
    pub(in crate::cache) async fn timeline_drop(&self, uid: u64) -> Result<()> {
        let mut con = self.con();
        let dropped = self.run("timeline drop", con.unlink::<_, ()>(self.timeline_key(uid))).await;
        if let Err(e) = &dropped {
            self.shared.health.timelines_stale(&[uid]);
            self.distrust(e);
        }
        dropped
    }

    /// One script: the ids removed (the floor and build markers are not ids, so they
    /// stay), or the timeline deleted if it is being built (`LUA_REMOVE`).
    pub(in crate::cache) async fn timeline_remove(&self, uid: u64, ids: &[u64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut con = self.con();
        let mut inv = self.remove.key(self.timeline_key(uid));
        for id in ids {
            inv.arg(id);
        }
        self.run("timeline remove", inv.invoke_async::<()>(&mut con)).await
    }
}

/// A build's mark in the timeline's sorted set: `b` and the token in hex, at score -2.
fn build_mark(build: Build) -> String {
    format!("b{:016x}", build.0)
}

fn parse_mark(mark: &str) -> Option<Build> {
    u64::from_str_radix(mark.strip_prefix('b')?, 16).ok().map(Build)
}
