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

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use rmp::Marker;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::index::{FRAME_RECORD_LEN, IndexBuilder, MetaIndex};
use crate::layout::FrameInfo;
use crate::meta::{ChunkMeta, ItemMeta};
use crate::meta_data::MetaData;
use crate::serializer::{MetaFormat, Serializer};
use crate::value::{BigInt, Map, Value};

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
use crate::value::MAX_DEPTH;
/// The most elements reserved ahead for a list or map. A declared length is
/// at most the bytes left (each element takes one), but an element takes
/// tens of bytes in memory and every level of nesting reserves its own: a
/// file of `n` bytes nested 1024 deep could make the reader reserve about
/// `1024 × n × size_of::<Value>()` bytes before failing. Beyond this, lists
/// and maps grow as their elements are actually read.
const MAX_PREALLOC: usize = 256;

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

fn write_meta(meta: &ChunkMeta, out: &mut Vec<u8>) -> Result<()> {
    let start = out.len();
    let with_checksums = meta
        .iter()
        .any(|(_, item)| !item.frame_checksums.is_empty());
    if with_checksums
        && let Some((id, _)) = meta
            .iter()
            .find(|(_, item)| item.frame_checksums.len() != item.frame_info.len())
    {
        return Err(ErrorKind::Unrepresentable(format!(
            "item {id:?} lacks frame checksums while others have them"
        ))
        .into());
    }
    let header = Header {
        magic: MAGIC_STR.to_owned(),
        version: MsgpackVersion::CURRENT as u64,
        flags: if with_checksums { FLAG_CHECKSUMS } else { 0 },
        n_items: meta.len() as u64,
        n_frames: meta.n_frames() as u64,
    };
    rmp_serde::encode::write(out, &header)
        .map_err(|e| ErrorKind::Unrepresentable(e.to_string()))?;

    let mut item_blobs = Vec::new();
    let mut item_lens = Vec::with_capacity(meta.len());
    for (_, item) in meta.iter() {
        let before = item_blobs.len();
        // Writes into a Vec cannot fail.
        let _ = rmp::encode::write_array_len(&mut item_blobs, 2);
        // A list read from msgpack and not changed since is copied: its
        // bytes are those write_array would produce (MetaData).
        match item.meta_data.msgpack_bytes() {
            Some(bytes) => item_blobs.extend_from_slice(bytes),
            None => write_array(&item.meta_data, &mut item_blobs),
        }
        write_map(&item.metalayers, &mut item_blobs);
        item_lens.push((item_blobs.len() - before) as u64);
    }

    let _ = rmp::encode::write_array_len(out, len_u32(meta.len())?);
    for ((id, item), meta_len) in meta.iter().zip(&item_lens) {
        let _ = rmp::encode::write_array_len(out, 3);
        let _ = rmp::encode::write_str(out, id);
        let _ = rmp::encode::write_uint(out, item.frame_info.len() as u64);
        let _ = rmp::encode::write_uint(out, *meta_len);
    }

    let n_frames = meta.n_frames();
    let _ = rmp::encode::write_bin_len(out, len_u32(n_frames * FRAME_ENTRY_LEN)?);
    for (_, item) in meta.iter() {
        for fi in &item.frame_info {
            out.extend_from_slice(&fi.loc.to_le_bytes());
            out.extend_from_slice(&fi.pad.to_le_bytes());
            out.extend_from_slice(&fi.length.to_le_bytes());
        }
    }
    if with_checksums {
        let _ = rmp::encode::write_bin_len(out, len_u32(n_frames * 4)?);
        for (_, item) in meta.iter() {
            for crc in &item.frame_checksums {
                out.extend_from_slice(&crc.to_le_bytes());
            }
        }
    } else {
        let _ = rmp::encode::write_nil(out);
    }
    let _ = rmp::encode::write_bin_len(out, len_u32(item_blobs.len())?);
    out.extend_from_slice(&item_blobs);

    let content = &out[start..];
    let fingerprint = crc32fast::hash(content);
    let content_len = content.len() as u64;
    let _ = rmp::encode::write_array_len(out, 2);
    out.push(0xcf);
    out.extend_from_slice(&content_len.to_be_bytes());
    out.push(0xce);
    out.extend_from_slice(&fingerprint.to_be_bytes());
    Ok(())
}

fn len_u32(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| {
        ErrorKind::Unrepresentable(format!("{n} entries exceed msgpack's 32-bit lengths")).into()
    })
}

fn write_array(items: &[Value], out: &mut Vec<u8>) {
    // Lengths come from in-memory data; a 2^32-element list cannot be built here.
    let _ = rmp::encode::write_array_len(out, u32::try_from(items.len()).unwrap_or(u32::MAX));
    for item in items {
        write_value(item, out);
    }
}

fn write_map(map: &Map, out: &mut Vec<u8>) {
    let _ = rmp::encode::write_map_len(out, u32::try_from(map.len()).unwrap_or(u32::MAX));
    for (key, value) in map {
        let _ = rmp::encode::write_str(out, key);
        write_value(value, out);
    }
}

fn write_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => {
            let _ = rmp::encode::write_nil(out);
        }
        Value::Bool(b) => {
            let _ = rmp::encode::write_bool(out, *b);
        }
        Value::Int(i) => {
            let _ = rmp::encode::write_sint(out, *i);
        }
        Value::BigInt(big) => match big.to_u64() {
            Some(u) => {
                let _ = rmp::encode::write_u64(out, u);
            }
            None => {
                let text = big.as_str().as_bytes();
                let _ = rmp::encode::write_ext_meta(
                    out,
                    u32::try_from(text.len()).unwrap_or(u32::MAX),
                    EXT_BIGINT,
                );
                out.extend_from_slice(text);
            }
        },
        Value::Float(f) => {
            let _ = rmp::encode::write_f64(out, *f);
        }
        Value::String(s) => {
            let _ = rmp::encode::write_str(out, s);
        }
        Value::Array(items) => write_array(items, out),
        Value::Object(map) => write_map(map, out),
    }
}

/// One index entry, `[id, n_frames, meta_len]`, and its byte offset.
struct Entry<'a> {
    id: &'a str,
    n_frames: u64,
    meta_len: u64,
    at: usize,
}

/// A msgpack meta whose header, trailer, fingerprint, index and section
/// lengths have been checked, with each item's meta still encoded.
struct Layout<'a> {
    entries: Vec<Entry<'a>>,
    frames: &'a [u8],
    /// Where the frame table's records start in the file.
    frames_at: usize,
    checksums: Option<&'a [u8]>,
    blob: &'a [u8],
    blob_at: usize,
}

fn read_meta(bytes: &[u8]) -> Result<ChunkMeta> {
    let layout = layout(bytes)?;
    read_items(&layout)
}

/// The ids and frame counts of a msgpack meta: everything [`read_meta`]
/// checks except the encoding of each item's `meta_data` and metalayers.
pub(crate) fn read_index(bytes: &[u8]) -> Result<MetaIndex> {
    let layout = layout(bytes)?;
    let mut index = IndexBuilder::new(MetaFormat::Msgpack, layout.entries.len());
    let (mut frames_at, mut meta_at) = (layout.frames_at as u64, layout.blob_at as u64);
    for e in &layout.entries {
        let start = index.arena().len();
        index.arena().push_str(e.id);
        // The lengths add up to the sections' (checked in layout).
        let meta_end = meta_at.saturating_add(e.meta_len);
        if index
            .finish_id(start, e.n_frames, [meta_at, meta_end])
            .is_some()
        {
            return Err(Error::item(e.id, e.at, "id appears twice in the index"));
        }
        index.push_frames_at(frames_at);
        frames_at = frames_at.saturating_add(e.n_frames.saturating_mul(FRAME_ENTRY_LEN as u64));
        meta_at = meta_end;
    }
    Ok(index.finish())
}

/// Checks everything but the items' encoded meta (`docs/format.md` §4.8,
/// steps 1–6, and that the `meta_len`s exactly fill the meta section).
fn layout(bytes: &[u8]) -> Result<Layout<'_>> {
    // Magic and version first, read by hand so that a file of a newer version
    // says so even if its header has other fields.
    let mut c = Cursor {
        bytes,
        pos: 0,
        depth: 0,
    };
    let fields = c.array_len()?;
    if c.str_ref()? != MAGIC_STR {
        return Err(Error::msgpack(1, "bad magic"));
    }
    let version = MsgpackVersion::try_from(c.uint()?)?;
    if fields != 5 {
        return Err(Error::msgpack(
            0,
            format!("a version 1 header has 5 fields, this one has {fields}"),
        ));
    }
    let header = Header {
        magic: MAGIC_STR.to_owned(),
        version: version as u64,
        flags: c.uint()?,
        n_items: c.uint()?,
        n_frames: c.uint()?,
    };
    let header_len = c.pos;

    // Then the trailer and the fingerprint over everything before it.
    let content_len = bytes
        .len()
        .checked_sub(TRAILER_LEN)
        .filter(|&n| n >= header_len)
        .ok_or_else(|| Error::msgpack(bytes.len(), "file ends before the trailer (truncated?)"))?;
    let trailer = &bytes[content_len..];
    let stored_len = u64::from_be_bytes(trailer[2..10].try_into().unwrap_or_default());
    if trailer[0] != 0x92
        || trailer[1] != 0xcf
        || trailer[10] != 0xce
        || stored_len != content_len as u64
    {
        return Err(Error::msgpack(
            content_len,
            format!(
                "trailer missing or damaged (truncated or extended file?): expected the content to be {stored_len} bytes, it is {content_len}"
            ),
        ));
    }
    let stored = u32::from_be_bytes(trailer[11..15].try_into().unwrap_or_default());
    let computed = crc32fast::hash(&bytes[..content_len]);
    if stored != computed {
        return Err(ErrorKind::Fingerprint {
            stored,
            computed,
            len: content_len as u64,
        }
        .into());
    }
    match version {
        MsgpackVersion::V1 => layout_v1(&bytes[..content_len], header_len, &header),
    }
}

fn layout_v1<'a>(content: &'a [u8], header_len: usize, header: &Header) -> Result<Layout<'a>> {
    if header.flags & !KNOWN_FLAGS != 0 {
        return Err(Error::msgpack(
            0,
            format!("unknown flags {:#x} in the header", header.flags),
        ));
    }
    let mut c = Cursor {
        bytes: content,
        pos: header_len,
        depth: 0,
    };

    let (entries, total_frames) = index_entries(&mut c, header)?;

    // Frame table, checksums and meta blob.
    let frames_at = c.pos;
    let frames = c.bin()?;
    let frames_data_at = c.pos - frames.len();
    if frames.len() as u64 != total_frames.saturating_mul(FRAME_ENTRY_LEN as u64) {
        return Err(Error::msgpack(
            frames_at,
            format!(
                "frame table is {} bytes, {total_frames} frames need 24 each",
                frames.len()
            ),
        ));
    }
    let checksums_at = c.pos;
    let checksums = if header.flags & FLAG_CHECKSUMS != 0 {
        let bin = c.bin()?;
        if bin.len() as u64 != total_frames.saturating_mul(4) {
            return Err(Error::msgpack(
                checksums_at,
                "checksum table length does not match the frame count",
            ));
        }
        Some(bin)
    } else {
        c.nil()?;
        None
    };
    let blob = c.bin()?;
    let blob_at = c.pos - blob.len();
    if c.pos != content.len() {
        return Err(c.err("extra bytes between the meta section and the trailer"));
    }

    // The items' meta must fill the meta section exactly.
    let mut blob_pos = 0usize;
    for e in &entries {
        blob_pos = item_end(e, blob_pos, blob.len())?;
    }
    if blob_pos != blob.len() {
        return Err(Error::msgpack(
            blob_at + blob_pos,
            "meta section has bytes no item claims",
        ));
    }
    Ok(Layout {
        entries,
        frames,
        frames_at: frames_data_at,
        checksums,
        blob,
        blob_at,
    })
}

/// The index of a version-1 file at `c`: its entries, checked against the
/// header's item count, and their total frame count, checked against the
/// header's.
fn index_entries<'a>(c: &mut Cursor<'a>, header: &Header) -> Result<(Vec<Entry<'a>>, u64)> {
    let n_items = c.array_len()?;
    if n_items as u64 != header.n_items {
        return Err(c.err(format!(
            "index has {n_items} items, header says {}",
            header.n_items
        )));
    }
    // array_len checked n_items against the bytes left: one entry takes at
    // least 4 of them.
    let mut entries = Vec::with_capacity(n_items);
    let mut total_frames: u64 = 0;
    for _ in 0..n_items {
        let at = c.pos;
        let (id, n_frames, meta_len) = match c.short_index_entry() {
            Some(entry) => entry,
            None => {
                if c.array_len()? != 3 {
                    return Err(Error::msgpack(
                        at,
                        "an index entry is not [id, n_frames, meta_len]",
                    ));
                }
                (c.str_ref()?, c.uint()?, c.uint()?)
            }
        };
        total_frames = total_frames
            .checked_add(n_frames)
            .ok_or_else(|| Error::item(id, at, "frame count overflows"))?;
        entries.push(Entry {
            id,
            n_frames,
            meta_len,
            at,
        });
    }
    if total_frames != header.n_frames {
        return Err(c.err(format!(
            "index counts {total_frames} frames, header says {}",
            header.n_frames
        )));
    }
    Ok((entries, total_frames))
}

/// Where the meta of entry `e`, starting at `start` in a meta section of
/// `blob_len` bytes, ends.
fn item_end(e: &Entry<'_>, start: usize, blob_len: usize) -> Result<usize> {
    usize::try_from(e.meta_len)
        .ok()
        .and_then(|len| start.checked_add(len))
        .filter(|&end| end <= blob_len)
        .ok_or_else(|| Error::item(e.id, e.at, "meta_len runs past the meta section"))
}

/// Decodes every item of a checked layout into the meta model.
fn read_items(layout: &Layout<'_>) -> Result<ChunkMeta> {
    let Layout {
        entries,
        frames,
        frames_at: _,
        checksums,
        blob,
        blob_at,
    } = layout;
    let mut meta = ChunkMeta::with_capacity(entries.len());
    let (mut frame_pos, mut blob_pos) = (0usize, 0usize);
    let mut skip = Skip::new();
    // The meta section, shared by the items' encoded meta_data lists.
    let mut section: Option<Arc<[u8]>> = None;
    for e in entries {
        // The frame counts add up to the table's length (checked in layout).
        let n = usize::try_from(e.n_frames)
            .map_err(|_| Error::item(e.id, e.at, "frame count too large"))?;
        let frame_info = frames[frame_pos * FRAME_ENTRY_LEN..(frame_pos + n) * FRAME_ENTRY_LEN]
            .chunks_exact(FRAME_ENTRY_LEN)
            .map(|e| FrameInfo {
                loc: le_u64(&e[0..8]),
                pad: le_u64(&e[8..16]),
                length: le_u64(&e[16..24]),
            })
            .collect();
        let frame_checksums = checksums
            .map(|crcs| {
                crcs[frame_pos * 4..(frame_pos + n) * 4]
                    .chunks_exact(4)
                    .map(le_u32)
                    .collect()
            })
            .unwrap_or_default();
        frame_pos += n;

        let end = item_end(e, blob_pos, blob.len())?;
        let mut item_c = Cursor {
            bytes: &blob[..end],
            pos: blob_pos,
            depth: 0,
        };
        let (list, metalayers) = item_c.item(&mut skip).map_err(|err| {
            let offset = *blob_at as u64 + err.offset().unwrap_or(0);
            Error::from(ErrorKind::Item {
                id: e.id.to_owned(),
                offset,
                reason: format!("bad meta_data: {err}"),
            })
        })?;
        if item_c.pos != end {
            return Err(Error::item(
                e.id,
                blob_at + item_c.pos,
                "meta_len does not match the encoded meta_data",
            ));
        }
        blob_pos = end;
        // A list in the writer's form stays encoded until first used; any
        // other (from another writer) is decoded now, so that writing it
        // back gives the canonical bytes.
        let meta_data = if skip.canonical {
            let section = section.get_or_insert_with(|| Arc::from(*blob));
            MetaData::from_checked_msgpack(Arc::clone(section), list, decode_checked_list)
        } else {
            MetaData::from(decode_checked_list(blob.get(list).unwrap_or_default()))
        };
        let item = ItemMeta {
            frame_info,
            meta_data,
            frame_checksums,
            metalayers,
        };
        if !meta.insert_new(e.id, item) {
            return Err(Error::item(e.id, e.at, "id appears twice in the index"));
        }
    }
    Ok(meta)
}

/// Parses one item alone: `meta` its entry of the meta section (which it
/// must fill), `frames` its records of the frame table (an
/// [`ItemSpan`](crate::ItemSpan) of its meta file). The item's frame
/// checksums are not read. Offsets in errors are from the entry's start.
pub(crate) fn read_item(id: &str, meta: &[u8], frames: &[u8]) -> Result<ItemMeta> {
    if !frames.len().is_multiple_of(FRAME_ENTRY_LEN) {
        return Err(Error::item(
            id,
            0,
            format!("{} bytes of frame records are not 24 each", frames.len()),
        ));
    }
    let frame_info = frames
        .chunks_exact(FRAME_ENTRY_LEN)
        .map(|e| FrameInfo {
            loc: le_u64(&e[0..8]),
            pad: le_u64(&e[8..16]),
            length: le_u64(&e[16..24]),
        })
        .collect();
    let mut skip = Skip::new();
    let mut c = Cursor {
        bytes: meta,
        pos: 0,
        depth: 0,
    };
    let (list, metalayers) = c.item(&mut skip).map_err(|err| {
        Error::item(
            id,
            err.offset()
                .map_or(0, |o| usize::try_from(o).unwrap_or(usize::MAX)),
            format!("bad meta_data: {err}"),
        )
    })?;
    if c.pos != meta.len() {
        return Err(Error::item(
            id,
            c.pos,
            "meta_len does not match the encoded meta_data",
        ));
    }
    let meta_data = if skip.canonical {
        MetaData::from_checked_msgpack(Arc::from(meta), list, decode_checked_list)
    } else {
        MetaData::from(decode_checked_list(meta.get(list).unwrap_or_default()))
    };
    Ok(ItemMeta {
        frame_info,
        meta_data,
        frame_checksums: Vec::new(),
        metalayers,
    })
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().unwrap_or_default())
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().unwrap_or_default())
}

/// Decodes a `meta_data` list that [`read_meta`] has checked (`Cursor::item`
/// with [`Skip`]), which cannot fail: the same parser accepted it.
pub(crate) fn decode_checked_list(bytes: &[u8]) -> Vec<Value> {
    let mut c = Cursor {
        bytes,
        pos: 0,
        depth: 0,
    };
    let decoded = c.value(&mut Build);
    debug_assert!(
        matches!(decoded, Ok(Value::Array(_))) && c.pos == bytes.len(),
        "a checked meta_data list does not decode: {decoded:?}"
    );
    match decoded {
        Ok(Value::Array(list)) => list,
        // Unreachable for checked bytes; an empty list is the least surprise.
        _ => Vec::new(),
    }
}

/// Whether `n`, the length of a string, list or map, is written with marker
/// `m` by the writer (rmp picks the smallest form).
fn canonical_len(m: Marker, n: usize) -> bool {
    match m {
        Marker::Str8 => n >= 32,
        Marker::Array16 | Marker::Map16 => n >= 16,
        Marker::Str16 => n > 0xff,
        Marker::Array32 | Marker::Map32 | Marker::Str32 => n > 0xffff,
        _ => true,
    }
}

/// What [`Cursor::value`] makes of the values it reads: [`Build`] makes
/// [`Value`]s, [`Skip`] checks them and makes nothing. One parser serves
/// both, so the check at load and the decoding on first access accept
/// exactly the same bytes.
trait Sink<'a> {
    /// Whether to report encodings the writer would not produce
    /// ([`Sink::non_canonical`]).
    const CANONICAL: bool;
    /// What a value becomes.
    type Out;
    /// A list being read.
    type List;
    /// A map being read.
    type Map;
    /// A value other than a list or map (`make` builds it).
    fn leaf(&mut self, make: impl FnOnce() -> Value) -> Self::Out;
    /// Starts a list that declares `n` elements.
    fn list(&mut self, n: usize) -> Self::List;
    /// Adds an element to a list.
    fn push(&mut self, list: &mut Self::List, value: Self::Out);
    /// Ends a list.
    fn end_list(&mut self, list: Self::List) -> Self::Out;
    /// Starts a map that declares `n` entries.
    fn map(&mut self, n: usize) -> Self::Map;
    /// Adds an entry to a map; `false` if the key is already there.
    fn insert(&mut self, map: &mut Self::Map, key: &'a str, value: Self::Out) -> bool;
    /// Ends a map.
    fn end_map(&mut self, map: Self::Map) -> Self::Out;
    /// The value just read is not in the writer's form.
    fn non_canonical(&mut self);
}

/// Builds the values.
struct Build;

impl<'a> Sink<'a> for Build {
    const CANONICAL: bool = false;
    type Out = Value;
    type List = Vec<Value>;
    type Map = Map;

    #[inline]
    fn leaf(&mut self, make: impl FnOnce() -> Value) -> Value {
        make()
    }

    #[inline]
    fn list(&mut self, n: usize) -> Vec<Value> {
        Vec::with_capacity(n.min(MAX_PREALLOC))
    }

    #[inline]
    fn push(&mut self, list: &mut Vec<Value>, value: Value) {
        list.push(value);
    }

    #[inline]
    fn end_list(&mut self, list: Vec<Value>) -> Value {
        Value::Array(list)
    }

    #[inline]
    fn map(&mut self, n: usize) -> Map {
        Map::with_capacity_and_hasher(n.min(MAX_PREALLOC), Default::default())
    }

    #[inline]
    fn insert(&mut self, map: &mut Map, key: &'a str, value: Value) -> bool {
        map.insert(key.to_owned(), value).is_none()
    }

    #[inline]
    fn end_map(&mut self, map: Map) -> Value {
        Value::Object(map)
    }

    #[inline]
    fn non_canonical(&mut self) {}
}

/// Maps of up to this many keys are checked for repeated keys by comparing
/// each key with the earlier ones; larger maps use a hash set.
const SMALL_MAP: usize = 16;

/// Checks the values and builds nothing. It allocates only its key buffer,
/// reused from item to item, and a hash set for a map of more than
/// [`SMALL_MAP`] keys.
struct Skip<'a> {
    /// The keys of the maps being read, innermost last.
    keys: Vec<&'a str>,
    /// Whether everything since [`Skip::reset`] is in the writer's form.
    canonical: bool,
}

/// A map being checked by [`Skip`].
struct SkipMap<'a> {
    /// Where its keys start in [`Skip::keys`].
    base: usize,
    /// Its keys, once it has more than [`SMALL_MAP`].
    set: Option<HashSet<&'a str, foldhash::fast::RandomState>>,
}

impl Skip<'_> {
    fn new() -> Self {
        Skip {
            keys: Vec::new(),
            canonical: true,
        }
    }

    /// Starts a new value.
    fn reset(&mut self) {
        self.keys.clear();
        self.canonical = true;
    }
}

impl<'a> Sink<'a> for Skip<'a> {
    const CANONICAL: bool = true;
    type Out = ();
    type List = ();
    type Map = SkipMap<'a>;

    #[inline]
    fn leaf(&mut self, _make: impl FnOnce() -> Value) {}

    #[inline]
    fn list(&mut self, _n: usize) {}

    #[inline]
    fn push(&mut self, _list: &mut (), _value: ()) {}

    #[inline]
    fn end_list(&mut self, _list: ()) {}

    #[inline]
    fn map(&mut self, _n: usize) -> SkipMap<'a> {
        SkipMap {
            base: self.keys.len(),
            set: None,
        }
    }

    fn insert(&mut self, map: &mut SkipMap<'a>, key: &'a str, _value: ()) -> bool {
        if let Some(set) = &mut map.set {
            return set.insert(key);
        }
        // Inner maps have truncated the buffer back to their own base, at
        // or above this map's.
        let earlier = self.keys.get(map.base..).unwrap_or_default();
        if earlier.contains(&key) {
            return false;
        }
        if earlier.len() < SMALL_MAP {
            self.keys.push(key);
        } else {
            let mut set = HashSet::with_capacity_and_hasher(2 * SMALL_MAP, Default::default());
            set.extend(self.keys.drain(map.base..));
            set.insert(key);
            map.set = Some(set);
        }
        true
    }

    #[inline]
    fn end_map(&mut self, map: SkipMap<'a>) {
        self.keys.truncate(map.base);
    }

    #[inline]
    fn non_canonical(&mut self) {
        self.canonical = false;
    }
}

/// A bounds-checked reader of msgpack objects that knows its byte offset.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

impl<'a> Cursor<'a> {
    fn err(&self, reason: impl Into<String>) -> Error {
        let mut reason = reason.into();
        if self.pos >= self.bytes.len() {
            reason.push_str(" (at the end of the section: truncated?)");
        }
        Error::msgpack(self.pos, reason)
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| {
                self.err(format!(
                    "{n} bytes needed, {} left",
                    self.bytes.len().saturating_sub(self.pos)
                ))
            })?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn be(&mut self, n: usize) -> Result<u64> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn marker(&mut self) -> Result<Marker> {
        Ok(Marker::from_u8(self.take(1)?[0]))
    }

    fn len_of(&mut self, marker: Marker) -> Result<Option<usize>> {
        let n = match marker {
            Marker::FixArray(n) | Marker::FixMap(n) | Marker::FixStr(n) => u64::from(n),
            Marker::Array16 | Marker::Map16 | Marker::Str16 | Marker::Bin16 => self.be(2)?,
            Marker::Array32 | Marker::Map32 | Marker::Str32 | Marker::Bin32 => self.be(4)?,
            Marker::Str8 | Marker::Bin8 => self.be(1)?,
            _ => return Ok(None),
        };
        // Every element takes at least one byte: a count past the end is a lie
        // and must not size an allocation.
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        if n > self.bytes.len().saturating_sub(self.pos) {
            return Err(self.err(format!("declared length {n} runs past the end")));
        }
        Ok(Some(n))
    }

    fn array_len(&mut self) -> Result<usize> {
        let at = self.pos;
        let m = self.marker()?;
        match m {
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => {
                Ok(self.len_of(m)?.unwrap_or(0))
            }
            _ => Err(Error::msgpack(
                at,
                format!("expected an array, found {m:?}"),
            )),
        }
    }

    fn str_ref(&mut self) -> Result<&'a str> {
        let at = self.pos;
        let m = self.marker()?;
        self.str_body(m, at)
    }

    /// The rest of a string whose marker `m` (at `at`) was just read.
    fn str_body(&mut self, m: Marker, at: usize) -> Result<&'a str> {
        match m {
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                let n = self.len_of(m)?.unwrap_or(0);
                let start = self.pos;
                let raw = self.take(n)?;
                std::str::from_utf8(raw).map_err(|e| {
                    Error::msgpack(start + e.valid_up_to(), "invalid UTF-8 in a string")
                })
            }
            _ => Err(Error::msgpack(
                at,
                format!("expected a string, found {m:?}"),
            )),
        }
    }

    fn uint(&mut self) -> Result<u64> {
        let at = self.pos;
        match self.marker()? {
            Marker::FixPos(n) => Ok(u64::from(n)),
            Marker::U8 => self.be(1),
            Marker::U16 => self.be(2),
            Marker::U32 => self.be(4),
            Marker::U64 => self.be(8),
            m => Err(Error::msgpack(
                at,
                format!("expected an unsigned integer, found {m:?}"),
            )),
        }
    }

    fn bin(&mut self) -> Result<&'a [u8]> {
        let at = self.pos;
        let m = self.marker()?;
        match m {
            Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => {
                let n = self.len_of(m)?.unwrap_or(0);
                self.take(n)
            }
            _ => Err(Error::msgpack(at, format!("expected bin, found {m:?}"))),
        }
    }

    fn nil(&mut self) -> Result<()> {
        let at = self.pos;
        match self.marker()? {
            Marker::Null => Ok(()),
            m => Err(Error::msgpack(
                at,
                format!("expected nil (no checksums), found {m:?}"),
            )),
        }
    }

    /// An item, `[meta_data, metalayers]`: the `meta_data` list checked by
    /// `skip` (which also tells whether its encoding is the writer's own) and
    /// returned as its byte range, the metalayers decoded.
    fn item(&mut self, skip: &mut Skip<'a>) -> Result<(Range<usize>, Map)> {
        let at = self.pos;
        if self.array_len()? != 2 {
            return Err(Error::msgpack(at, "an item is not [meta_data, metalayers]"));
        }
        let list_at = self.pos;
        skip.reset();
        self.value(skip)?;
        let is_list = self.bytes.get(list_at).is_some_and(|&b| {
            matches!(
                Marker::from_u8(b),
                Marker::FixArray(_) | Marker::Array16 | Marker::Array32
            )
        });
        if !is_list {
            return Err(Error::msgpack(list_at, "meta_data is not a list"));
        }
        let list = list_at..self.pos;
        let map_at = self.pos;
        let Value::Object(metalayers) = self.value(&mut Build)? else {
            return Err(Error::msgpack(map_at, "metalayers is not a map"));
        };
        Ok((list, metalayers))
    }

    /// One value, handed to `sink`: [`Build`] makes it, [`Skip`] only checks
    /// it. Both run this same code, so a value that passes the check decodes.
    fn value<S: Sink<'a>>(&mut self, sink: &mut S) -> Result<S::Out> {
        let at = self.pos;
        let m = self.marker()?;
        // Only lists and maps recurse. The other kinds live in `scalar` so that
        // each nesting level costs small stack frames: unoptimised builds give
        // every temporary of a function its own stack slot, and with all of
        // them in this one function, MAX_DEPTH levels overflowed a thread's
        // default 2 MiB stack (tests/data/fuzz-regressions/).
        match m {
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => self.list(sink, m, at),
            Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => self.map(sink, m, at),
            Marker::FixStr(n) => {
                let text = self.fixstr(n, at)?;
                Ok(sink.leaf(|| Value::String(text.to_owned())))
            }
            Marker::Str8 => {
                let text = self.str8(at)?;
                if S::CANONICAL && !canonical_len(m, text.len()) {
                    sink.non_canonical();
                }
                Ok(sink.leaf(|| Value::String(text.to_owned())))
            }
            _ => self.scalar(sink, m, at),
        }
    }

    /// A fixstr of `n` bytes whose marker (at `at`) was just read: the
    /// common case of `str_body`, which it falls back to (for its errors).
    #[inline]
    fn fixstr(&mut self, n: u8, at: usize) -> Result<&'a str> {
        let start = self.pos;
        let end = start + usize::from(n);
        if let Some(text) = self
            .bytes
            .get(start..end)
            .and_then(|raw| std::str::from_utf8(raw).ok())
        {
            self.pos = end;
            return Ok(text);
        }
        self.str_body(Marker::FixStr(n), at)
    }

    /// A str8 whose marker (at `at`) was just read, as [`Cursor::fixstr`].
    #[inline]
    fn str8(&mut self, at: usize) -> Result<&'a str> {
        let start = self.pos + 1;
        if let Some(&n) = self.bytes.get(self.pos)
            && let Some(text) = self
                .bytes
                .get(start..start + usize::from(n))
                .and_then(|raw| std::str::from_utf8(raw).ok())
        {
            self.pos = start + usize::from(n);
            return Ok(text);
        }
        self.str_body(Marker::Str8, at)
    }

    /// An index entry in its usual form, `93`, a fixstr id, and two
    /// integers below 2^16, moving past it; `None` (nothing consumed) for any
    /// other form, which the general path then reads or rejects.
    #[inline]
    fn short_index_entry(&mut self) -> Option<(&'a str, u64, u64)> {
        let bytes = self.bytes;
        let mut p = self.pos;
        if *bytes.get(p)? != 0x93 {
            return None;
        }
        let marker = *bytes.get(p + 1)?;
        if marker & 0xe0 != 0xa0 {
            return None;
        }
        let start = p + 2;
        p = start + usize::from(marker & 0x1f);
        let id = std::str::from_utf8(bytes.get(start..p)?).ok()?;
        let mut small_uint = || -> Option<u64> {
            let b = *bytes.get(p)?;
            match b {
                0x00..=0x7f => {
                    p += 1;
                    Some(u64::from(b))
                }
                0xcc => {
                    let v = *bytes.get(p + 1)?;
                    p += 2;
                    Some(u64::from(v))
                }
                0xcd => {
                    let v = bytes.get(p + 1..p + 3)?;
                    p += 3;
                    Some(u64::from(u16::from_be_bytes([v[0], v[1]])))
                }
                _ => None,
            }
        };
        let n_frames = small_uint()?;
        let meta_len = small_uint()?;
        self.pos = p;
        Some((id, n_frames, meta_len))
    }

    /// A map key: a string, usually a fixstr.
    #[inline]
    fn key<S: Sink<'a>>(&mut self, sink: &mut S) -> Result<&'a str> {
        let at = self.pos;
        match self.bytes.get(at) {
            Some(&b) if b & 0xe0 == 0xa0 => {
                self.pos += 1;
                self.fixstr(b & 0x1f, at)
            }
            _ => {
                let m = self.marker()?;
                let text = self.str_body(m, at)?;
                if S::CANONICAL && !canonical_len(m, text.len()) {
                    sink.non_canonical();
                }
                Ok(text)
            }
        }
    }

    /// A list whose marker `m` (at `at`) was just read.
    fn list<S: Sink<'a>>(&mut self, sink: &mut S, m: Marker, at: usize) -> Result<S::Out> {
        let n = self.len_of(m)?.unwrap_or(0);
        if S::CANONICAL && !canonical_len(m, n) {
            sink.non_canonical();
        }
        self.descend(at)?;
        let mut items = sink.list(n);
        for _ in 0..n {
            let value = self.value(sink)?;
            sink.push(&mut items, value);
        }
        self.depth -= 1;
        Ok(sink.end_list(items))
    }

    /// A map whose marker `m` (at `at`) was just read.
    fn map<S: Sink<'a>>(&mut self, sink: &mut S, m: Marker, at: usize) -> Result<S::Out> {
        let n = self.len_of(m)?.unwrap_or(0);
        if S::CANONICAL && !canonical_len(m, n) {
            sink.non_canonical();
        }
        self.descend(at)?;
        let mut map = sink.map(n);
        for _ in 0..n {
            let key = self.key(sink)?;
            let value = self.value(sink)?;
            if !sink.insert(&mut map, key, value) {
                return Err(Error::msgpack(at, "map has a repeated key"));
            }
        }
        self.depth -= 1;
        Ok(sink.end_map(map))
    }

    /// A value other than a list or map, whose marker `m` (at `at`) was just
    /// read.
    #[cfg_attr(debug_assertions, inline(never))]
    fn scalar<S: Sink<'a>>(&mut self, sink: &mut S, m: Marker, at: usize) -> Result<S::Out> {
        // Whether `m` is the form the writer picks for this value.
        let mut canonical = true;
        let out = match m {
            Marker::Null => sink.leaf(|| Value::Null),
            Marker::True => sink.leaf(|| Value::Bool(true)),
            Marker::False => sink.leaf(|| Value::Bool(false)),
            Marker::FixPos(n) => sink.leaf(|| Value::Int(i64::from(n))),
            Marker::U8 | Marker::U16 | Marker::U32 | Marker::U64 => {
                let (n, least) = match m {
                    Marker::U8 => (1, 0x80),
                    Marker::U16 => (2, 0x100),
                    Marker::U32 => (4, 0x1_0000),
                    _ => (8, 0x1_0000_0000),
                };
                let u = self.be(n)?;
                canonical = u >= least;
                sink.leaf(|| Value::from(u))
            }
            Marker::FixNeg(n) => sink.leaf(|| Value::Int(i64::from(n))),
            Marker::I8 | Marker::I16 | Marker::I32 | Marker::I64 => {
                let (i, below) = match m {
                    Marker::I8 => (i64::from(i8::from_be_bytes(self.array()?)), -32),
                    Marker::I16 => (i64::from(i16::from_be_bytes(self.array()?)), -128),
                    Marker::I32 => (i64::from(i32::from_be_bytes(self.array()?)), -32_768),
                    _ => (i64::from_be_bytes(self.array()?), -2_147_483_648),
                };
                canonical = i < below;
                sink.leaf(|| Value::Int(i))
            }
            Marker::F32 => {
                canonical = false;
                let f = f64::from(f32::from_be_bytes(self.array()?));
                sink.leaf(|| Value::Float(f))
            }
            Marker::F64 => {
                let f = f64::from_bits(u64::from_be_bytes(self.array()?));
                sink.leaf(|| Value::Float(f))
            }
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                let text = self.str_body(m, at)?;
                canonical = canonical_len(m, text.len());
                sink.leaf(|| Value::String(text.to_owned()))
            }
            Marker::FixExt1
            | Marker::FixExt2
            | Marker::FixExt4
            | Marker::FixExt8
            | Marker::FixExt16
            | Marker::Ext8
            | Marker::Ext16
            | Marker::Ext32 => {
                let n = match m {
                    Marker::FixExt1 => 1,
                    Marker::FixExt2 => 2,
                    Marker::FixExt4 => 4,
                    Marker::FixExt8 => 8,
                    Marker::FixExt16 => 16,
                    Marker::Ext8 => usize::from(self.take(1)?[0]),
                    Marker::Ext16 => usize::from(u16::from_be_bytes(self.array()?)),
                    _ => usize::try_from(self.be(4)?).unwrap_or(usize::MAX),
                };
                // rmp's write_ext_meta: a fixext for 1, 2, 4, 8 and 16 bytes,
                // else the smallest of ext 8, 16 and 32.
                canonical = match m {
                    Marker::Ext8 => !matches!(n, 1 | 2 | 4 | 8 | 16),
                    Marker::Ext16 => n > 0xff,
                    Marker::Ext32 => n > 0xffff,
                    _ => true,
                };
                let ty = self.take(1)?[0] as i8;
                let payload = self.take(n)?;
                let text = std::str::from_utf8(payload)
                    .ok()
                    .filter(|text| ty == EXT_BIGINT && BigInt::is_valid(text))
                    .ok_or_else(|| {
                        Error::msgpack(at, format!("unsupported ext type {ty} or bad big integer"))
                    })?;
                // The writer puts an integer that fits u64 in a uint 64.
                if S::CANONICAL && text.parse::<u64>().is_ok() {
                    canonical = false;
                }
                sink.leaf(|| Value::BigInt(BigInt::from_valid(text)))
            }
            other => {
                return Err(Error::msgpack(
                    at,
                    format!("{other:?} is not part of the meta model"),
                ));
            }
        };
        if S::CANONICAL && !canonical {
            sink.non_canonical();
        }
        Ok(out)
    }

    fn descend(&mut self, at: usize) -> Result<()> {
        if self.depth >= MAX_DEPTH {
            return Err(Error::msgpack(
                at,
                format!("values nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.depth += 1;
        Ok(())
    }
}
