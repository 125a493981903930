//! The checks of a msgpack meta at load (`docs/format.md` §4.8): header,
//! trailer, fingerprint, index and section lengths, then each item.

use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};
use crate::layout::FrameInfo;
use crate::media::take_media;
use crate::meta::{ChunkMeta, ItemMeta};
use crate::meta_data::MetaData;
use crate::meta_index::{IndexBuilder, MetaIndex};
use crate::serializer::MetaFormat;

use super::parse::{Cursor, Skip, decode_checked_list};
use super::{
    FLAG_CHECKSUMS, FRAME_ENTRY_LEN, Header, KNOWN_FLAGS, MAGIC_STR, MsgpackVersion, TRAILER_LEN,
};

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

pub(super) fn read_meta(bytes: &[u8]) -> Result<ChunkMeta> {
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
        let frame_info: Vec<FrameInfo> = frames
            [frame_pos * FRAME_ENTRY_LEN..(frame_pos + n) * FRAME_ENTRY_LEN]
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
        let mut metalayers = metalayers;
        let (frame_times, audio) = take_media(&mut metalayers, frame_info.len())
            .map_err(|reason| Error::item(e.id, e.at, reason))?;
        let item = ItemMeta {
            frame_info,
            meta_data,
            frame_checksums,
            metalayers,
            frame_times,
            audio,
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
    let frame_info: Vec<FrameInfo> = frames
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
    let mut metalayers = metalayers;
    let (frame_times, audio) = take_media(&mut metalayers, frame_info.len())
        .map_err(|reason| Error::item(id, 0, reason))?;
    Ok(ItemMeta {
        frame_info,
        meta_data,
        frame_checksums: Vec::new(),
        metalayers,
        frame_times,
        audio,
    })
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().unwrap_or_default())
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().unwrap_or_default())
}
