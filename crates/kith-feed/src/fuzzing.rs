//! Entry point for the journal fuzz target in `fuzz/` (not part of kith's API): replay of
//! write-back journal segments holding any bytes at all.

use std::path::{Path, PathBuf};

use crate::journal::{JournalCounters, RealFs, replay, segment_path};

/// Writes `data` as one to three journal segments in a fresh directory under `scratch` and
/// replays them. Replay must end (never panic) with every post it stored decoded, batches no
/// larger than asked, damaged segments kept aside rather than replayed twice, and nothing
/// left to replay afterwards.
pub fn replay_segments(scratch: &Path, data: &[u8]) {
    let Some((&select, rest)) = data.split_first() else { return };
    let dir: PathBuf = scratch.join("journal");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating the journal directory");
    let parts = 1 + usize::from(select % 3);
    let size = rest.len().div_ceil(parts).max(1);
    for (i, part) in rest.chunks(size).enumerate() {
        std::fs::write(segment_path(&dir, i as u64 + 1), part).expect("writing a segment");
    }
    let batch = 1 + usize::from(select >> 4);
    let counters = JournalCounters::default();
    let mut stored = 0u64;
    let mut store = |posts: Vec<crate::post::Post>| {
        assert!(!posts.is_empty() && posts.len() <= batch, "a batch of {}", posts.len());
        stored += posts.len() as u64;
        Ok(())
    };
    let replayed = replay(&RealFs, &dir, batch, &counters, &mut store).expect("replay ends");
    assert_eq!(replayed.posts, stored);
    let mut again = 0u64;
    let mut count = |posts: Vec<crate::post::Post>| {
        again += posts.len() as u64;
        Ok(())
    };
    let second = replay(&RealFs, &dir, batch, &counters, &mut count).expect("a second replay");
    assert_eq!((second.posts, again), (0, 0), "segments were left to replay twice");
}
