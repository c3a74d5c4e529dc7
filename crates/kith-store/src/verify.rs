//! `verify`: every block's checksum, every record's checksum, and the store's invariants.

use std::collections::HashMap;

use rocksdb::{IteratorMode, ReadOptions};
use serde::Serialize;

use crate::error::Result;
use crate::keys;
use crate::record::{self, chunk_count};
use crate::store::Store;

/// At most this many problems are listed; the rest are counted.
const LISTED: usize = 100;

/// What `verify` found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VerifyReport {
    /// Users in the index.
    pub users: u64,
    /// Friendships, each counted once.
    pub friendships: u64,
    /// Keys read.
    pub records: u64,
    /// Bytes of keys and values read.
    pub bytes: u64,
    /// Problems found (the first 100).
    pub problems: Vec<String>,
    /// All problems found.
    pub problem_count: u64,
}

impl VerifyReport {
    /// Whether the store is sound.
    pub fn ok(&self) -> bool {
        self.problem_count == 0
    }

    fn problem(&mut self, p: String) {
        self.problem_count += 1;
        if self.problems.len() < LISTED {
            self.problems.push(p);
        }
    }
}

#[derive(Default)]
struct Seen {
    profile_uid: Option<u64>,
    data_len: Option<u64>,
    chunks: u32,
}

impl Store {
    /// Reads every key of the store with block checksums verified, checks every record's own
    /// checksum, then the invariants: index and records agree both ways, every user has a
    /// profile and its data chunks, positions are unique, friendships are symmetric and name the
    /// friend's current position, no one is their own friend, and no other generation's keys
    /// remain. A RocksDB-level corruption (a damaged SST block) ends the scan with an error.
    pub fn verify(&self) -> Result<VerifyReport> {
        let view = self.view();
        let g = view.generation;
        let mut report = VerifyReport::default();
        let mut read: ReadOptions = view.read_options();
        read.fill_cache(false);
        let mut index: HashMap<u64, (u64, Vec<record::Friend>)> = HashMap::new();
        let mut at: HashMap<u64, Seen> = HashMap::new();
        let mut meta_seen = 0;
        for item in self.db.iterator_opt(IteratorMode::Start, read) {
            let (k, v) = item?;
            report.records += 1;
            report.bytes += (k.len() + v.len()) as u64;
            if k.first() == Some(&keys::META) {
                meta_seen += 1;
                if k.as_ref() != keys::meta("format").as_slice()
                    && let Err(e) = record::unseal(&k, &v)
                {
                    report.problem(e.to_string());
                }
                continue;
            }
            let Some((tag, generation, rest, chunk)) = keys::parse(&k) else {
                report.problem(format!("unknown key {}", keys::describe(&k)));
                continue;
            };
            if generation != g {
                report.problem(format!(
                    "{}: left over from generation {generation}",
                    keys::describe(&k)
                ));
                continue;
            }
            let outcome = match tag {
                keys::INDEX => record::decode_entry(&k, &v).map(|entry| {
                    index.insert(rest, entry);
                }),
                keys::PROFILE => record::decode_header(&k, &v).map(|(uid, _)| {
                    at.entry(rest).or_default().profile_uid = Some(uid);
                }),
                _ => {
                    let seen = at.entry(rest).or_default();
                    seen.chunks += 1;
                    if chunk == Some(0) {
                        record::decode_first_chunk(&k, &v).map(|(len, _)| seen.data_len = Some(len))
                    } else {
                        record::unseal(&k, &v).map(|_| ())
                    }
                }
            };
            if let Err(e) = outcome {
                report.problem(e.to_string());
            }
        }
        if meta_seen < 4 {
            report.problem(format!(
                "{meta_seen} metadata keys; expected format, generation, chunk_bytes, layout"
            ));
        }
        report.users = index.len() as u64;
        let mut pairs: Vec<(u64, u64)> = Vec::new();
        for (&uid, (pos, friends)) in &index {
            let pos = *pos;
            let Some(seen) = at.get(&pos) else {
                report.problem(format!(
                    "user {uid}: indexed at position {pos}, which holds no records"
                ));
                continue;
            };
            match seen.profile_uid {
                Some(u) if u == uid => {}
                Some(u) => report.problem(format!("user {uid}: position {pos} holds user {u}")),
                None => report.problem(format!("user {uid}: no profile at position {pos}")),
            }
            match seen.data_len {
                Some(len) if chunk_count(len, self.chunk_bytes) == seen.chunks => {}
                Some(len) => report.problem(format!(
                    "user {uid}: {len} data bytes need {} chunks, found {}",
                    chunk_count(len, self.chunk_bytes),
                    seen.chunks
                )),
                None => report.problem(format!("user {uid}: no data chunk 0")),
            }
            for f in friends {
                if f.uid == uid {
                    report.problem(format!("user {uid}: lists themselves as a friend"));
                }
                match index.get(&f.uid) {
                    None => report.problem(format!("user {uid}: friend {} does not exist", f.uid)),
                    Some(&(p, _)) if p != f.position => report.problem(format!(
                        "user {uid}: friend {} recorded at position {}, indexed at {p}",
                        f.uid, f.position
                    )),
                    Some(_) => {}
                }
                pairs.push((uid, f.uid));
            }
        }
        let positions: std::collections::HashSet<u64> = index.values().map(|e| e.0).collect();
        if positions.len() != index.len() {
            report.problem(format!("{} users share {} positions", index.len(), positions.len()));
        }
        for (&pos, seen) in &at {
            if !positions.contains(&pos) {
                let who = seen.profile_uid.map_or("no one".to_string(), |u| format!("user {u}"));
                report.problem(format!(
                    "position {pos} holds records of {who} but no uid is indexed there"
                ));
            }
        }
        pairs.sort_unstable();
        for &(u, v) in &pairs {
            if pairs.binary_search(&(v, u)).is_err() {
                report
                    .problem(format!("friendship {u}-{v} is not symmetric: {v} does not list {u}"));
            }
        }
        report.friendships = pairs.iter().filter(|&&(u, v)| u < v).count() as u64;
        Ok(report)
    }
}
