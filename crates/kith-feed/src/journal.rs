//! The write-back journal: posts are acknowledged once they are in an fsynced local log,
//! and moved into the feed database in the background.
//!
//! One thread owns the log. It takes every append waiting, writes them in one go, calls
//! `fdatasync` once for all of them (group commit), puts them in the pending set, and only
//! then acknowledges. Segments rotate when the flusher asks; a segment is deleted after every
//! post in it is in the feed database. On start, every segment is replayed; a torn record at
//! the end of the last segment (a write that was never acknowledged) is cut off.
//!
//! Record: `len: u32 LE | crc32(payload): u32 LE | payload` where payload is [`Post::encode`].

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::post::Post;

/// Posts acknowledged but not yet in the feed database.
#[derive(Debug, Default)]
pub struct Pending {
    /// By id.
    pub posts: BTreeMap<u64, Arc<Post>>,
    /// (author, id).
    pub by_author: BTreeSet<(u64, u64)>,
}

impl Pending {
    pub(crate) fn insert(&mut self, post: Arc<Post>) {
        self.by_author.insert((post.author, post.id));
        self.posts.insert(post.id, post);
    }

    pub(crate) fn remove(&mut self, post: &Post) {
        self.by_author.remove(&(post.author, post.id));
        self.posts.remove(&post.id);
    }

    /// Up to `limit` of the author's pending post ids below `before`, newest first.
    pub fn author_posts(&self, author: u64, before: u64, limit: usize) -> Vec<u64> {
        self.by_author
            .range((author, 0)..(author, before))
            .rev()
            .take(limit)
            .map(|&(_, id)| id)
            .collect()
    }
}

/// Counters the journal thread keeps: appends and `fdatasync` calls (their ratio is the
/// group commit's batch size).
#[derive(Clone, Debug)]
pub struct JournalCounters {
    /// Posts appended.
    pub appends: prometheus::IntCounter,
    /// `fdatasync` calls.
    pub syncs: prometheus::IntCounter,
}

impl Default for JournalCounters {
    fn default() -> Self {
        JournalCounters {
            appends: prometheus::IntCounter::new(
                "kith_journal_appends_total",
                "Posts appended to the write-back journal",
            )
            .expect("valid metric"),
            syncs: prometheus::IntCounter::new(
                "kith_journal_syncs_total",
                "fdatasync calls of the write-back journal",
            )
            .expect("valid metric"),
        }
    }
}

/// Shared pending set.
pub type SharedPending = Arc<Mutex<Pending>>;

pub(crate) fn lock(p: &SharedPending) -> std::sync::MutexGuard<'_, Pending> {
    p.lock().unwrap_or_else(PoisonError::into_inner)
}

enum Cmd {
    Append(Arc<Post>, oneshot::Sender<Result<()>>),
    /// Closes the current segment; answers with the closed segments' paths.
    Rotate(oneshot::Sender<Result<Vec<PathBuf>>>),
}

/// The journal's handle. Dropping it stops the thread after it has written what it was given.
#[derive(Debug)]
pub struct Journal {
    tx: Mutex<Option<mpsc::Sender<Cmd>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

fn segment_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:020}.log"))
}

fn segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(Error::io(format!("listing {}", dir.display())))? {
        let entry = entry.map_err(Error::io(format!("listing {}", dir.display())))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some(seq) = name.strip_suffix(".log").and_then(|s| s.parse::<u64>().ok()) {
            out.push((seq, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io(format!("syncing directory {}", dir.display())))
}

/// Reads every record of a segment. A bad record ends the segment: in the last segment it is
/// a torn, unacknowledged append and the file is cut there; elsewhere it is corruption.
fn replay_segment(path: &Path, last: bool, out: &mut Vec<Post>) -> Result<()> {
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(Error::io(format!("reading journal {}", path.display())))?;
    let mut at = 0usize;
    while at < bytes.len() {
        let bad = |reason: &str| Error::Corrupt {
            what: format!("journal {} at byte {at}", path.display()),
            reason: reason.into(),
        };
        let valid = bytes.len() - at >= 8 && {
            let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4")) as usize;
            let crc = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("4"));
            bytes.len() - at - 8 >= len && crc32fast::hash(&bytes[at + 8..at + 8 + len]) == crc
        };
        if !valid {
            if !last {
                return Err(bad("bad length or checksum before the end of a closed segment"));
            }
            let f = OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(Error::io(format!("opening {}", path.display())))?;
            f.set_len(at as u64)
                .and_then(|()| f.sync_all())
                .map_err(Error::io(format!("cutting the torn tail of {}", path.display())))?;
            return Ok(());
        }
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4")) as usize;
        let payload = &bytes[at + 8..at + 8 + len];
        out.push(Post::decode(payload, || format!("journal {} at byte {at}", path.display()))?);
        at += 8 + len;
    }
    Ok(())
}

impl Journal {
    /// Replays `dir` (creating it if needed): returns the posts found, oldest first, and the
    /// paths of the segments they are in. The caller stores them and then deletes those
    /// segments; the journal starts writing a fresh segment.
    pub fn open(
        dir: &Path,
        pending: SharedPending,
        counters: JournalCounters,
    ) -> Result<(Journal, Vec<Post>, Vec<PathBuf>)> {
        std::fs::create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;
        let found = segments(dir)?;
        let mut posts = Vec::new();
        for (i, (_, path)) in found.iter().enumerate() {
            replay_segment(path, i + 1 == found.len(), &mut posts)?;
        }
        let next_seq = found.last().map_or(1, |(s, _)| s + 1);
        let old: Vec<PathBuf> = found.into_iter().map(|(_, p)| p).collect();
        let (tx, rx) = mpsc::channel();
        let dir = dir.to_path_buf();
        let file = open_segment(&dir, next_seq)?;
        let thread = std::thread::Builder::new()
            .name("kith-journal".into())
            .spawn(move || run(rx, dir, next_seq, file, pending, counters))
            .map_err(Error::io("starting the journal thread"))?;
        let journal = Journal { tx: Mutex::new(Some(tx)), thread: Mutex::new(Some(thread)) };
        Ok((journal, posts, old))
    }

    fn send(&self, cmd: Cmd) -> Result<()> {
        let tx = self.tx.lock().unwrap_or_else(PoisonError::into_inner);
        tx.as_ref().ok_or(Error::ShuttingDown)?.send(cmd).map_err(|_| Error::ShuttingDown)
    }

    /// Appends a post; returns once it is on disk and in the pending set.
    pub async fn append(&self, post: Arc<Post>) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.send(Cmd::Append(post, tx))?;
        rx.await.map_err(|_| Error::ShuttingDown)?
    }

    /// Closes the current segment; returns the closed segments (to delete once their posts
    /// are stored).
    pub async fn rotate(&self) -> Result<Vec<PathBuf>> {
        let (tx, rx) = oneshot::channel();
        self.send(Cmd::Rotate(tx))?;
        rx.await.map_err(|_| Error::ShuttingDown)?
    }

    /// Stops taking appends and waits for the thread to finish what it has.
    pub fn close(&self) {
        self.tx.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(t) = self.thread.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = t.join();
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.close();
    }
}

fn open_segment(dir: &Path, seq: u64) -> Result<File> {
    let path = segment_path(dir, seq);
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(Error::io(format!("creating journal segment {}", path.display())))?;
    sync_dir(dir)?;
    Ok(f)
}

fn run(
    rx: mpsc::Receiver<Cmd>,
    dir: PathBuf,
    mut seq: u64,
    mut file: File,
    pending: SharedPending,
    counters: JournalCounters,
) {
    let mut closed: Vec<PathBuf> = Vec::new();
    let mut batch: Vec<(Arc<Post>, oneshot::Sender<Result<()>>)> = Vec::new();
    let mut buf = Vec::new();
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        loop {
            match next.take() {
                Some(Cmd::Append(post, ack)) => batch.push((post, ack)),
                Some(Cmd::Rotate(answer)) => {
                    commit(&mut file, &mut buf, &mut batch, &pending, &counters);
                    closed.push(segment_path(&dir, seq));
                    let rotated = open_segment(&dir, seq + 1);
                    let reply = match rotated {
                        Ok(f) => {
                            file = f;
                            seq += 1;
                            Ok(std::mem::take(&mut closed))
                        }
                        Err(e) => {
                            closed.pop();
                            Err(e)
                        }
                    };
                    let _ = answer.send(reply);
                }
                None => {}
            }
            if batch.len() >= 4096 {
                commit(&mut file, &mut buf, &mut batch, &pending, &counters);
            }
            match rx.try_recv() {
                Ok(cmd) => next = Some(cmd),
                Err(_) => break,
            }
        }
        commit(&mut file, &mut buf, &mut batch, &pending, &counters);
    }
}

/// Writes and syncs the batch, then makes the posts pending, then acknowledges them.
fn commit(
    file: &mut File,
    buf: &mut Vec<u8>,
    batch: &mut Vec<(Arc<Post>, oneshot::Sender<Result<()>>)>,
    pending: &SharedPending,
    counters: &JournalCounters,
) {
    if batch.is_empty() {
        return;
    }
    buf.clear();
    for (post, _) in batch.iter() {
        let payload = post.encode();
        buf.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        buf.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        buf.extend_from_slice(&payload);
    }
    let written = file.write_all(buf).and_then(|()| file.sync_data());
    counters.syncs.inc();
    match written {
        Ok(()) => {
            counters.appends.inc_by(batch.len() as u64);
            let mut p = lock(pending);
            for (post, _) in batch.iter() {
                p.insert(post.clone());
            }
            drop(p);
            for (_, ack) in batch.drain(..) {
                let _ = ack.send(Ok(()));
            }
        }
        Err(e) => {
            for (_, ack) in batch.drain(..) {
                let _ = ack.send(Err(Error::Io {
                    context: "appending to the write-back journal".into(),
                    source: std::io::Error::new(e.kind(), e.to_string()),
                }));
            }
        }
    }
}

/// Removes journal segments (already gone is fine) and syncs their directory.
pub(crate) fn remove_segments(paths: &[std::path::PathBuf], dir: &Path) -> Result<()> {
    for p in paths {
        match std::fs::remove_file(p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(format!("removing {}", p.display()))(e)),
        }
    }
    if !paths.is_empty() {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(Error::io(format!("syncing {}", dir.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(id: u64) -> Arc<Post> {
        Arc::new(Post { id, author: id % 3, ts_ms: id, content: format!("post {id}") })
    }

    #[tokio::test]
    async fn appends_survive_and_torn_tails_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        let pending = SharedPending::default();
        let (j, replayed, old) =
            Journal::open(dir.path(), pending.clone(), JournalCounters::default()).unwrap();
        assert!(replayed.is_empty() && old.is_empty());
        for id in 1..=5 {
            j.append(post(id)).await.unwrap();
        }
        assert_eq!(lock(&pending).posts.len(), 5);
        assert_eq!(lock(&pending).author_posts(1, u64::MAX, 10), vec![4, 1]);
        let closed = j.rotate().await.unwrap();
        assert_eq!(closed.len(), 1);
        j.append(post(6)).await.unwrap();
        j.close();
        // A torn append at the end of the newest segment.
        let newest = segments(dir.path()).unwrap().pop().unwrap().1;
        let mut f = OpenOptions::new().append(true).open(&newest).unwrap();
        f.write_all(&[9, 0, 0, 0, 1, 2]).unwrap();
        drop(f);
        let (_j, replayed, old) =
            Journal::open(dir.path(), SharedPending::default(), JournalCounters::default())
                .unwrap();
        assert_eq!(replayed.iter().map(|p| p.id).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(old.len(), 2);
        assert_eq!(replayed[5], *post(6));
    }
}
