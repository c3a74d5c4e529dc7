//! How many users' data entries one RocksDB block of the store holds, so that a layout can
//! pack exactly the store's blocks (see `docs/store.md`, "Blocks fall on the layout's pages").

use serde::Serialize;

use crate::options::BLOCK_BYTES;
use crate::record::chunk_count;

/// The bytes of an internal key in the data range: 17 B of user key, 8 B of sequence and type.
const DATA_INTERNAL_KEY: u64 = 25;

fn varint_len(mut v: u64) -> u64 {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// How the data range's RocksDB blocks hold fixed-size data blocks: `records_per_block`
/// users' records of `entry_bytes` each (key, value, entry header and restart point).
///
/// With restart interval 1 every entry has the same size, and RocksDB's block-size flush
/// policy closes a block after the same number of entries every time, so the blocks of a
/// freshly written store fall exactly on every `records_per_block`-th position. The kith
/// layout method is given `record_bytes = entry_bytes` and `page_bytes = page_bytes()`, so
/// the pages it optimises are the blocks the store reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PageModel {
    /// Bytes one user's data entry takes in a block.
    pub entry_bytes: u64,
    /// Entries per block (1 when one entry fills a block or more).
    pub records_per_block: u64,
    /// Blocks one user's data takes (more than one for blocks over a chunk).
    pub blocks_per_record: u64,
}

impl PageModel {
    /// The model for data blocks of `data_bytes` in chunks of `chunk_bytes`.
    pub fn for_data(data_bytes: u64, chunk_bytes: u32) -> PageModel {
        let chunks = chunk_count(data_bytes, chunk_bytes);
        if chunks > 1 {
            return PageModel {
                entry_bytes: u64::from(chunks) * BLOCK_BYTES as u64,
                records_per_block: 1,
                blocks_per_record: u64::from(chunks),
            };
        }
        let value = data_bytes + 8; // length and checksum
        let entry = 2 + varint_len(value) + DATA_INTERNAL_KEY + value;
        let block = BLOCK_BYTES as u64;
        let limit = (block * 90).div_ceil(100); // block_size_deviation 10 %
        // RocksDB's FlushBlockBySizePolicy: before adding an entry to a block of k entries,
        // close it if its estimate reached the block size, or if the estimate after the
        // entry would pass it while the block is over the deviation limit.
        let mut k = 1;
        loop {
            let current = 4 + k * (entry + 4);
            // RocksDB's estimate: key, value, restart, 4 bytes for the shared-length varint,
            // and the key- and value-length varints.
            let after = current + DATA_INTERNAL_KEY + value + 4 + 4 + 1 + varint_len(value);
            if current >= block || (after > block && current > limit) {
                break;
            }
            k += 1;
        }
        if k == 1 {
            // One entry fills a block (or more, as a block of its own): a page per record.
            return PageModel { entry_bytes: block, records_per_block: 1, blocks_per_record: 1 };
        }
        PageModel { entry_bytes: entry + 4, records_per_block: k, blocks_per_record: 1 }
    }

    /// The page size to give the layout model: a block's worth of entries.
    pub fn page_bytes(&self) -> u64 {
        if self.records_per_block > 1 {
            self.entry_bytes * self.records_per_block
        } else {
            BLOCK_BYTES as u64
        }
    }
}

/// `config` with the record and page sizes of this store's data blocks of `data_bytes`
/// (see [`PageModel`]), so the `kith` method packs exactly the store's blocks; and with the
/// pages objective turned into the requests objective, which also prices the read requests
/// (runs of adjacent blocks) a cold "list all friends" issues, since the store's reader merges
/// only adjacent blocks and a request costs far more than a block.
pub fn paged_config(
    config: kith_layout::LayoutConfig,
    data_bytes: u64,
    chunk_bytes: u32,
) -> kith_layout::LayoutConfig {
    let model = PageModel::for_data(data_bytes, chunk_bytes);
    let objective = match config.objective {
        kith_layout::Objective::Pages => kith_layout::Objective::Requests,
        other => other,
    };
    kith_layout::LayoutConfig {
        record_bytes: model.entry_bytes,
        page_bytes: model.page_bytes(),
        objective,
        ..config
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::DEFAULT_CHUNK_BYTES;

    /// A record of a block or more takes whole blocks of its own.
    #[test]
    fn big_records_take_whole_blocks() {
        for data in [3800u64, 4096, 9000, 40960] {
            let model = PageModel::for_data(data, DEFAULT_CHUNK_BYTES);
            let blocks = data.div_ceil(u64::from(DEFAULT_CHUNK_BYTES));
            assert_eq!(model.records_per_block, 1, "{data}");
            assert_eq!(model.entry_bytes, blocks * BLOCK_BYTES as u64, "{data}");
            assert_eq!(model.page_bytes(), BLOCK_BYTES as u64, "{data}");
        }
    }
}
