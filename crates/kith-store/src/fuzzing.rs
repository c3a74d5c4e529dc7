//! Entry points for the fuzz targets in `fuzz/` (not part of kith's API): the record
//! decoders, reached with raw values and with payloads sealed under a valid checksum, so
//! both the checksum and the structural checks behind it are exercised.

use crate::keys;
use crate::post::Post;
use crate::record;

/// Decodes `data` as a stored record. The first byte picks the record kind and whether the
/// rest is a raw value or a payload to seal first. Every outcome must be a value or an
/// error; what decodes must survive a round trip through its encoder.
pub fn decode_records(data: &[u8]) {
    let Some((&select, rest)) = data.split_first() else { return };
    let sealed = select & 0x80 != 0;
    match select & 0x03 {
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
        _ => {
            if let Ok(post) = Post::decode(rest, || "a fuzzed post".into()) {
                assert_eq!(post.encode(), rest);
            }
        }
    }
}
