//! Store-wide metadata: the format version, and how the current layout was made.
//!
//! Metadata keys are `m` followed by a name (`format`, `generation`, `chunk_bytes`,
//! `layout`), without a generation; see `keys`.

use kith_graph::WeightModel;
use kith_layout::{LayoutConfig, Method, Objective};
use rocksdb::DB;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::keys;
use crate::options::BLOCK_BYTES;
use crate::record;

/// The on-disk format this build writes and the newest it reads.
///
/// 2: friend-list changes are RocksDB merge operands (`friend_ops.rs`), which a kith of
/// format 1 cannot read (RocksDB stops it with a missing-merge-operator error). A store of
/// format 1 is marked 2 when this kith opens it, so an older kith refuses it by name instead.
pub const FORMAT_VERSION: u32 = 2;

/// How the current layout was made, kept in the store's metadata.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutMeta {
    /// The method's name, or "file" for a layout read from a file.
    pub method: String,
    /// parcom's part count.
    pub communities: usize,
    /// The weight model's name.
    pub model: String,
    /// The record size the layout was computed for.
    pub record_bytes: u64,
    /// The page size it packed them into (0 in stores written before it was kept: 4 KiB).
    #[serde(default)]
    pub page_bytes: u64,
    /// The seed.
    pub seed: u64,
    /// Users placed by this layout; later users were appended after them.
    pub users: u64,
    /// Seconds since the Unix epoch when it was written.
    pub written_unix: u64,
}

impl LayoutMeta {
    /// How `config` makes a layout.
    pub fn of(config: &LayoutConfig) -> LayoutMeta {
        LayoutMeta {
            method: config.method.to_string(),
            communities: config.communities,
            model: config.model.to_string(),
            record_bytes: config.record_bytes,
            page_bytes: config.page_bytes,
            seed: config.seed,
            ..LayoutMeta::default()
        }
    }

    /// The configuration that makes this layout afresh. A layout read from a file (method
    /// `file`) is recomputed by kith's method; metadata that records no method or no model
    /// (empty, as [`LayoutMeta::default`] leaves them) takes kith's method and the default
    /// weight model. kith's method minimises the requests objective, as stores lay out by.
    ///
    /// # Errors
    /// [`Error::UnknownLayout`], naming the stored value, when the method or the weight
    /// model is one this build does not know (metadata from a newer kith, or damaged).
    pub fn config(&self) -> Result<LayoutConfig> {
        let d = LayoutConfig::default();
        let unknown = |what: &'static str, value: &str| Error::UnknownLayout {
            store: None,
            what,
            value: value.to_string(),
        };
        let method = match self.method.as_str() {
            "" | "file" => Method::Kith,
            name => name.parse().map_err(|_| unknown("layout method", name))?,
        };
        let model = match self.model.as_str() {
            "" => WeightModel::default(),
            name => name.parse().map_err(|_| unknown("weight model", name))?,
        };
        Ok(LayoutConfig {
            method,
            communities: if self.communities == 0 { d.communities } else { self.communities },
            model,
            record_bytes: self.record_bytes.max(1),
            page_bytes: if self.page_bytes == 0 { BLOCK_BYTES as u64 } else { self.page_bytes },
            seed: self.seed,
            // A store's cold reads pay per request as well as per block.
            objective: Objective::Requests,
            ..d
        })
    }
}

/// The format version is stored as 4 plain bytes, without the checksum every other value
/// carries, so that any kith can read it whatever later versions change.
pub(crate) fn read_format(db: &DB) -> Result<Option<u32>> {
    let key = keys::meta("format");
    match db.get(&key)? {
        None => Ok(None),
        Some(v) => {
            let bytes: [u8; 4] = v
                .as_slice()
                .try_into()
                .map_err(|_| record::corrupt(&key, format!("{} bytes, not 4", v.len())))?;
            Ok(Some(u32::from_le_bytes(bytes)))
        }
    }
}

pub(crate) fn meta_format() -> (Vec<u8>, Vec<u8>) {
    (keys::meta("format"), FORMAT_VERSION.to_le_bytes().to_vec())
}

pub(crate) fn read_u32(db: &DB, name: &str) -> Result<Option<u32>> {
    let key = keys::meta(name);
    match db.get(&key)? {
        None => Ok(None),
        Some(v) => {
            let payload = record::unseal(&key, &v)?;
            let bytes: [u8; 4] = payload
                .try_into()
                .map_err(|_| record::corrupt(&key, format!("{} bytes, not 4", payload.len())))?;
            Ok(Some(u32::from_le_bytes(bytes)))
        }
    }
}

pub(crate) fn meta_u32(name: &str, value: u32) -> (Vec<u8>, Vec<u8>) {
    let key = keys::meta(name);
    let value = record::seal(&key, value.to_le_bytes().to_vec());
    (key, value)
}

pub(crate) fn meta_layout(meta: &LayoutMeta) -> (Vec<u8>, Vec<u8>) {
    let key = keys::meta("layout");
    let value = record::seal(&key, serde_json::to_vec(meta).expect("plain struct"));
    (key, value)
}

/// The layout metadata of the current generation.
pub(crate) fn read_layout(db: &DB) -> Result<LayoutMeta> {
    let key = keys::meta("layout");
    let value = db
        .get(&key)?
        .ok_or_else(|| Error::Corrupt { key: "meta/layout".into(), reason: "missing".into() })?;
    let payload = record::unseal(&key, &value)?;
    serde_json::from_slice(payload).map_err(|e| record::corrupt(&key, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_methods_and_models_are_errors_that_name_them() {
        let meta =
            LayoutMeta { method: "bfs".into(), model: "overlap".into(), ..LayoutMeta::default() };
        let config = meta.config().unwrap();
        assert_eq!((config.method, config.model), (Method::Bfs, WeightModel::Overlap));
        assert_eq!(LayoutMeta::default().config().unwrap().method, Method::Kith);
        let file = LayoutMeta { method: "file".into(), ..LayoutMeta::default() };
        assert_eq!(file.config().unwrap().method, Method::Kith);
        let newer = LayoutMeta { method: "quantum".into(), ..LayoutMeta::default() };
        let err = newer.config().unwrap_err().to_string();
        assert!(err.contains("layout method \"quantum\""), "{err}");
        let model = LayoutMeta { model: "psychic".into(), ..LayoutMeta::default() };
        let err = model.config().unwrap_err().in_store(std::path::Path::new("/s")).to_string();
        assert!(err.starts_with("/s: ") && err.contains("weight model \"psychic\""), "{err}");
    }
}
