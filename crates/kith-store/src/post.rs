//! Posts as the feed database stores them: the value and its encoding. Ids, cursors and
//! content rules are the feed's (`kith-feed`); the store keeps whatever it is given.

use crate::error::{Error, Result};

/// A post.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Post {
    /// Time-ordered id: larger is newer. Below 2^53, so it is exact as a JSON number and as
    /// a Redis sorted-set score.
    pub id: u64,
    /// The author's uid.
    pub author: u64,
    /// Wall-clock time of the post, milliseconds since the Unix epoch.
    pub ts_ms: u64,
    /// The text.
    pub content: String,
}

impl Post {
    /// The stored form: id, author, time (little-endian u64 each), then the UTF-8 content.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(24 + self.content.len());
        v.extend_from_slice(&self.id.to_le_bytes());
        v.extend_from_slice(&self.author.to_le_bytes());
        v.extend_from_slice(&self.ts_ms.to_le_bytes());
        v.extend_from_slice(self.content.as_bytes());
        v
    }

    /// Reads the stored form; `what` names the record in errors.
    pub fn decode(bytes: &[u8], what: impl FnOnce() -> String) -> Result<Post> {
        let corrupt = |reason: &str| Error::CorruptPost { what: what(), reason: reason.into() };
        if bytes.len() < 24 {
            return Err(corrupt("shorter than its 24-byte header"));
        }
        let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        let content = std::str::from_utf8(&bytes[24..])
            .map_err(|_| corrupt("content is not UTF-8"))?
            .to_string();
        Ok(Post { id: word(0), author: word(8), ts_ms: word(16), content })
    }

    /// Bytes a cache entry of this post takes, roughly.
    pub fn weight(&self) -> u32 {
        (64 + self.content.len()).min(u32::MAX as usize) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posts_round_trip_and_damage_is_named() {
        let p = Post { id: 7, author: 3, ts_ms: 99, content: "héllo".into() };
        assert_eq!(Post::decode(&p.encode(), String::new).unwrap(), p);
        let err = Post::decode(&[1, 2, 3], || "post 1".into()).unwrap_err().to_string();
        assert_eq!(err, "corrupt post 1: shorter than its 24-byte header");
        let mut bad = p.encode();
        bad[24] = 0xff;
        assert!(Post::decode(&bad, || "post 7".into()).is_err());
    }
}
