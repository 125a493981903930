//! The msgpack meta writer: the sections of `docs/format.md` §4 in order,
//! then the trailer with the content's CRC-32.

use crate::error::{ErrorKind, Result};
use crate::media::{AUDIO_KEY, FRAME_TIMES_KEY};
use crate::meta::ChunkMeta;
use crate::value::{Map, Value};

use super::{EXT_BIGINT, FLAG_CHECKSUMS, FRAME_ENTRY_LEN, Header, MAGIC_STR, MsgpackVersion};

pub(super) fn write_meta(meta: &ChunkMeta, out: &mut Vec<u8>) -> Result<()> {
    meta.check_media()?;
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
        write_layers(&item.metalayers, item.media_entries(), &mut item_blobs)?;
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

/// An item's metalayers, then its frame times and audio as the metalayers
/// of those names (`docs/format.md` §8), which no other metalayer may take.
fn write_layers(
    layers: &Map,
    media: impl Iterator<Item = (&'static str, Value)>,
    out: &mut Vec<u8>,
) -> Result<()> {
    if let Some(name) = [FRAME_TIMES_KEY, AUDIO_KEY]
        .into_iter()
        .find(|k| layers.contains_key(*k))
    {
        return Err(ErrorKind::Unrepresentable(format!(
            "a metalayer named {name:?} (the name is the item's own, format.md §8)"
        ))
        .into());
    }
    let media: Vec<_> = media.collect();
    let _ = rmp::encode::write_map_len(
        out,
        u32::try_from(layers.len() + media.len()).unwrap_or(u32::MAX),
    );
    let entries = layers.iter().map(|(k, v)| (k.as_str(), v));
    for (key, value) in entries.chain(media.iter().map(|(k, v)| (*k, v))) {
        let _ = rmp::encode::write_str(out, key);
        write_value(value, out);
    }
    Ok(())
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
