//! Replay of the journal at start: every post a previous run acknowledged but did not move
//! into the feed database is stored again, streaming, in bounded batches.
//!
//! Recovery policy, after RocksDB's WAL recovery modes (`kTolerateCorruptedTailRecords` for
//! the tail, `kSkipAnyCorruptedRecords` elsewhere) and LevelDB's log reader, which skips a
//! damaged block and reports the bytes dropped:
//! - bytes after the last valid record of the newest segment are a torn append that was
//!   never acknowledged (a crash mid-write, or zeros a crash left): they are dropped with a
//!   note;
//! - any other bytes that are no valid record are damage (or, rarely, the tail of a segment
//!   abandoned after a failed append that could not be cut back, see `journal/mod.rs`): replay skips to the next valid
//!   record, so every post that can be recovered is, keeps the segment aside as
//!   `<segment>.damaged-<time>` for inspection instead of deleting it, says what was lost on
//!   stderr and counts it in `kith_journal_damaged_segments_total` and
//!   `kith_journal_damaged_bytes_total`, and the feed starts.
//!
//! Memory: a segment is read one record at a time and posts go to the engine in batches of
//! at most `batch` posts (and about 8 MiB of content), so replay holds one batch and one read
//! buffer whatever the journal's size.

use std::path::{Path, PathBuf};

use super::fs::Fs;
use super::record::{Reader, Step};
use super::{JournalCounters, segments};
use crate::error::{Error, Result};
use crate::post::{Post, now_ms};

/// Posts stored into the engine at a time during replay.
pub(crate) const REPLAY_BATCH: usize = 4096;
/// Content bytes that also end a replay batch: 4096 posts of 64 KiB would be 256 MiB.
const REPLAY_BATCH_BYTES: usize = 8 << 20;

/// A stretch of a segment that held no valid record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Damage {
    /// The segment, as it was named.
    pub(crate) segment: PathBuf,
    /// Where it was kept aside.
    pub(crate) kept_as: PathBuf,
    /// The first damaged byte.
    pub(crate) at: u64,
    /// How many bytes were skipped.
    pub(crate) bytes: u64,
}

/// What replay found and did.
#[derive(Debug, Default)]
pub(crate) struct Replayed {
    /// Posts stored.
    pub(crate) posts: u64,
    /// Calls of the store function.
    pub(crate) batches: u64,
    /// The largest post id seen (0 if none).
    pub(crate) last_id: u64,
    /// Damage found, in order.
    pub(crate) damaged: Vec<Damage>,
    /// Bytes of torn tail dropped from the newest segment.
    pub(crate) torn_bytes: u64,
    /// The largest read buffer, in bytes.
    pub(crate) peak_buffer: usize,
}

/// Replays every segment of `dir` into `store`, oldest first, `batch` posts at a time; then
/// removes the segments, except damaged ones, which are kept aside.
pub(crate) fn replay(
    fs: &dyn Fs,
    dir: &Path,
    batch: usize,
    counters: &JournalCounters,
    store: &mut dyn FnMut(Vec<Post>) -> Result<()>,
) -> Result<Replayed> {
    fs.create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;
    let found = segments(fs, dir)?;
    let mut out = Replayed::default();
    let mut posts = Vec::new();
    let mut bytes = 0;
    let mut damaged: Vec<(&Path, Vec<(u64, u64)>)> = Vec::new();
    for (i, (_, path)) in found.iter().enumerate() {
        let newest = i + 1 == found.len();
        let what = || format!("reading journal {}", path.display());
        let mut reader = Reader::new(fs.open_read(path).map_err(Error::io(what()))?);
        let mut bad = Vec::new();
        loop {
            match reader.next().map_err(Error::io(what()))? {
                Step::End => break,
                Step::Record { at, payload } => {
                    let decoded = Post::decode(&payload, || {
                        format!("journal {} at byte {at}", path.display())
                    });
                    match decoded {
                        Ok(post) => {
                            out.last_id = out.last_id.max(post.id);
                            bytes += post.content.len();
                            posts.push(post);
                            if posts.len() >= batch.max(1) || bytes >= REPLAY_BATCH_BYTES {
                                bytes = 0;
                                out.posts += posts.len() as u64;
                                out.batches += 1;
                                store(std::mem::take(&mut posts))?;
                            }
                        }
                        // A record whose checksum holds but is no post was written wrong.
                        Err(_) => bad.push((at, payload.len() as u64)),
                    }
                }
                Step::Skipped { at, bytes, resumed: false } if newest => {
                    eprintln!(
                        "kith feed: journal {}: dropped a torn tail of {bytes} bytes at byte \
                         {at} (an append that was never acknowledged)",
                        path.display()
                    );
                    out.torn_bytes += bytes;
                }
                Step::Skipped { at, bytes, .. } => bad.push((at, bytes)),
            }
        }
        out.peak_buffer = out.peak_buffer.max(reader.peak);
        if !bad.is_empty() {
            damaged.push((path, bad));
        }
    }
    if !posts.is_empty() {
        out.posts += posts.len() as u64;
        out.batches += 1;
        store(posts)?;
    }
    // Every post that could be read is in the engine now: the clean segments can go.
    let stamp = now_ms();
    for (_, path) in &found {
        let Some((_, bad)) = damaged.iter().find(|(p, _)| p == path) else {
            fs.remove(path).map_err(Error::io(format!("removing {}", path.display())))?;
            continue;
        };
        let mut kept_as = path.clone().into_os_string();
        kept_as.push(format!(".damaged-{stamp}"));
        let kept_as = PathBuf::from(kept_as);
        fs.rename(path, &kept_as).map_err(Error::io(format!(
            "keeping the damaged journal {} aside as {}",
            path.display(),
            kept_as.display()
        )))?;
        counters.damaged_segments.inc();
        for &(at, bytes) in bad {
            eprintln!(
                "kith feed: DAMAGED JOURNAL {}: {bytes} bytes at byte {at} hold no valid \
                 record; the posts in them are lost, every other post was recovered; the \
                 segment is kept as {}",
                path.display(),
                kept_as.display()
            );
            counters.damaged_bytes.inc_by(bytes);
            out.damaged.push(Damage { segment: path.clone(), kept_as: kept_as.clone(), at, bytes });
        }
    }
    if !found.is_empty() {
        fs.sync_dir(dir).map_err(Error::io(format!("syncing directory {}", dir.display())))?;
    }
    Ok(out)
}
