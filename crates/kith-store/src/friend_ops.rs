//! Friendship changes as RocksDB merge operands, so a change costs what it changes.
//!
//! A friend list is one `i` record (position, count, (uid, position) pairs ascending by uid,
//! see `record.rs`) of up to 2^20 entries. Rewriting it for every added or dropped friend
//! would put the whole list (16 MB at the limit) into the WAL each time. Instead a change
//! writes a small operand under the user's index key:
//!
//! ```text
//! op* then a checksum of key and ops (as every record: see `record::seal`)
//! op = b'+' uid (u64 LE) position (u64 LE)   add a friend
//!    | b'-' uid (u64 LE)                     drop a friend
//! ```
//!
//! RocksDB folds the operands into the list on every read (so a write is seen by the next
//! read: read-your-writes holds as before) and for good when it flushes or compacts, so the
//! list on disk stays one sorted record with its checksum. Writers decide an operand under
//! the user's lock after reading the list, so an add is only written for a friend who is
//! absent and a drop for one who is present; folding still treats the last operand for a
//! uid as the one that counts, whatever came before.
//!
//! **Invariant: an operand is only ever merged onto an existing index record.** Folding
//! onto nothing, a damaged list or a damaged operand fails the read with RocksDB's merge
//! error rather than inventing a list.

use std::collections::BTreeMap;

use rocksdb::MergeOperands;

use crate::record::{self, Friend};

/// The operator's name, recorded by RocksDB in the OPTIONS file.
pub(crate) const NAME: &str = "kith.friend_ops.v1";

const ADD: u8 = b'+';
const DROP: u8 = b'-';

/// The operand that adds `friend` to the list under `key`.
pub(crate) fn add(key: &[u8], friend: Friend) -> Vec<u8> {
    let mut op = Vec::with_capacity(17 + 4);
    op.push(ADD);
    op.extend_from_slice(&friend.uid.to_le_bytes());
    op.extend_from_slice(&friend.position.to_le_bytes());
    record::seal(key, op)
}

/// The operand that drops `uid` from the list under `key`.
pub(crate) fn drop(key: &[u8], uid: u64) -> Vec<u8> {
    let mut op = Vec::with_capacity(9 + 4);
    op.push(DROP);
    op.extend_from_slice(&uid.to_le_bytes());
    record::seal(key, op)
}

/// The changes in one operand, in order: (uid, `Some(position)` to add, `None` to drop).
fn changes(key: &[u8], operand: &[u8], into: &mut Vec<(u64, Option<u64>)>) -> Option<()> {
    let mut ops = record::unseal(key, operand).ok()?;
    while let Some((&tag, rest)) = ops.split_first() {
        let uid = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
        match tag {
            ADD => {
                let pos = u64::from_le_bytes(rest.get(8..16)?.try_into().ok()?);
                into.push((uid, Some(pos)));
                ops = &rest[16..];
            }
            DROP => {
                into.push((uid, None));
                ops = &rest[8..];
            }
            _ => return None,
        }
    }
    Some(())
}

/// RocksDB's full merge: the list under `key` with every operand applied, sealed again.
/// `None` (a failed read) for a missing or damaged list or operand.
///
/// The list is not decoded: runs of unchanged (uid, position) pairs are copied as bytes
/// between the changed uids, found by binary search, so a fold costs two checksums and a
/// copy of the list plus a search per change.
pub(crate) fn full_merge(
    key: &[u8],
    existing: Option<&[u8]>,
    operands: &MergeOperands,
) -> Option<Vec<u8>> {
    fold(key, existing, operands)
}

/// The full merge over any operands (the fuzz target folds byte strings of its own).
pub(crate) fn fold<'o>(
    key: &[u8],
    existing: Option<&[u8]>,
    operands: impl IntoIterator<Item = &'o [u8]>,
) -> Option<Vec<u8>> {
    let payload = record::unseal(key, existing?).ok()?;
    let (head, pairs) = payload.split_at_checked(12)?;
    let count = u32::from_le_bytes(head[8..12].try_into().ok()?) as usize;
    if pairs.len() != count.checked_mul(16)? {
        return None;
    }
    let mut ops = Vec::new();
    for operand in operands {
        changes(key, operand, &mut ops)?;
    }
    // The last change per uid wins; then one pass merges them into the sorted list.
    let last: BTreeMap<u64, Option<u64>> = ops.into_iter().collect();
    let uid_at = |i: usize| u64::from_le_bytes(pairs[16 * i..16 * i + 8].try_into().expect("8"));
    let mut out = Vec::with_capacity(payload.len() + 16 * last.len() + 4);
    out.extend_from_slice(head);
    let mut kept = 0usize;
    let mut at = 0usize;
    for (uid, change) in last {
        // The first entry at or after `uid`, from where the previous change left off.
        let (mut lo, mut hi) = (at, count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if uid_at(mid) < uid { lo = mid + 1 } else { hi = mid }
        }
        out.extend_from_slice(&pairs[16 * at..16 * lo]);
        kept += lo - at;
        at = lo;
        if at < count && uid_at(at) == uid {
            at += 1; // Replaced or dropped: the stored pair goes either way.
        }
        if let Some(position) = change {
            out.extend_from_slice(&uid.to_le_bytes());
            out.extend_from_slice(&position.to_le_bytes());
            kept += 1;
        }
    }
    out.extend_from_slice(&pairs[16 * at..]);
    kept += count - at;
    out[8..12].copy_from_slice(&u32::try_from(kept).ok()?.to_le_bytes());
    Some(record::seal(key, out))
}

/// RocksDB's partial merge: operands concatenated into one, sealed again, so a run of
/// changes without the list stays one operand.
pub(crate) fn partial_merge(
    key: &[u8],
    _existing: Option<&[u8]>,
    operands: &MergeOperands,
) -> Option<Vec<u8>> {
    let mut joined = Vec::new();
    for operand in operands {
        joined.extend_from_slice(record::unseal(key, operand).ok()?);
    }
    Some(record::seal(key, joined))
}
