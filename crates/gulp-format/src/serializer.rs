//! The `Serializer` trait and the meta formats. This module depends on
//! neither format: `json` and `msgpack` implement the trait, and `read`
//! (above them) picks one for a file.

use std::io::{Read, Write};

use crate::error::{ErrorKind, Result};
use crate::meta::ChunkMeta;

/// The magic string of a msgpack meta: the first element of its header
/// array, encoded as a msgpack fixstr (`0xa8` then the 8 ASCII bytes).
pub const MSGPACK_MAGIC: &[u8] = b"\xa8gulpmeta";

/// Turns a [`ChunkMeta`] into the bytes of a meta file and back.
pub trait Serializer: Send + Sync {
    /// The format this serializer writes.
    fn format(&self) -> MetaFormat;

    /// Serialises `meta` into `out`.
    fn write_meta(&self, meta: &ChunkMeta, out: &mut Vec<u8>) -> Result<()>;

    /// Parses a whole meta file.
    fn read_meta(&self, bytes: &[u8]) -> Result<ChunkMeta>;

    /// Serialises `meta` into a new buffer.
    fn to_vec(&self, meta: &ChunkMeta) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_meta(meta, &mut out)?;
        Ok(out)
    }

    /// Serialises `meta` to a stream.
    fn to_writer(&self, meta: &ChunkMeta, writer: &mut dyn Write) -> Result<()> {
        let bytes = self.to_vec(meta)?;
        writer.write_all(&bytes)?;
        writer.flush()?;
        Ok(())
    }

    /// Parses a meta file from a stream.
    fn read_from(&self, reader: &mut dyn Read) -> Result<ChunkMeta> {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes)?;
        self.read_meta(&bytes)
    }
}

/// The two meta file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetaFormat {
    /// GulpIO's JSON, as Python's `json.dump` writes it.
    Json,
    /// gulp's msgpack meta with magic, version and fingerprint.
    Msgpack,
}

impl MetaFormat {
    /// Tells the format from the first bytes of a meta file: a msgpack meta
    /// starts with [`MSGPACK_MAGIC`] after its header's array marker, a JSON
    /// meta with `{` after optional whitespace. `None` for anything else.
    pub fn detect(bytes: &[u8]) -> Option<MetaFormat> {
        if bytes.len() > MSGPACK_MAGIC.len()
            && bytes[0] & 0xf0 == 0x90
            && bytes[1..].starts_with(MSGPACK_MAGIC)
        {
            return Some(MetaFormat::Msgpack);
        }
        let first = bytes
            .iter()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
        (first == Some(&b'{')).then_some(MetaFormat::Json)
    }

    /// The name used on the command line and in reports: `json` or `msgpack`.
    pub fn name(self) -> &'static str {
        match self {
            MetaFormat::Json => "json",
            MetaFormat::Msgpack => "msgpack",
        }
    }
}

impl std::fmt::Display for MetaFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for MetaFormat {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<MetaFormat, String> {
        match s {
            "json" => Ok(MetaFormat::Json),
            "msgpack" => Ok(MetaFormat::Msgpack),
            other => Err(format!(
                "unknown meta format {other:?} (expected json or msgpack)"
            )),
        }
    }
}

/// The error for a non-empty meta file whose format is not detected.
pub(crate) fn undetected(bytes: &[u8]) -> crate::Error {
    if bytes.first().is_some_and(|b| b & 0xf0 == 0x90) && MSGPACK_MAGIC.starts_with(&bytes[1..]) {
        crate::Error::msgpack(bytes.len(), "file ends inside the header magic")
    } else {
        ErrorKind::UnknownFormat {
            prefix: bytes.iter().take(12).copied().collect(),
        }
        .into()
    }
}
