//! The write-back journal: posts are acknowledged once they are in an fsynced local log,
//! and moved into the feed database in the background.
//!
//! One thread owns the log. It takes every append waiting, writes them in one go, calls
//! `fdatasync` once for all of them (group commit), puts them in the pending set, and only
//! then acknowledges. Segments rotate when the flusher asks; a segment is deleted after every
//! post in it is in the feed database. On start, every segment is replayed
//! (`journal/replay.rs`) before the journal writes a fresh one.
//!
//! **Invariant: a segment holds only whole records up to its good length before anything
//! more is appended.** A write or sync that fails may leave part of a batch in the file; the
//! batch is refused (never acknowledged) and the segment is cut back to its good length
//! and synced, or, if that fails too, or the sync itself failed (after a failed `fsync` the
//! kernel's page cache no longer says what is on disk), abandoned for a fresh segment. The
//! next batch is refused until one of the two has worked, so a full disk refuses appends
//! with the disk's error and takes them again once space returns, without a restart. (A
//! refused post can still reappear at replay only if both the sync and the cut failed and
//! the bytes reached the disk anyway: its client was told it failed, as with any write
//! whose outcome is unknown.)
//!
//! The record format is in `journal/record.rs`, the file-system seam in `journal/fs.rs`.

mod fs;
mod record;
mod replay;
#[cfg(test)]
mod sim;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::post::Post;
pub(crate) use fs::{AppendFile, Fs, RealFs};
pub(crate) use replay::{REPLAY_BATCH, replay};

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

/// Counters the journal keeps: appends and `fdatasync` calls (their ratio is the group
/// commit's batch size), failed appends, and damage found at replay.
#[derive(Clone, Debug)]
pub struct JournalCounters {
    /// Posts appended.
    pub appends: prometheus::IntCounter,
    /// `fdatasync` calls.
    pub syncs: prometheus::IntCounter,
    /// Posts refused because writing or syncing them failed.
    pub failed: prometheus::IntCounter,
    /// Segments found damaged at replay (kept aside).
    pub damaged_segments: prometheus::IntCounter,
    /// Bytes skipped as damage at replay: the posts in them are lost.
    pub damaged_bytes: prometheus::IntCounter,
}

impl Default for JournalCounters {
    fn default() -> Self {
        let counter =
            |name: &str, help: &str| prometheus::IntCounter::new(name, help).expect("valid metric");
        JournalCounters {
            appends: counter(
                "kith_journal_appends_total",
                "Posts appended to the write-back journal",
            ),
            syncs: counter("kith_journal_syncs_total", "fdatasync calls of the write-back journal"),
            failed: counter(
                "kith_journal_failed_appends_total",
                "Posts refused because the journal could not write or sync them",
            ),
            damaged_segments: counter(
                "kith_journal_damaged_segments_total",
                "Journal segments found damaged at replay and kept aside",
            ),
            damaged_bytes: counter(
                "kith_journal_damaged_bytes_total",
                "Journal bytes skipped as damage at replay (their posts are lost)",
            ),
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

pub(crate) fn segment_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:020}.log"))
}

/// The segments in `dir`, oldest first.
fn segments(fs: &dyn Fs, dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for path in fs.list(dir).map_err(Error::io(format!("listing {}", dir.display())))? {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some(seq) = name.strip_suffix(".log").and_then(|s| s.parse::<u64>().ok()) {
            out.push((seq, path));
        }
    }
    out.sort();
    Ok(out)
}

impl Journal {
    /// Starts the journal in `dir` (which [`replay`] has emptied of segments), writing a
    /// fresh segment.
    pub fn open(dir: &Path, pending: SharedPending, counters: JournalCounters) -> Result<Journal> {
        Journal::open_in(Arc::new(RealFs), dir, pending, counters)
    }

    /// [`Journal::open`] over a given file system.
    pub(crate) fn open_in(
        fs: Arc<dyn Fs>,
        dir: &Path,
        pending: SharedPending,
        counters: JournalCounters,
    ) -> Result<Journal> {
        fs.create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;
        let seq = segments(fs.as_ref(), dir)?.last().map_or(1, |(s, _)| s + 1);
        let file = open_segment(fs.as_ref(), dir, seq)?;
        let (tx, rx) = mpsc::channel();
        let writer = Writer {
            fs,
            dir: dir.to_path_buf(),
            seq,
            file,
            len: 0,
            broken: false,
            closed: Vec::new(),
            pending,
            counters,
        };
        let thread = std::thread::Builder::new()
            .name("kith-journal".into())
            .spawn(move || writer.run(rx))
            .map_err(Error::io("starting the journal thread"))?;
        Ok(Journal { tx: Mutex::new(Some(tx)), thread: Mutex::new(Some(thread)) })
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

/// Creates a segment and makes its directory entry durable.
fn open_segment(fs: &dyn Fs, dir: &Path, seq: u64) -> Result<Box<dyn AppendFile>> {
    let path = segment_path(dir, seq);
    let f = fs
        .create_append(&path)
        .map_err(Error::io(format!("creating journal segment {}", path.display())))?;
    fs.sync_dir(dir).map_err(Error::io(format!("syncing directory {}", dir.display())))?;
    Ok(f)
}

type Batch = Vec<(Arc<Post>, oneshot::Sender<Result<()>>)>;

/// The journal thread's state.
struct Writer {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    seq: u64,
    file: Box<dyn AppendFile>,
    /// The segment's good length: whole, synced records.
    len: u64,
    /// A failed write or sync may have left bytes past `len`.
    broken: bool,
    /// Segments closed since the flusher last asked.
    closed: Vec<PathBuf>,
    pending: SharedPending,
    counters: JournalCounters,
}

impl Writer {
    fn run(mut self, rx: mpsc::Receiver<Cmd>) {
        let mut batch: Batch = Vec::new();
        let mut buf = Vec::new();
        while let Ok(first) = rx.recv() {
            let mut next = Some(first);
            loop {
                match next.take() {
                    Some(Cmd::Append(post, ack)) => batch.push((post, ack)),
                    Some(Cmd::Rotate(answer)) => {
                        self.commit(&mut buf, &mut batch);
                        let _ = answer.send(self.rotate());
                    }
                    None => {}
                }
                if batch.len() >= 4096 {
                    self.commit(&mut buf, &mut batch);
                }
                match rx.try_recv() {
                    Ok(cmd) => next = Some(cmd),
                    Err(_) => break,
                }
            }
            self.commit(&mut buf, &mut batch);
        }
    }

    fn path(&self) -> PathBuf {
        segment_path(&self.dir, self.seq)
    }

    /// Closes the current segment for a fresh one; returns every segment closed since the
    /// last call.
    fn rotate(&mut self) -> Result<Vec<PathBuf>> {
        if self.broken {
            // Abandoning the segment is the rotation.
            self.repair(true)?;
        } else {
            self.next_segment()?;
        }
        Ok(std::mem::take(&mut self.closed))
    }

    fn next_segment(&mut self) -> Result<()> {
        let file = open_segment(self.fs.as_ref(), &self.dir, self.seq + 1)?;
        self.closed.push(self.path());
        self.file = file;
        self.seq += 1;
        self.len = 0;
        self.broken = false;
        Ok(())
    }

    /// Restores the invariant after a failed write or sync: cuts the segment back to its
    /// good length, or abandons it for a fresh one (`abandon`, or if cutting fails).
    fn repair(&mut self, abandon: bool) -> Result<()> {
        let cut = self.file.truncate(self.len).and_then(|()| self.file.sync());
        if cut.is_ok() && !abandon {
            self.broken = false;
            return Ok(());
        }
        // The abandoned segment's acknowledged posts are pending: it is handed to the
        // flusher like any closed segment, and deleted once they are stored.
        self.next_segment()
    }

    /// Writes and syncs the batch, then makes the posts pending, then acknowledges them;
    /// or refuses them all.
    fn commit(&mut self, buf: &mut Vec<u8>, batch: &mut Batch) {
        if batch.is_empty() {
            return;
        }
        let refuse = |batch: &mut Batch, context: String, e: &std::io::Error| {
            for (_, ack) in batch.drain(..) {
                let source = std::io::Error::new(e.kind(), e.to_string());
                let _ = ack.send(Err(Error::Io { context: context.clone(), source }));
            }
        };
        if self.broken
            && let Err(e) = self.repair(false)
        {
            self.counters.failed.inc_by(batch.len() as u64);
            let source = match &e {
                Error::Io { source, .. } => std::io::Error::new(source.kind(), e.to_string()),
                _ => std::io::Error::other(e.to_string()),
            };
            let context = "the write-back journal cannot recover from an earlier failed \
                           append, so the post was not stored"
                .to_string();
            return refuse(batch, context, &source);
        }
        buf.clear();
        for (post, _) in batch.iter() {
            record::encode(&post.encode(), buf);
        }
        let appended = self.file.append(buf).map_err(|e| (e, false));
        let result = appended.and_then(|()| {
            self.counters.syncs.inc();
            self.file.sync().map_err(|e| (e, true))
        });
        match result {
            Ok(()) => {
                self.len += buf.len() as u64;
                self.counters.appends.inc_by(batch.len() as u64);
                let mut p = lock(&self.pending);
                for (post, _) in batch.iter() {
                    p.insert(post.clone());
                }
                drop(p);
                for (_, ack) in batch.drain(..) {
                    let _ = ack.send(Ok(()));
                }
            }
            Err((e, sync_failed)) => {
                self.broken = true;
                self.counters.failed.inc_by(batch.len() as u64);
                let context =
                    format!("appending to the write-back journal {}", self.path().display());
                // Cut or abandon before answering, so that the segment is consistent by the
                // time anyone hears of the failure; if this fails, the next batch tries again
                // before it writes.
                let _ = self.repair(sync_failed);
                refuse(batch, context, &e);
            }
        }
    }
}

/// Removes journal segments (already gone is fine) and syncs their directory.
pub(crate) fn remove_segments(paths: &[PathBuf], dir: &Path) -> Result<()> {
    remove_segments_in(&RealFs, paths, dir)
}

/// [`remove_segments`] over a given file system.
pub(crate) fn remove_segments_in(fs: &dyn Fs, paths: &[PathBuf], dir: &Path) -> Result<()> {
    for p in paths {
        match fs.remove(p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(format!("removing {}", p.display()))(e)),
        }
    }
    if !paths.is_empty() {
        fs.sync_dir(dir).map_err(Error::io(format!("syncing {}", dir.display())))?;
    }
    Ok(())
}
