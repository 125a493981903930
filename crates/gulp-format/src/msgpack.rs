//! gulp's msgpack meta format, version 1 (`docs/format.md` §4).
//!
//! In the manner of a Blosc2 contiguous frame, the file is a sequence of
//! msgpack objects: a header (magic, version, flags, counts), an index of
//! item ids, the frame table, the optional per-frame checksums, the
//! per-item `meta_data` and metalayers, and a fixed-size trailer whose CRC-32
//! fingerprint covers every byte before it and is verified on load.
//!
//! ```text
//! header    [ "gulpmeta", version, flags, n_items, n_frames ]
//! index     [ [id, n_frames, meta_len], ... ]              n_items entries
//! frames    bin: n_frames × (loc u64, pad u64, length u64), little-endian
//! checksums bin: n_frames × crc32 u32 little-endian, or nil
//! meta      bin: per item [ meta_data list, metalayers map ]
//! trailer   92 cf <content length: u64 BE> ce <crc32: u32 BE>
//! ```

mod parse;
mod validate;
mod write;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::meta::ChunkMeta;
use crate::meta_index::FRAME_RECORD_LEN;
use crate::serializer::{MetaFormat, Serializer};

// The meta_data tests decode a list the way a loaded file does.
#[cfg(test)]
pub(crate) use self::parse::decode_checked_list;
use self::validate::read_meta;
pub(crate) use self::validate::{read_index, read_item};
use self::write::write_meta;

const MAGIC_STR: &str = "gulpmeta";
/// Flag bit: the checksum section holds one CRC-32 per frame.
const FLAG_CHECKSUMS: u64 = 1;
const KNOWN_FLAGS: u64 = FLAG_CHECKSUMS;
/// msgpack ext type code of an integer outside the i64/u64 ranges (decimal text).
const EXT_BIGINT: i8 = 1;
/// The trailer: fixarray(2), uint64 content length, uint32 fingerprint.
const TRAILER_LEN: usize = 15;
/// Bytes of one frame-table entry.
const FRAME_ENTRY_LEN: usize = FRAME_RECORD_LEN;

/// Versions of the msgpack meta format. Unknown codes are rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum MsgpackVersion {
    /// The first version, described in `docs/format.md` §4.
    V1 = 1,
}

impl MsgpackVersion {
    /// The version this build writes.
    pub const CURRENT: MsgpackVersion = MsgpackVersion::V1;
    /// The newest version this build reads.
    pub const MAX: u8 = 1;
}

impl TryFrom<u64> for MsgpackVersion {
    type Error = Error;

    fn try_from(code: u64) -> Result<MsgpackVersion> {
        match code {
            1 => Ok(MsgpackVersion::V1),
            version => Err(ErrorKind::UnsupportedVersion {
                version,
                max: MsgpackVersion::MAX,
            }
            .into()),
        }
    }
}

/// The header, serialised by rmp-serde as a msgpack array.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    magic: String,
    version: u64,
    flags: u64,
    n_items: u64,
    n_frames: u64,
}

/// gulp's msgpack meta serializer.
#[derive(Debug, Clone, Copy, Default)]
pub struct MsgpackSerializer;

impl Serializer for MsgpackSerializer {
    fn format(&self) -> MetaFormat {
        MetaFormat::Msgpack
    }

    fn write_meta(&self, meta: &ChunkMeta, out: &mut Vec<u8>) -> Result<()> {
        write_meta(meta, out)
    }

    fn read_meta(&self, bytes: &[u8]) -> Result<ChunkMeta> {
        read_meta(bytes)
    }
}
