//! The journal's tests: torn and zero-filled tails, damaged closed segments, failed appends
//! on a full disk (a real tmpfs, and the simulated file system), bounded replay, and power
//! loss at many points.

use std::io::Write;

use super::replay::Replayed;
use super::sim::SimFs;
use super::*;

fn post(id: u64) -> Arc<Post> {
    Arc::new(Post { id, author: id % 3, ts_ms: id, content: format!("post {id}") })
}

fn ids(posts: &[Post]) -> Vec<u64> {
    posts.iter().map(|p| p.id).collect()
}

/// Replays `dir` over `fs`, collecting the posts.
fn replay_in(fs: &dyn Fs, dir: &Path, batch: usize) -> (Vec<Post>, Replayed) {
    let mut posts = Vec::new();
    let done = replay(fs, dir, batch, &JournalCounters::default(), &mut |b| {
        posts.extend(b);
        Ok(())
    })
    .unwrap();
    (posts, done)
}

fn open_real(dir: &Path) -> (Journal, SharedPending) {
    let pending = SharedPending::default();
    (Journal::open(dir, pending.clone(), JournalCounters::default()).unwrap(), pending)
}

fn newest(dir: &Path) -> PathBuf {
    segments(&RealFs, dir).unwrap().pop().unwrap().1
}

fn append_bytes(path: &Path, bytes: &[u8]) {
    std::fs::OpenOptions::new().append(true).open(path).unwrap().write_all(bytes).unwrap();
}

#[tokio::test]
async fn appends_survive_and_torn_tails_are_cut() {
    let dir = tempfile::tempdir().unwrap();
    let (replayed, _) = replay_in(&RealFs, dir.path(), REPLAY_BATCH);
    assert!(replayed.is_empty());
    let (j, pending) = open_real(dir.path());
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
    append_bytes(&newest(dir.path()), &[0xC6, b'k', b'j', 2, 9, 0, 0, 0, 1, 2]);
    let (replayed, done) = replay_in(&RealFs, dir.path(), REPLAY_BATCH);
    assert_eq!(ids(&replayed), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(replayed[5], *post(6));
    assert_eq!((done.torn_bytes, done.damaged.len(), done.last_id), (10, 0, 6));
    assert!(segments(&RealFs, dir.path()).unwrap().is_empty(), "replayed segments are removed");
}

#[tokio::test]
async fn a_zero_filled_tail_is_cut_and_the_posts_before_it_replay() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = open_real(dir.path());
    for id in 1..=3 {
        j.append(post(id)).await.unwrap();
    }
    j.close();
    append_bytes(&newest(dir.path()), &[0; 512]);
    let (replayed, done) = replay_in(&RealFs, dir.path(), REPLAY_BATCH);
    assert_eq!(ids(&replayed), vec![1, 2, 3]);
    assert_eq!((done.torn_bytes, done.damaged.len()), (512, 0));
}

#[tokio::test]
async fn a_format_1_journal_still_replays() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = Vec::new();
    for id in 1..=3 {
        let payload = post(id).encode();
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        bytes.extend_from_slice(&payload);
    }
    bytes.extend_from_slice(&[0; 512]);
    std::fs::write(segment_path(dir.path(), 7), bytes).unwrap();
    let (replayed, done) = replay_in(&RealFs, dir.path(), REPLAY_BATCH);
    assert_eq!(ids(&replayed), vec![1, 2, 3]);
    assert_eq!(done.torn_bytes, 512);
}

#[tokio::test]
async fn a_damaged_record_in_a_closed_segment_loses_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = open_real(dir.path());
    for id in 1..=5 {
        j.append(post(id)).await.unwrap();
    }
    j.rotate().await.unwrap();
    for id in 6..=8 {
        j.append(post(id)).await.unwrap();
    }
    j.close();
    let (_, first) = segments(&RealFs, dir.path()).unwrap().remove(0);
    let mut bytes = std::fs::read(&first).unwrap();
    // Flips a byte of post 3's content, in the middle of the closed segment.
    let at = bytes.windows(6).position(|w| w == b"post 3").unwrap();
    bytes[at] ^= 0x55;
    std::fs::write(&first, &bytes).unwrap();
    let counters = JournalCounters::default();
    let mut replayed = Vec::new();
    let done = replay(&RealFs, dir.path(), REPLAY_BATCH, &counters, &mut |b| {
        replayed.extend(b);
        Ok(())
    })
    .unwrap();
    assert_eq!(ids(&replayed), vec![1, 2, 4, 5, 6, 7, 8]);
    assert_eq!(done.damaged.len(), 1);
    let damage = &done.damaged[0];
    assert_eq!(
        (damage.segment.as_path(), damage.bytes),
        (first.as_path(), post(3).encode().len() as u64 + 12)
    );
    assert_eq!(std::fs::read(&damage.kept_as).unwrap(), bytes, "the damaged segment is kept");
    assert_eq!((counters.damaged_segments.get(), counters.damaged_bytes.get()), (1, damage.bytes));
    // Kept aside, it is not replayed again.
    let (again, _) = replay_in(&RealFs, dir.path(), REPLAY_BATCH);
    assert!(again.is_empty());
}

/// A small tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    /// Mounts `size` bytes of tmpfs, or says why not (not root, no mount in a container).
    fn mount(size: &str) -> std::result::Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("running mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.0.path()).status();
    }
}

/// Writes a file until the disk is full; returns its path.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("ballast");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![7u8; 512];
    while f.write_all(&chunk).is_ok() {}
    let _ = f.sync_all();
    path
}

#[tokio::test]
async fn a_full_disk_refuses_appends_and_they_work_again_once_space_returns() {
    let fs = match Tmpfs::mount("64k") {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!("skipped: cannot mount a tmpfs ({why})");
            return;
        }
    };
    let dir = fs.0.path().join("journal");
    let (j, pending) = open_real(&dir);
    j.append(post(1)).await.unwrap();
    let ballast = fill(fs.0.path());
    // Larger than what is left of the segment's page: part of it is written, then the disk
    // is full.
    let big = Arc::new(Post { id: 2, author: 2, ts_ms: 2, content: "x".repeat(6000) });
    let err = j.append(big).await.unwrap_err();
    assert!(
        matches!(&err, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull),
        "{err}"
    );
    assert!(err.to_string().contains("journal"), "{err}");
    assert!(!lock(&pending).posts.contains_key(&2), "a refused post is not pending");
    std::fs::remove_file(ballast).unwrap();
    j.append(post(3)).await.unwrap();
    j.close();
    let (replayed, done) = replay_in(&RealFs, &dir, REPLAY_BATCH);
    assert_eq!(ids(&replayed), vec![1, 3]);
    assert!(done.damaged.is_empty() && done.torn_bytes == 0, "{done:?}");
}

#[tokio::test]
async fn failed_writes_and_syncs_are_refused_and_later_appends_replay_cleanly() {
    let sim = SimFs::default();
    let dir = Path::new("/j");
    let fs: Arc<dyn Fs> = Arc::new(sim.clone());
    let pending = SharedPending::default();
    let j = Journal::open_in(fs, dir, pending.clone(), JournalCounters::default()).unwrap();
    j.append(post(1)).await.unwrap();
    let used = sim.get(&segment_path(dir, 1)).unwrap().len();
    // Room for part of the next record only.
    sim.set_space(Some(used + 20));
    let err = j.append(post(2)).await.unwrap_err();
    assert!(
        matches!(&err, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull)
    );
    assert_eq!(sim.get(&segment_path(dir, 1)).unwrap().len(), used, "cut back to its good length");
    sim.set_space(None);
    j.append(post(3)).await.unwrap();
    // A failing sync: refused, and the segment is abandoned for a fresh one.
    sim.set_fail_syncs(true);
    assert!(j.append(post(4)).await.is_err());
    sim.set_fail_syncs(false);
    j.append(post(5)).await.unwrap();
    let closed = j.rotate().await.unwrap();
    assert_eq!(closed.len(), 2, "the abandoned segment is handed to the flusher: {closed:?}");
    j.close();
    assert_eq!(lock(&pending).posts.keys().copied().collect::<Vec<_>>(), vec![1, 3, 5]);
    let (replayed, done) = replay_in(&sim.after_power_loss(1), dir, REPLAY_BATCH);
    assert_eq!(ids(&replayed), vec![1, 3, 5]);
    assert!(done.damaged.is_empty(), "{done:?}");
}

#[test]
fn replay_streams_in_bounded_batches() {
    // About 10 MB of journal in four segments, on the simulated disk (no fsync to wait for).
    let sim = SimFs::default();
    let dir = Path::new("/big");
    let body = "y".repeat(1000);
    let mut journal_bytes = 0;
    for seg in 0..4u64 {
        let mut bytes = Vec::new();
        for id in seg * 2500 + 1..=(seg + 1) * 2500 {
            let p = Post { id, author: 1, ts_ms: id, content: body.clone() };
            record::encode(&p.encode(), &mut bytes);
        }
        journal_bytes += bytes.len();
        sim.put(&segment_path(dir, seg + 1), bytes);
    }
    let mut largest = 0;
    let mut next = 1;
    let done = replay(&sim, dir, 100, &JournalCounters::default(), &mut |b| {
        largest = largest.max(b.len());
        assert_eq!(b[0].id, next, "in order");
        next += b.len() as u64;
        Ok(())
    })
    .unwrap();
    assert_eq!((done.posts, done.batches, largest), (10_000, 100, 100));
    // The reader held one read buffer, not the journal.
    assert!(journal_bytes > 10_000_000, "{journal_bytes}");
    assert!(done.peak_buffer < 256 << 10, "peak buffer {} bytes", done.peak_buffer);
}

/// One life of a journal over `sim`: appends (three at a time, to exercise group commit),
/// rotations, and flushes that store pending posts and remove their segments, until power is
/// lost or the script ends. Returns (acknowledged, stored by flushes, tried).
async fn life(sim: &SimFs, dir: &Path, first: u64) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let fs: Arc<dyn Fs> = Arc::new(sim.clone());
    let pending = SharedPending::default();
    let Ok(j) = Journal::open_in(fs, dir, pending.clone(), JournalCounters::default()) else {
        return Default::default();
    };
    let (mut acked, mut stored, mut tried) = (Vec::new(), Vec::new(), Vec::new());
    let mut to_delete = Vec::new();
    for round in 0..12u64 {
        let ids: Vec<u64> = (0..3).map(|k| first + round * 3 + k).collect();
        tried.extend(&ids);
        let results = futures_join(&j, &ids).await;
        for (id, r) in ids.iter().zip(results) {
            if r.is_ok() {
                acked.push(*id);
            }
        }
        if round % 4 == 3 {
            // The flusher's protocol: rotate, store what is pending, then remove.
            let Ok(closed) = j.rotate().await else { break };
            to_delete.extend(closed);
            let posts: Vec<Arc<Post>> = lock(&pending).posts.values().cloned().collect();
            stored.extend(posts.iter().map(|p| p.id));
            for p in &posts {
                lock(&pending).remove(p);
            }
            if remove_segments_in(sim, &to_delete, dir).is_err() {
                break;
            }
            to_delete.clear();
        }
        if sim.is_dead() {
            break;
        }
    }
    j.close();
    (acked, stored, tried)
}

async fn futures_join(j: &Journal, ids: &[u64]) -> Vec<Result<()>> {
    let (a, b, c) =
        tokio::join!(j.append(post(ids[0])), j.append(post(ids[1])), j.append(post(ids[2])));
    vec![a, b, c]
}

#[tokio::test]
async fn power_loss_at_any_point_keeps_every_acknowledged_post_and_invents_none() {
    let dir = Path::new("/journal");
    let mut points = 0;
    for crash_at in 1..=140u64 {
        for seed in [crash_at, crash_at * 7919 + 3] {
            let sim = SimFs::default();
            sim.crash_after(crash_at, seed);
            let (acked, stored, tried) = life(&sim, dir, 1).await;
            let after = sim.after_power_loss(seed);
            let (replayed, done) = replay_in(&after, dir, 7);
            let replayed = ids(&replayed);
            let mut unique = replayed.clone();
            unique.dedup();
            assert_eq!(unique.len(), replayed.len(), "crash at {crash_at}: a post twice");
            for id in &acked {
                assert!(
                    stored.contains(id) || replayed.contains(id),
                    "crash at op {crash_at} (seed {seed}): acknowledged post {id} lost; \
                     replayed {replayed:?}"
                );
            }
            assert!(replayed.iter().all(|id| tried.contains(id)), "invented: {replayed:?}");
            assert!(done.damaged.is_empty(), "crash at {crash_at}: {:?}", done.damaged);
            // The next life starts where replay left the directory.
            let (acked2, _, _) = life(&after, dir, 1000).await;
            assert_eq!(acked2.len(), 36, "crash at {crash_at}: appends after recovery");
            points += 1;
        }
    }
    eprintln!("{points} power losses, every acknowledged post kept");
}
