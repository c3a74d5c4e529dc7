//! The key space. See `docs/store.md` for the design; in short, every key is
//!
//! ```text
//! tag (1 byte) | generation (u32, big-endian) | rest
//! ```
//!
//! and RocksDB's bytewise order sorts first by tag, then by generation, then by the rest:
//!
//! | tag | rest                              | value                                   |
//! |-----|-----------------------------------|-----------------------------------------|
//! | `d` | position (u64 BE), chunk (u32 BE) | a slice of the user's data block        |
//! | `i` | uid (u64 BE)                      | position and friend list                |
//! | `p` | position (u64 BE)                 | uid and profile                         |
//!
//! Store-wide metadata lives under `m` followed by a name, without a generation.
//! Because positions are big-endian, the `d` and `p` ranges are each sorted in layout order,
//! so RocksDB writes friends' records next to each other.

/// Data-block chunks.
pub(crate) const DATA: u8 = b'd';
/// The uid -> (position, friend list) index.
pub(crate) const INDEX: u8 = b'i';
/// Store-wide metadata.
pub(crate) const META: u8 = b'm';
/// Uid and profile.
pub(crate) const PROFILE: u8 = b'p';

/// The tags that carry a generation, in key order.
pub(crate) const GENERATION_TAGS: [u8; 3] = [DATA, INDEX, PROFILE];

pub(crate) fn data(generation: u32, position: u64, chunk: u32) -> [u8; 17] {
    let mut k = [0u8; 17];
    k[0] = DATA;
    k[1..5].copy_from_slice(&generation.to_be_bytes());
    k[5..13].copy_from_slice(&position.to_be_bytes());
    k[13..17].copy_from_slice(&chunk.to_be_bytes());
    k
}

fn tagged(tag: u8, generation: u32, rest: u64) -> [u8; 13] {
    let mut k = [0u8; 13];
    k[0] = tag;
    k[1..5].copy_from_slice(&generation.to_be_bytes());
    k[5..13].copy_from_slice(&rest.to_be_bytes());
    k
}

pub(crate) fn index(generation: u32, uid: u64) -> [u8; 13] {
    tagged(INDEX, generation, uid)
}

pub(crate) fn profile(generation: u32, position: u64) -> [u8; 13] {
    tagged(PROFILE, generation, position)
}

pub(crate) fn meta(name: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + name.len());
    k.push(META);
    k.extend_from_slice(name.as_bytes());
    k
}

/// The first key of a tag's range in a generation.
pub(crate) fn range_start(tag: u8, generation: u32) -> [u8; 5] {
    let mut k = [0u8; 5];
    k[0] = tag;
    k[1..5].copy_from_slice(&generation.to_be_bytes());
    k
}

/// The first key after a tag's range in a generation.
pub(crate) fn range_end(tag: u8, generation: u32) -> [u8; 5] {
    match generation.checked_add(1) {
        Some(next) => range_start(tag, next),
        None => [tag + 1, 0, 0, 0, 0],
    }
}

/// Splits a generation-tagged key into (tag, generation, the u64 after it, chunk if any).
pub(crate) fn parse(key: &[u8]) -> Option<(u8, u32, u64, Option<u32>)> {
    let tag = *key.first()?;
    if !GENERATION_TAGS.contains(&tag) {
        return None;
    }
    let want = if tag == DATA { 17 } else { 13 };
    if key.len() != want {
        return None;
    }
    let generation = u32::from_be_bytes(key[1..5].try_into().ok()?);
    let rest = u64::from_be_bytes(key[5..13].try_into().ok()?);
    let chunk = (tag == DATA).then(|| u32::from_be_bytes(key[13..17].try_into().expect("4 bytes")));
    Some((tag, generation, rest, chunk))
}

/// A key for messages: tag letter, generation and numbers, or hex when it does not parse.
pub(crate) fn describe(key: &[u8]) -> String {
    match parse(key) {
        Some((tag, generation, rest, chunk)) => {
            let what = match tag {
                DATA => "data",
                INDEX => "index",
                _ => "profile",
            };
            let unit = if tag == INDEX { "uid" } else { "position" };
            match chunk {
                Some(c) => format!("{what}/gen {generation}/{unit} {rest}/chunk {c}"),
                None => format!("{what}/gen {generation}/{unit} {rest}"),
            }
        }
        None if key.first() == Some(&META) => {
            format!("meta/{}", String::from_utf8_lossy(&key[1..]))
        }
        None => key.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_tag_then_generation_then_position() {
        let mut keys: Vec<Vec<u8>> = vec![
            profile(1, 0).to_vec(),
            data(1, 256, 0).to_vec(),
            data(1, 255, 3).to_vec(),
            data(2, 0, 0).to_vec(),
            index(1, u64::MAX).to_vec(),
            meta("format"),
        ];
        keys.sort();
        let described: Vec<String> = keys.iter().map(|k| describe(k)).collect();
        assert_eq!(
            described,
            [
                "data/gen 1/position 255/chunk 3",
                "data/gen 1/position 256/chunk 0",
                "data/gen 2/position 0/chunk 0",
                "index/gen 1/uid 18446744073709551615",
                "meta/format",
                "profile/gen 1/position 0",
            ]
        );
    }

    #[test]
    fn ranges_bound_exactly_one_generation() {
        let (lo, hi) = (range_start(PROFILE, 7), range_end(PROFILE, 7));
        assert!(lo.as_slice() <= profile(7, 0).as_slice());
        assert!(profile(7, u64::MAX).as_slice() < hi.as_slice());
        assert!(profile(8, 0).as_slice() >= hi.as_slice());
        assert!(
            range_end(DATA, u32::MAX).as_slice() > data(u32::MAX, u64::MAX, u32::MAX).as_slice()
        );
    }
}
