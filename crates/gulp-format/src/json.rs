//! GulpIO's JSON meta: what Python's `json.dump` writes and `json.load` reads
//! (`docs/format.md` §3).
//!
//! Python's flavour of JSON differs from strict JSON in ways that matter here:
//! `NaN`, `Infinity` and `-Infinity` are tokens, integers are unbounded, and
//! a repeated key keeps its first position with its last value (the reader is
//! an `OrderedDict`). The writer reproduces `json.dump`'s defaults: separators
//! `", "` and `": "`, ASCII-only output with `\uXXXX` escapes, no newline.

mod read;
mod skim;
mod write;

use crate::error::Result;
use crate::meta::ChunkMeta;
use crate::serializer::{MetaFormat, Serializer};

pub(crate) use self::write::write_value;

use crate::value::MAX_DEPTH;

/// The ids and frame counts of a JSON meta, the whole file checked.
pub(crate) fn read_index(bytes: &[u8]) -> Result<crate::meta_index::MetaIndex> {
    read::Parser::new(bytes).index()
}

/// Parses one item's `{frame_info, meta_data, ...}` object, which must fill
/// `bytes` (an [`ItemSpan`](crate::ItemSpan) of its meta file); offsets in
/// errors are from the object's start.
pub(crate) fn read_item(id: &str, bytes: &[u8]) -> Result<crate::meta::ItemMeta> {
    let mut parser = read::Parser::new(bytes);
    let item = parser.item(id)?;
    parser.end()?;
    Ok(item)
}

/// The GulpIO-compatible JSON serializer.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonSerializer;

impl Serializer for JsonSerializer {
    fn format(&self) -> MetaFormat {
        MetaFormat::Json
    }

    fn write_meta(&self, meta: &ChunkMeta, out: &mut Vec<u8>) -> Result<()> {
        meta.check_media()?;
        write::write_chunk_meta(meta, out);
        Ok(())
    }

    fn read_meta(&self, bytes: &[u8]) -> Result<ChunkMeta> {
        read::Parser::new(bytes).chunk_meta()
    }
}

impl JsonSerializer {
    /// Parses one JSON value in Python's flavour (for `meta_data` given on a
    /// command line or in a list file).
    pub fn parse_value(bytes: &[u8]) -> Result<crate::Value> {
        read::Parser::new(bytes).whole_value()
    }

    /// Writes one value as `json.dumps` would.
    pub fn value_to_string(value: &crate::Value) -> String {
        let mut out = Vec::new();
        write_value(value, &mut out);
        // The writer emits ASCII only.
        String::from_utf8(out).unwrap_or_default()
    }
}
