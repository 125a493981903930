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

use rmp::Marker;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::index::{IndexBuilder, MetaIndex};
use crate::layout::FrameInfo;
use crate::meta::{ChunkMeta, ItemMeta};
use crate::serializer::{MetaFormat, Serializer};
use crate::value::{BigInt, Map, Value};

/// The magic string: the first element of the header array, encoded as a
/// msgpack fixstr (`0xa8` then the 8 ASCII bytes).
pub const MSGPACK_MAGIC: &[u8] = b"\xa8gulpmeta";
const MAGIC_STR: &str = "gulpmeta";
/// Flag bit: the checksum section holds one CRC-32 per frame.
const FLAG_CHECKSUMS: u64 = 1;
const KNOWN_FLAGS: u64 = FLAG_CHECKSUMS;
/// msgpack ext type code of an integer outside the i64/u64 ranges (decimal text).
const EXT_BIGINT: i8 = 1;
/// The trailer: fixarray(2), uint64 content length, uint32 fingerprint.
const TRAILER_LEN: usize = 15;
/// Bytes of one frame-table entry.
const FRAME_ENTRY_LEN: usize = 24;
const MAX_DEPTH: usize = crate::json::MAX_DEPTH;
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
        write_array(&item.meta_data, &mut item_blobs);
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
    for e in &layout.entries {
        let start = index.arena().len();
        index.arena().push_str(e.id);
        if index.finish_id(start, e.n_frames).is_some() {
            return Err(Error::item(e.id, e.at, "id appears twice in the index"));
        }
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

    // Index.
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

    // Frame table, checksums and meta blob.
    let frames_at = c.pos;
    let frames = c.bin()?;
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
        checksums,
        blob,
        blob_at,
    })
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
        checksums,
        blob,
        blob_at,
    } = layout;
    let mut meta = ChunkMeta::with_capacity(entries.len());
    let (mut frame_pos, mut blob_pos) = (0usize, 0usize);
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
        let (meta_data, metalayers) = item_c.item().map_err(|err| {
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

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().unwrap_or_default())
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().unwrap_or_default())
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

    fn item(&mut self) -> Result<(Vec<Value>, Map)> {
        let at = self.pos;
        if self.array_len()? != 2 {
            return Err(Error::msgpack(at, "an item is not [meta_data, metalayers]"));
        }
        let list_at = self.pos;
        let Value::Array(meta_data) = self.value()? else {
            return Err(Error::msgpack(list_at, "meta_data is not a list"));
        };
        let map_at = self.pos;
        let Value::Object(metalayers) = self.value()? else {
            return Err(Error::msgpack(map_at, "metalayers is not a map"));
        };
        Ok((meta_data, metalayers))
    }

    fn value(&mut self) -> Result<Value> {
        let at = self.pos;
        let m = self.marker()?;
        // Only lists and maps recurse. The other kinds live in `scalar` so that
        // each nesting level costs small stack frames: unoptimised builds give
        // every temporary of a function its own stack slot, and with all of
        // them in this one function, MAX_DEPTH levels overflowed a thread's
        // default 2 MiB stack (tests/data/fuzz-regressions/).
        match m {
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => self.list(m, at),
            Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => self.map(m, at),
            Marker::FixStr(n) => Ok(Value::String(self.fixstr(n, at)?.to_owned())),
            _ => self.scalar(m, at),
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
    fn key(&mut self) -> Result<&'a str> {
        let at = self.pos;
        match self.bytes.get(at) {
            Some(&b) if b & 0xe0 == 0xa0 => {
                self.pos += 1;
                self.fixstr(b & 0x1f, at)
            }
            _ => self.str_ref(),
        }
    }

    /// A list whose marker `m` (at `at`) was just read.
    fn list(&mut self, m: Marker, at: usize) -> Result<Value> {
        let n = self.len_of(m)?.unwrap_or(0);
        self.descend(at)?;
        let mut items = Vec::with_capacity(n.min(MAX_PREALLOC));
        for _ in 0..n {
            items.push(self.value()?);
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    /// A map whose marker `m` (at `at`) was just read.
    fn map(&mut self, m: Marker, at: usize) -> Result<Value> {
        let n = self.len_of(m)?.unwrap_or(0);
        self.descend(at)?;
        let mut map = Map::with_capacity_and_hasher(n.min(MAX_PREALLOC), Default::default());
        for _ in 0..n {
            let key = self.key()?.to_owned();
            let value = self.value()?;
            if map.insert(key, value).is_some() {
                return Err(Error::msgpack(at, "map has a repeated key"));
            }
        }
        self.depth -= 1;
        Ok(Value::Object(map))
    }

    /// A value other than a list or map, whose marker `m` (at `at`) was just
    /// read.
    #[cfg_attr(debug_assertions, inline(never))]
    fn scalar(&mut self, m: Marker, at: usize) -> Result<Value> {
        let value = match m {
            Marker::Null => Value::Null,
            Marker::True => Value::Bool(true),
            Marker::False => Value::Bool(false),
            Marker::FixPos(n) => Value::Int(i64::from(n)),
            Marker::U8 | Marker::U16 | Marker::U32 | Marker::U64 => {
                let n = match m {
                    Marker::U8 => 1,
                    Marker::U16 => 2,
                    Marker::U32 => 4,
                    _ => 8,
                };
                Value::from(self.be(n)?)
            }
            Marker::FixNeg(n) => Value::Int(i64::from(n)),
            Marker::I8 => Value::Int(i64::from(i8::from_be_bytes(self.array()?))),
            Marker::I16 => Value::Int(i64::from(i16::from_be_bytes(self.array()?))),
            Marker::I32 => Value::Int(i64::from(i32::from_be_bytes(self.array()?))),
            Marker::I64 => Value::Int(i64::from_be_bytes(self.array()?)),
            Marker::F32 => Value::Float(f64::from(f32::from_be_bytes(self.array()?))),
            Marker::F64 => Value::Float(f64::from_bits(self.be(8)?)),
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                Value::String(self.str_body(m, at)?.to_owned())
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
                let ty = self.take(1)?[0] as i8;
                let payload = self.take(n)?;
                let text = std::str::from_utf8(payload)
                    .ok()
                    .filter(|_| ty == EXT_BIGINT);
                Value::BigInt(text.and_then(BigInt::new).ok_or_else(|| {
                    Error::msgpack(at, format!("unsupported ext type {ty} or bad big integer"))
                })?)
            }
            other => {
                return Err(Error::msgpack(
                    at,
                    format!("{other:?} is not part of the meta model"),
                ));
            }
        };
        Ok(value)
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
