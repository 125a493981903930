//! Reading a meta file of either format: the format is detected from the
//! first bytes and the file goes to that format's reader. This module sits
//! above both formats (`json`, `msgpack`), which depend on the trait and the
//! index types below them, never on each other or on this module.

use crate::error::{ErrorKind, Result};
use crate::json::JsonSerializer;
use crate::meta::{ChunkMeta, ItemMeta};
use crate::meta_index::{ItemSpan, MetaIndex};
use crate::msgpack::MsgpackSerializer;
use crate::serializer::{MetaFormat, Serializer, undetected};

impl MetaFormat {
    /// The serializer for this format (msgpack with default settings).
    pub fn serializer(self) -> &'static dyn Serializer {
        match self {
            MetaFormat::Json => &JsonSerializer,
            MetaFormat::Msgpack => &MsgpackSerializer,
        }
    }
}

/// Parses a meta file of either format, detected from its first bytes.
pub fn read_meta(bytes: &[u8]) -> Result<ChunkMeta> {
    if bytes.is_empty() {
        return Err(ErrorKind::Empty.into());
    }
    match MetaFormat::detect(bytes) {
        Some(format) => format.serializer().read_meta(bytes),
        None => Err(undetected(bytes)),
    }
}

/// Reads the ids and frame counts of a meta file of either format, detected
/// from its first bytes.
///
/// The whole file is checked as far as it can be without decoding the
/// items' `meta_data`: a msgpack meta's header, trailer, fingerprint, index
/// and section lengths (everything but the encoding of each item's
/// `meta_data` and metalayers); a JSON meta's whole syntax, every
/// `frame_info` and the structure of every item, `meta_data` values included.
/// A JSON meta that `read_index` accepts is one that `read_meta` accepts; a
/// msgpack meta it accepts may still hold an item that `read_meta` rejects.
pub fn read_index(bytes: &[u8]) -> Result<MetaIndex> {
    if bytes.is_empty() {
        return Err(ErrorKind::Empty.into());
    }
    match MetaFormat::detect(bytes) {
        Some(MetaFormat::Json) => crate::json::read_index(bytes),
        Some(MetaFormat::Msgpack) => crate::msgpack::read_index(bytes),
        None => Err(undetected(bytes)),
    }
}

/// Parses the meta of one item alone from the bytes of its
/// [`ItemSpan`] (`meta` the bytes of `span.meta`, `frames` those of
/// `span.frames`), as found by [`read_index`] in a meta file of `format`:
/// what reading one item needs, without parsing the chunk's other items.
///
/// The item is checked as [`read_meta`] checks it (its frame checksums,
/// of a msgpack meta, are not read); an error names the id and the byte
/// offset in the meta file.
pub fn read_item(
    format: MetaFormat,
    id: &str,
    span: &ItemSpan,
    meta: &[u8],
    frames: &[u8],
) -> Result<ItemMeta> {
    let result = match format {
        MetaFormat::Json => crate::json::read_item(id, meta),
        MetaFormat::Msgpack => crate::msgpack::read_item(id, meta, frames),
    };
    // Offsets from the span's start, made offsets in the file.
    result.map_err(|e| {
        let offset = span.meta.start.saturating_add(e.offset().unwrap_or(0));
        let reason = match e.into_kind() {
            ErrorKind::Json { reason, .. }
            | ErrorKind::Msgpack { reason, .. }
            | ErrorKind::Item { reason, .. } => reason,
            other => other.to_string(),
        };
        ErrorKind::Item {
            id: id.to_owned(),
            offset,
            reason,
        }
        .into()
    })
}
