//! The values: profiles, friend lists and data chunks, each sealed with a checksum of key
//! and payload so a damaged or misplaced value is detected on every read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::keys;

/// The largest data block a user may have: 4 MiB, as in Bondhu's largest records.
pub const MAX_DATA_BYTES: u64 = 4 << 20;
/// The largest encoded profile.
pub const MAX_PROFILE_BYTES: u64 = 64 << 10;
/// The most friends one `get_friends_list` call returns.
pub const MAX_PAGE: usize = 1000;
/// The most friends one user may have.
pub const MAX_FRIENDS: usize = 1 << 20;

/// The profile schema this build writes. Version 1: name, age, extra fields.
pub const PROFILE_SCHEMA: u8 = 1;

/// A user's profile: typed fields and extensible key/value fields.
///
/// Profiles are stored with their schema version, so later versions can add typed fields and
/// still read every profile already in a store (missing fields take their defaults).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// Display name.
    pub name: String,
    /// Age in years, if given.
    pub age: Option<u32>,
    /// Any other fields.
    pub fields: BTreeMap<String, String>,
}

/// A user as `get_user` returns it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// The user's id.
    pub uid: u64,
    /// The profile.
    pub profile: Profile,
    /// Friends' uids, ascending.
    pub friends: Vec<u64>,
    /// The size of the data block in bytes.
    pub data_bytes: u64,
}

/// Appends a 4-byte checksum of key and payload.
pub(crate) fn seal(key: &[u8], mut payload: Vec<u8>) -> Vec<u8> {
    let sum = checksum(key, &payload);
    payload.extend_from_slice(&sum.to_le_bytes());
    payload
}

fn checksum(key: &[u8], payload: &[u8]) -> u32 {
    // Seeded by the key so that a value copied under another key fails too.
    let seed = xxh3_64(key);
    (xxhash_rust::xxh3::xxh3_64_with_seed(payload, seed) & 0xffff_ffff) as u32
}

/// Checks and strips the checksum.
pub(crate) fn unseal<'v>(key: &[u8], value: &'v [u8]) -> Result<&'v [u8]> {
    let Some(split) = value.len().checked_sub(4) else {
        return Err(corrupt(key, format!("value of {} bytes has no checksum", value.len())));
    };
    let (payload, sum) = value.split_at(split);
    let stored = u32::from_le_bytes(sum.try_into().expect("4 bytes"));
    if checksum(key, payload) != stored {
        return Err(corrupt(key, "checksum mismatch".into()));
    }
    Ok(payload)
}

pub(crate) fn corrupt(key: &[u8], reason: String) -> Error {
    Error::Corrupt { key: keys::describe(key), reason }
}

/// A little reader that names the key when a value is short.
struct Reader<'k, 'a> {
    key: &'k [u8],
    bytes: &'a [u8],
}

impl<'a> Reader<'_, 'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.bytes.len() < n {
            return Err(corrupt(self.key, format!("truncated: wanted {n} more bytes")));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn string(&mut self, len: usize) -> Result<String> {
        let key = self.key;
        String::from_utf8(self.take(len)?.to_vec())
            .map_err(|_| corrupt(key, "a profile string is not UTF-8".into()))
    }
}

impl Profile {
    /// Encodes the profile with its schema version, refusing one over [`MAX_PROFILE_BYTES`].
    pub fn encode(&self) -> Result<Vec<u8>> {
        let too_long = |what: &'static str, got: usize, limit: usize| Error::TooLarge {
            what,
            got: got as u64,
            limit: limit as u64,
        };
        if self.name.len() > u16::MAX as usize {
            return Err(too_long("profile name bytes", self.name.len(), u16::MAX as usize));
        }
        if self.fields.len() > u16::MAX as usize {
            return Err(too_long("profile fields", self.fields.len(), u16::MAX as usize));
        }
        let mut out = Vec::with_capacity(16 + self.name.len());
        out.push(PROFILE_SCHEMA);
        out.extend_from_slice(&(self.name.len() as u16).to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(&self.age.unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(&(self.fields.len() as u16).to_le_bytes());
        for (k, v) in &self.fields {
            if k.len() > u16::MAX as usize {
                return Err(too_long("profile field name bytes", k.len(), u16::MAX as usize));
            }
            out.extend_from_slice(&(k.len() as u16).to_le_bytes());
            out.extend_from_slice(k.as_bytes());
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v.as_bytes());
            if out.len() as u64 > MAX_PROFILE_BYTES {
                break;
            }
        }
        if out.len() as u64 > MAX_PROFILE_BYTES {
            return Err(Error::TooLarge {
                what: "encoded profile bytes",
                got: out.len() as u64,
                limit: MAX_PROFILE_BYTES,
            });
        }
        Ok(out)
    }

    /// Reads a profile made by [`Profile::encode`] (for engines that store it without
    /// kith's own key and checksum); `what` names the record in a corruption error.
    pub fn decode_stored(bytes: &[u8], what: &str) -> Result<Profile> {
        Profile::decode(&[], bytes).map_err(|e| match e {
            Error::Corrupt { reason, .. } => Error::Corrupt { key: what.to_string(), reason },
            e => e,
        })
    }

    fn decode(key: &[u8], bytes: &[u8]) -> Result<Profile> {
        let mut r = Reader { key, bytes };
        let schema = r.u8()?;
        if schema == 0 || schema > PROFILE_SCHEMA {
            return Err(corrupt(
                key,
                format!("profile schema {schema}; this build reads 1..={PROFILE_SCHEMA}"),
            ));
        }
        let name_len = r.u16()? as usize;
        let name = r.string(name_len)?;
        let age = Some(r.u32()?).filter(|&a| a != u32::MAX);
        let n = r.u16()?;
        let mut fields = BTreeMap::new();
        for _ in 0..n {
            let klen = r.u16()? as usize;
            let k = r.string(klen)?;
            let vlen = r.u32()? as usize;
            let v = r.string(vlen)?;
            fields.insert(k, v);
        }
        if !r.bytes.is_empty() {
            return Err(corrupt(key, format!("{} stray bytes after the profile", r.bytes.len())));
        }
        Ok(Profile { name, age, fields })
    }
}

/// The `p` record: uid and encoded profile.
pub(crate) fn encode_header(key: &[u8], uid: u64, profile: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + profile.len() + 4);
    out.extend_from_slice(&uid.to_le_bytes());
    out.extend_from_slice(profile);
    seal(key, out)
}

pub(crate) fn decode_header(key: &[u8], value: &[u8]) -> Result<(u64, Profile)> {
    let payload = unseal(key, value)?;
    let mut r = Reader { key, bytes: payload };
    let uid = r.u64()?;
    Ok((uid, Profile::decode(key, r.bytes)?))
}

/// One entry of a friend list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Friend {
    pub(crate) uid: u64,
    pub(crate) position: u64,
}

/// The `i` record: the user's position, a count, then the friends' (uid, position) pairs
/// ascending by uid.
pub(crate) fn encode_entry(key: &[u8], position: u64, friends: &[Friend]) -> Vec<u8> {
    let mut out = Vec::with_capacity(12 + 16 * friends.len() + 4);
    out.extend_from_slice(&position.to_le_bytes());
    out.extend_from_slice(&(friends.len() as u32).to_le_bytes());
    for f in friends {
        out.extend_from_slice(&f.uid.to_le_bytes());
        out.extend_from_slice(&f.position.to_le_bytes());
    }
    seal(key, out)
}

/// Decodes an `i` record: (position, friends).
pub(crate) fn decode_entry(key: &[u8], value: &[u8]) -> Result<(u64, Vec<Friend>)> {
    let payload = unseal(key, value)?;
    let mut r = Reader { key, bytes: payload };
    let position = r.u64()?;
    let n = r.u32()? as usize;
    if r.bytes.len() != n * 16 {
        return Err(corrupt(
            key,
            format!("friend list says {n} entries in {} bytes", r.bytes.len()),
        ));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(Friend { uid: r.u64()?, position: r.u64()? });
    }
    if out.windows(2).any(|w| w[0].uid >= w[1].uid) {
        return Err(corrupt(key, "friend list is not strictly ascending".into()));
    }
    Ok((position, out))
}

/// Checks an `i` record and answers, without copying the list: (position, friend count,
/// whether `friend` is among them). What a friendship change needs to know.
pub(crate) fn probe_entry(key: &[u8], value: &[u8], friend: u64) -> Result<(u64, usize, bool)> {
    let payload = unseal(key, value)?;
    let mut r = Reader { key, bytes: payload };
    let position = r.u64()?;
    let n = r.u32()? as usize;
    let pairs = r.bytes;
    if pairs.len() != n * 16 {
        return Err(corrupt(key, format!("friend list says {n} entries in {} bytes", pairs.len())));
    }
    let uid_at = |i: usize| u64::from_le_bytes(pairs[16 * i..16 * i + 8].try_into().expect("8"));
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match uid_at(mid).cmp(&friend) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Ok((position, n, true)),
        }
    }
    Ok((position, n, false))
}

/// The number of chunks a data block of `len` bytes takes: at least one, which carries the
/// length. Chunk sizes are checked where they come in (`BuildOptions::check`, the store's
/// metadata on open); a zero is taken as one byte here so that no path can divide by it.
pub(crate) fn chunk_count(len: u64, chunk_bytes: u32) -> u32 {
    len.div_ceil(u64::from(chunk_bytes.max(1))).max(1) as u32
}

/// The `d` records of one data block: chunk 0 starts with the block's length (u32).
pub(crate) fn encode_chunks(
    generation: u32,
    position: u64,
    data: &[u8],
    chunk_bytes: u32,
) -> Vec<([u8; 17], Vec<u8>)> {
    let n = chunk_count(data.len() as u64, chunk_bytes);
    (0..n)
        .map(|c| {
            let key = keys::data(generation, position, c);
            let lo = (c as usize) * chunk_bytes as usize;
            let hi = (lo + chunk_bytes as usize).min(data.len());
            let mut payload = Vec::with_capacity(hi - lo + 8);
            if c == 0 {
                payload.extend_from_slice(&(data.len() as u32).to_le_bytes());
            }
            payload.extend_from_slice(&data[lo.min(data.len())..hi]);
            let value = seal(&key, payload);
            (key, value)
        })
        .collect()
}

/// Decodes chunk 0: (total length, its bytes).
pub(crate) fn decode_first_chunk<'v>(key: &[u8], value: &'v [u8]) -> Result<(u64, &'v [u8])> {
    let payload = unseal(key, value)?;
    let mut r = Reader { key, bytes: payload };
    let len = u64::from(r.u32()?);
    if len > MAX_DATA_BYTES {
        return Err(corrupt(key, format!("data length {len} over the {MAX_DATA_BYTES} limit")));
    }
    Ok((len, r.bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_round_trips_and_rejects_damage() {
        let mut p = Profile { name: "Ada".into(), age: Some(36), fields: BTreeMap::new() };
        p.fields.insert("city".into(), "London".into());
        let key = keys::profile(1, 5);
        let value = encode_header(&key, 42, &p.encode().unwrap());
        assert_eq!(decode_header(&key, &value).unwrap(), (42, p.clone()));
        // Under another key the same bytes fail: values cannot be swapped unnoticed.
        assert!(decode_header(&keys::profile(1, 6), &value).is_err());
        for i in 0..value.len() {
            let mut bad = value.clone();
            bad[i] ^= 0x10;
            let err = decode_header(&key, &bad).unwrap_err().to_string();
            assert!(err.contains("profile/gen 1/position 5"), "{err}");
        }
    }

    #[test]
    fn profile_limits_are_named() {
        let mut p = Profile::default();
        p.fields.insert("bio".into(), "x".repeat(70_000));
        let err = p.encode().unwrap_err().to_string();
        assert!(err.contains("limit of 65536"), "{err}");
    }

    #[test]
    fn a_newer_profile_schema_is_refused() {
        let key = keys::profile(1, 0);
        let mut bytes = Profile::default().encode().unwrap();
        bytes[0] = PROFILE_SCHEMA + 1;
        let err = decode_header(&key, &encode_header(&key, 1, &bytes)).unwrap_err().to_string();
        assert!(err.contains("profile schema 2"), "{err}");
    }

    #[test]
    fn chunks_split_and_carry_the_length() {
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let chunks = encode_chunks(1, 3, &data, 4096);
        assert_eq!(chunks.len(), 3);
        let (len, first) = decode_first_chunk(&chunks[0].0, &chunks[0].1).unwrap();
        assert_eq!((len, first.len()), (10_000, 4096));
        let last = unseal(&chunks[2].0, &chunks[2].1).unwrap();
        assert_eq!(last, &data[8192..]);
        assert_eq!(encode_chunks(1, 3, &[], 4096).len(), 1);
    }

    #[test]
    fn friend_lists_round_trip() {
        let key = keys::index(2, 9);
        let friends = [Friend { uid: 1, position: 7 }, Friend { uid: 5, position: 0 }];
        let value = encode_entry(&key, 3, &friends);
        assert_eq!(decode_entry(&key, &value).unwrap(), (3, friends.to_vec()));
    }
}
