//! Entry points for the fuzz targets in `fuzz/` (not part of kith's API): the record
//! decoders, reached with raw values and with payloads sealed under a valid checksum, so
//! both the checksum and the structural checks behind it are exercised.

use std::collections::BTreeMap;

use crate::friend_ops;
use crate::keys;
use crate::post::Post;
use crate::record::{self, Friend};

/// Decodes `data` as a stored record. The first byte picks the record kind and whether the
/// rest is a raw value or a payload to seal first. Every outcome must be a value or an
/// error; what decodes must survive a round trip through its encoder.
pub fn decode_records(data: &[u8]) {
    let Some((&select, rest)) = data.split_first() else { return };
    let sealed = select & 0x80 != 0;
    match select & 0x07 {
        0 => {
            let key = keys::profile(1, 7);
            let value = if sealed { record::seal(&key, rest.to_vec()) } else { rest.to_vec() };
            if let Ok((uid, profile)) = record::decode_header(&key, &value) {
                let again = profile.encode().expect("a decoded profile encodes");
                let value = record::encode_header(&key, uid, &again);
                assert_eq!(record::decode_header(&key, &value).ok(), Some((uid, profile)));
            }
        }
        1 => {
            let key = keys::index(1, 7);
            let value = if sealed { record::seal(&key, rest.to_vec()) } else { rest.to_vec() };
            if let Ok((position, friends)) = record::decode_entry(&key, &value) {
                assert_eq!(record::encode_entry(&key, position, &friends), value);
            }
        }
        2 => {
            let key = keys::data(1, 7, 0);
            let value = if sealed { record::seal(&key, rest.to_vec()) } else { rest.to_vec() };
            if let Ok((len, bytes)) = record::decode_first_chunk(&key, &value) {
                assert!(len <= record::MAX_DATA_BYTES);
                assert!(bytes.len() < value.len());
            }
        }
        3 => {
            if let Ok(post) = Post::decode(rest, || "a fuzzed post".into()) {
                assert_eq!(post.encode(), rest);
            }
        }
        4 => {
            // Probing a list answers what decoding it answers.
            let key = keys::index(1, 7);
            let (friend, payload) = rest.split_at(rest.len().min(8));
            let friend = u64::from_le_bytes(friend.try_into().unwrap_or([0; 8]));
            let value = if sealed { record::seal(&key, payload.to_vec()) } else { rest.to_vec() };
            let probed = record::probe_entry(&key, &value, friend).ok();
            let decoded = record::decode_entry(&key, &value).ok();
            if let Some((position, friends)) = decoded {
                let found = friends.iter().any(|f| f.uid == friend);
                assert_eq!(probed, Some((position, friends.len(), found)));
            }
        }
        _ => fold_friend_changes(rest),
    }
}

/// Folds merge operands (friend adds and drops) onto a friend list, and checks the result
/// against applying the same changes to the decoded list.
fn fold_friend_changes(data: &[u8]) {
    let key = keys::index(1, 7);
    let Some((&n, rest)) = data.split_first() else { return };
    // The list: up to 32 pairs of the input, made strictly ascending by uid.
    let n = (n % 33) as usize;
    let mut friends: Vec<Friend> = rest
        .chunks_exact(16)
        .take(n)
        .map(|c| Friend {
            uid: u64::from_le_bytes(c[..8].try_into().expect("8")) % 64,
            position: u64::from_le_bytes(c[8..].try_into().expect("8")),
        })
        .collect();
    friends.sort_unstable();
    friends.dedup_by_key(|f| f.uid);
    let list = record::encode_entry(&key, 3, &friends);
    // The operands: the rest, 9 bytes each (a tag, a small uid; the position from the uid).
    let tail = rest.get(16 * n.min(rest.len() / 16)..).unwrap_or_default();
    let mut model: BTreeMap<u64, u64> = friends.iter().map(|f| (f.uid, f.position)).collect();
    let mut operands = Vec::new();
    for op in tail.chunks_exact(2) {
        let uid = u64::from(op[1] % 64);
        if op[0] & 1 == 0 {
            operands.push(friend_ops::add(&key, Friend { uid, position: uid * 7 }));
            model.insert(uid, uid * 7);
        } else {
            operands.push(friend_ops::drop(&key, uid));
            model.remove(&uid);
        }
    }
    let folded = friend_ops::fold(&key, Some(&list), operands.iter().map(Vec::as_slice))
        .expect("well-formed operands fold");
    let (position, got) = record::decode_entry(&key, &folded).expect("a fold decodes");
    let want: Vec<Friend> =
        model.into_iter().map(|(uid, position)| Friend { uid, position }).collect();
    assert_eq!((position, got), (3, want));
    // A damaged operand fails the fold rather than being skipped.
    if let Some(first) = operands.first_mut() {
        first[0] ^= 0x40;
        assert!(friend_ops::fold(&key, Some(&list), operands.iter().map(Vec::as_slice)).is_none());
    }
}
