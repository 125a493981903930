//! A directory's index file (`gulp_index.bin`): every per-item fact that
//! opening a directory and building a loader need (ids, frame counts, where
//! each item's meta and frame records lie, the frame records themselves,
//! one label column, and the ids in sorted order for lookups), laid out as
//! fixed-width little-endian columns that every process of a node maps and
//! shares through the page cache, instead of each parsing every meta file
//! into memory of its own.
//!
//! The file records, per chunk, the sizes and modification time of its
//! files: an index whose chunks differ from the directory's is stale; one
//! whose checksum or structure is wrong is damaged. Either is never used
//! (the directory is read from its meta files and the index rebuilt).
//! gulpio2 ignores the file.
//!
//! Layout (all integers little-endian; every section starts at a multiple
//! of 8 bytes):
//!
//! ```text
//! header     96 bytes: magic "GULPIDX\0", version u32, flags u32, then u64s:
//!            chunks, items, frames, id bytes, labels, label bytes, key bytes,
//!            checksum (CRC-32 of the header up to it and of the body), body
//!            length, reserved
//! chunks     8 u64 a chunk: number, meta length, meta mtime (ns), data length,
//!            first item, first frame, format (0 JSON, 1 msgpack), items
//! id_ends    u64 an item: end of its id in the id text
//! frame_first u64 an item, plus one: its first frame (the last = frames)
//! spans      2 u64 an item: its meta's [start, end) in its meta file
//! frames_at  u64 an item: its first frame record in a msgpack meta (0 for JSON)
//! sorted     u64 an item: the items in increasing order of id bytes
//! labels     u32 an item: its label's code, or u32::MAX
//! locs       u64 a frame: its offset in the data file
//! lens       u32 a frame: length << 2 | pad
//! id text    the ids, concatenated
//! label_ends u64 a label: end of its text
//! label text each distinct label value's JSON text, concatenated
//! key        the meta_data key the labels were read from
//! ```

// Offsets and counts are u64 in the file and usize in memory: the index is
// for 64-bit targets (asserted below), where the cast is lossless.
#![allow(clippy::cast_possible_truncation)]

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use crate::json::JsonSerializer;
use crate::layout::FrameInfo;
use crate::meta::ChunkMeta;
use crate::meta_index::{Columns, FRAME_RECORD_LEN, ItemSpan, MetaIndex};
use crate::serializer::MetaFormat;
use crate::value::Value;

const _: () = assert!(
    usize::BITS == 64,
    "the index file is read on 64-bit targets"
);

/// The index file's name in a directory.
pub const INDEX_FILE: &str = "gulp_index.bin";
/// The file the builders of a directory's index file lock, beside it (an
/// empty file that stays): one builds at a time.
pub const INDEX_LOCK_FILE: &str = "gulp_index.lock";
/// The first bytes of an index file.
pub const INDEX_MAGIC: [u8; 8] = *b"GULPIDX\0";
/// The layout version this build writes and reads.
pub const INDEX_VERSION: u32 = 1;
/// The label code of an item without a label value (or with one that is
/// neither a string nor an integer).
pub const NO_LABEL: u32 = u32::MAX;

const HEADER_LEN: usize = 96;
const CHUNK_WORDS: usize = 8;
/// More distinct label values than this and the column is left empty (the
/// key holds something other than classes: captions, paths).
const MAX_LABELS: usize = 1 << 20;
/// A record `length << 2 | pad` fits a u32 below this length.
const MAX_PACKED_LEN: u64 = (1 << 30) - 1;

/// What the index records of a chunk's files, to tell a stale index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkStamp {
    /// The chunk number N of `data_N.gulp`.
    pub chunk: u64,
    /// The meta file's length in bytes.
    pub meta_len: u64,
    /// The meta file's modification time, in nanoseconds since the epoch.
    pub meta_mtime_ns: u64,
    /// The data file's length in bytes.
    pub data_len: u64,
}

/// Builds the bytes of an index file, chunk after chunk.
#[derive(Debug)]
pub struct DirIndexWriter {
    key: String,
    chunks: Vec<[u64; CHUNK_WORDS]>,
    id_text: Vec<u8>,
    id_ends: Vec<u64>,
    frame_first: Vec<u64>,
    spans: Vec<u64>,
    frames_at: Vec<u64>,
    labels: Vec<u32>,
    codes: HashMap<String, u32>,
    label_list: Vec<String>,
    locs: Vec<u64>,
    lens: Vec<u32>,
    /// Whether every item's label value is absent, null, a string or an
    /// integer, with fewer distinct values than the cap (its code then
    /// stands for it exactly).
    labels_exact: bool,
    /// Whether every item has a frame.
    all_have_frames: bool,
}

/// Header flag: the label column stands for every item's value exactly.
const FLAG_LABELS_EXACT: u32 = 1;
/// Header flag: every item has at least one frame.
const FLAG_ALL_HAVE_FRAMES: u32 = 2;

impl DirIndexWriter {
    /// A writer whose label column holds each item's `meta_data[key]`.
    pub fn new(key: &str) -> DirIndexWriter {
        DirIndexWriter {
            key: key.to_owned(),
            chunks: Vec::new(),
            id_text: Vec::new(),
            id_ends: Vec::new(),
            frame_first: vec![0],
            spans: Vec::new(),
            frames_at: Vec::new(),
            labels: Vec::new(),
            codes: HashMap::new(),
            label_list: Vec::new(),
            locs: Vec::new(),
            lens: Vec::new(),
            labels_exact: true,
            all_have_frames: true,
        }
    }

    /// Adds the next chunk: its files' `stamp`, its parsed `meta` and the
    /// `index` read from the same file. An error says why the directory
    /// cannot have an index (a frame record too long to pack, more than
    /// 2^32 chunks); it is not a problem of the data.
    pub fn push_chunk(
        &mut self,
        stamp: ChunkStamp,
        meta: &ChunkMeta,
        index: &MetaIndex,
    ) -> Result<(), String> {
        if meta.len() != index.len() {
            return Err(format!(
                "chunk {}: the meta holds {} items, its index {}",
                stamp.chunk,
                meta.len(),
                index.len()
            ));
        }
        let first_item = self.id_ends.len() as u64;
        let first_frame = self.locs.len() as u64;
        for (k, (id, item)) in meta.iter().enumerate() {
            if index.id(k) != Some(id) {
                return Err(format!(
                    "chunk {}: item {k} differs from its index",
                    stamp.chunk
                ));
            }
            self.id_text.extend_from_slice(id.as_bytes());
            self.id_ends.push(self.id_text.len() as u64);
            for fi in &item.frame_info {
                if fi.length >= MAX_PACKED_LEN || fi.pad > 3 {
                    return Err(format!(
                        "item {id:?} of chunk {}: frame record {fi:?} does not pack",
                        stamp.chunk
                    ));
                }
                self.locs.push(fi.loc);
                #[allow(clippy::cast_possible_truncation)] // checked above
                self.lens.push((fi.length as u32) << 2 | fi.pad as u32);
            }
            self.frame_first.push(self.locs.len() as u64);
            let span = index.item_span(k).unwrap_or(ItemSpan {
                meta: 0..0,
                frames: 0..0,
            });
            self.spans.extend([span.meta.start, span.meta.end]);
            self.frames_at.push(span.frames.start);
            let value = item.first_meta_data().and_then(|m| m.get(&self.key));
            let code = match value {
                Some(v @ (Value::String(_) | Value::Int(_))) => self.code(v),
                None | Some(Value::Null) => NO_LABEL,
                Some(_) => {
                    self.labels_exact = false;
                    NO_LABEL
                }
            };
            self.all_have_frames &= !item.frame_info.is_empty();
            self.labels.push(code);
        }
        let format = match index.format() {
            MetaFormat::Json => 0,
            MetaFormat::Msgpack => 1,
        };
        self.chunks.push([
            stamp.chunk,
            stamp.meta_len,
            stamp.meta_mtime_ns,
            stamp.data_len,
            first_item,
            first_frame,
            format,
            meta.len() as u64,
        ]);
        Ok(())
    }

    fn code(&mut self, value: &Value) -> u32 {
        let text = JsonSerializer::value_to_string(value);
        if let Some(&code) = self.codes.get(&text) {
            return code;
        }
        if self.label_list.len() >= MAX_LABELS {
            self.labels_exact = false;
            return NO_LABEL;
        }
        #[allow(clippy::cast_possible_truncation)] // < MAX_LABELS
        let code = self.label_list.len() as u32;
        self.codes.insert(text.clone(), code);
        self.label_list.push(text);
        code
    }

    /// The file's bytes.
    pub fn finish(self) -> Vec<u8> {
        let n_items = self.id_ends.len();
        // With more labels than the cap, the column means nothing.
        let labels_full = self.label_list.len() >= MAX_LABELS;
        let mut sorted: Vec<u64> = (0..n_items as u64).collect();
        let text = &self.id_text;
        let ends = &self.id_ends;
        let id_of = |i: u64| {
            let i = i as usize;
            let start = if i == 0 { 0 } else { ends[i - 1] as usize };
            &text[start..ends[i] as usize]
        };
        sorted.sort_unstable_by(|&a, &b| id_of(a).cmp(id_of(b)));
        let mut label_ends = Vec::with_capacity(self.label_list.len());
        let mut label_text = Vec::new();
        if !labels_full {
            for label in &self.label_list {
                label_text.extend_from_slice(label.as_bytes());
                label_ends.push(label_text.len() as u64);
            }
        }
        let mut body = Vec::new();
        for chunk in &self.chunks {
            put_u64s(&mut body, chunk);
        }
        put_u64s(&mut body, &self.id_ends);
        put_u64s(&mut body, &self.frame_first);
        put_u64s(&mut body, &self.spans);
        put_u64s(&mut body, &self.frames_at);
        put_u64s(&mut body, &sorted);
        if labels_full {
            put_u32s(&mut body, &vec![NO_LABEL; n_items]);
        } else {
            put_u32s(&mut body, &self.labels);
        }
        put_u64s(&mut body, &self.locs);
        put_u32s(&mut body, &self.lens);
        put_bytes(&mut body, &self.id_text);
        put_u64s(&mut body, &label_ends);
        put_bytes(&mut body, &label_text);
        put_bytes(&mut body, self.key.as_bytes());
        let mut out = Vec::with_capacity(HEADER_LEN + body.len());
        out.extend_from_slice(&INDEX_MAGIC);
        out.extend_from_slice(&INDEX_VERSION.to_le_bytes());
        let flags = if self.labels_exact && !labels_full {
            FLAG_LABELS_EXACT
        } else {
            0
        } | if self.all_have_frames {
            FLAG_ALL_HAVE_FRAMES
        } else {
            0
        };
        out.extend_from_slice(&flags.to_le_bytes());
        let counts = [
            self.chunks.len() as u64,
            n_items as u64,
            self.locs.len() as u64,
            self.id_text.len() as u64,
            label_ends.len() as u64,
            label_text.len() as u64,
            self.key.len() as u64,
        ];
        for word in counts {
            out.extend_from_slice(&word.to_le_bytes());
        }
        let crc = checksum(&out, &body);
        for word in [crc, body.len() as u64, 0] {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(&body);
        out
    }
}

fn pad8(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
}

fn put_u64s(out: &mut Vec<u8>, words: &[u64]) {
    out.reserve(words.len() * 8);
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

fn put_u32s(out: &mut Vec<u8>, words: &[u32]) {
    out.reserve(words.len() * 4 + 4);
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
    pad8(out);
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(bytes);
    pad8(out);
}

/// The bytes of an index file, kept alive by whoever holds the view (a
/// memory map, or a buffer).
pub type IndexBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// An index file, checked and read in place.
#[derive(Clone)]
pub struct DirIndex {
    bytes: IndexBytes,
    flags: u32,
    n_chunks: usize,
    n_items: usize,
    n_frames: u64,
    chunks: usize,
    id_ends: usize,
    frame_first: usize,
    spans: usize,
    frames_at: usize,
    sorted: usize,
    labels: usize,
    locs: usize,
    lens: usize,
    id_text: Range<usize>,
    label_ends: usize,
    n_labels: usize,
    label_text: Range<usize>,
    key: Range<usize>,
}

impl std::fmt::Debug for DirIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirIndex")
            .field("chunks", &self.n_chunks)
            .field("items", &self.n_items)
            .field("frames", &self.n_frames)
            .finish_non_exhaustive()
    }
}

/// Sections laid out one after another from the end of the header.
struct Cursor {
    at: usize,
    end: usize,
}

impl Cursor {
    fn take(&mut self, len: usize, what: &str) -> Result<Range<usize>, String> {
        let start = self.at;
        let end = start
            .checked_add(len)
            .filter(|&e| e <= self.end)
            .ok_or_else(|| format!("the {what} section runs past the end of the file"))?;
        self.at = end.next_multiple_of(8).min(self.end);
        Ok(start..end)
    }

    fn words(&mut self, n: usize, size: usize, what: &str) -> Result<usize, String> {
        let len = n
            .checked_mul(size)
            .ok_or_else(|| format!("the {what} section is too long"))?;
        Ok(self.take(len, what)?.start)
    }
}

impl DirIndex {
    /// Reads and checks an index file's bytes: its magic, version, checksum
    /// and that its sections are consistent (ids, frames and spans in
    /// range, orders monotonic, the sorted ids sorted), so that no lookup
    /// into it can fail later. The error says what is wrong.
    pub fn parse(bytes: IndexBytes) -> Result<DirIndex, String> {
        let b = (*bytes).as_ref();
        if b.len() < HEADER_LEN || b[..8] != INDEX_MAGIC {
            return Err("not a gulp index file (no magic)".into());
        }
        let version = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        if version != INDEX_VERSION {
            return Err(format!(
                "index version {version} (this build reads {INDEX_VERSION})"
            ));
        }
        let flags = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
        let word = |k: usize| u64_at(b, 16 + 8 * k);
        let size = |k: usize| usize::try_from(word(k)).map_err(|_| "a count is too large");
        let (n_chunks, n_items, n_frames) = (size(0)?, size(1)?, word(2));
        let (id_bytes, n_labels, label_bytes, key_bytes) = (size(3)?, size(4)?, size(5)?, size(6)?);
        let (crc, body_len) = (word(7), size(8)?);
        if HEADER_LEN.checked_add(body_len) != Some(b.len()) {
            return Err(format!(
                "the body is {} bytes, the header says {body_len} (cut short?)",
                b.len() - HEADER_LEN
            ));
        }
        if checksum(&b[..CRC_AT], &b[HEADER_LEN..]) != crc {
            return Err("checksum mismatch (the file is damaged)".into());
        }
        let frames = usize::try_from(n_frames).map_err(|_| "too many frames")?;
        let mut c = Cursor {
            at: HEADER_LEN,
            end: b.len(),
        };
        let index = DirIndex {
            flags,
            n_chunks,
            n_items,
            n_frames,
            chunks: c.words(n_chunks, 8 * CHUNK_WORDS, "chunks")?,
            id_ends: c.words(n_items, 8, "id ends")?,
            frame_first: c.words(n_items + 1, 8, "frame starts")?,
            spans: c.words(n_items, 16, "spans")?,
            frames_at: c.words(n_items, 8, "frame table offsets")?,
            sorted: c.words(n_items, 8, "sorted ids")?,
            labels: c.words(n_items, 4, "labels")?,
            locs: c.words(frames, 8, "frame offsets")?,
            lens: c.words(frames, 4, "frame lengths")?,
            id_text: c.take(id_bytes, "id text")?,
            label_ends: c.words(n_labels, 8, "label ends")?,
            n_labels,
            label_text: c.take(label_bytes, "label text")?,
            key: c.take(key_bytes, "key")?,
            bytes,
        };
        if c.at != c.end {
            return Err("bytes after the last section".into());
        }
        index.validate()?;
        Ok(index)
    }

    fn b(&self) -> &[u8] {
        (*self.bytes).as_ref()
    }

    fn u64(&self, section: usize, k: usize) -> u64 {
        u64_at(self.b(), section + 8 * k)
    }

    fn u32(&self, section: usize, k: usize) -> u32 {
        let at = section + 4 * k;
        let b = self.b();
        u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    }

    fn chunk_word(&self, chunk: usize, k: usize) -> u64 {
        self.u64(self.chunks, chunk * CHUNK_WORDS + k)
    }

    fn validate(&self) -> Result<(), String> {
        let text = std::str::from_utf8(&self.b()[self.id_text.clone()])
            .map_err(|e| format!("ids are not UTF-8 at byte {}", e.valid_up_to()))?;
        let mut prev = 0u64;
        for i in 0..self.n_items {
            let end = self.u64(self.id_ends, i);
            if end < prev || end > text.len() as u64 || !text.is_char_boundary(end as usize) {
                return Err(format!("item {i}: id end {end} out of order or range"));
            }
            prev = end;
        }
        let mut prev = 0u64;
        for i in 0..=self.n_items {
            let first = self.u64(self.frame_first, i);
            if first < prev || first > self.n_frames || (i == 0 && first != 0) {
                return Err(format!(
                    "item {i}: first frame {first} out of order or range"
                ));
            }
            prev = first;
        }
        if prev != self.n_frames {
            return Err("the frame starts do not end at the frame count".into());
        }
        if self.all_have_frames() && (0..self.n_items).any(|i| self.frames(i).is_empty()) {
            return Err("an item has no frame, the flags say every one has".into());
        }
        let mut items = 0u64;
        for c in 0..self.n_chunks {
            let (first, first_frame, format, n) = (
                self.chunk_word(c, 4),
                self.chunk_word(c, 5),
                self.chunk_word(c, 6),
                self.chunk_word(c, 7),
            );
            if first != items
                || format > 1
                || first_frame != self.u64(self.frame_first, first as usize)
                || (c > 0 && self.chunk_word(c, 0) <= self.chunk_word(c - 1, 0))
            {
                return Err(format!("chunk row {c} is inconsistent"));
            }
            items = items.checked_add(n).ok_or("too many items")?;
            if items > self.n_items as u64 {
                return Err(format!("chunk row {c} counts more items than the index"));
            }
        }
        if items != self.n_items as u64 {
            return Err("the chunks do not count the index's items".into());
        }
        for i in 0..self.n_items {
            let [s, e] = [self.u64(self.spans, 2 * i), self.u64(self.spans, 2 * i + 1)];
            let code = self.u32(self.labels, i);
            if s > e || (code != NO_LABEL && code as usize >= self.n_labels) {
                return Err(format!("item {i}: span or label out of range"));
            }
        }
        let mut seen = vec![false; self.n_items];
        let mut prev: Option<&str> = None;
        for k in 0..self.n_items {
            let i = self.u64(self.sorted, k);
            let Some(flag) = usize::try_from(i).ok().and_then(|i| seen.get_mut(i)) else {
                return Err(format!("sorted id {k}: item {i} out of range"));
            };
            if std::mem::replace(flag, true) {
                return Err(format!("sorted id {k}: item {i} twice"));
            }
            let id = self.id(i as usize);
            if prev.is_some_and(|p| p >= id) {
                return Err(format!("sorted id {k}: {id:?} out of order or repeated"));
            }
            prev = Some(id);
        }
        let mut prev = 0u64;
        for l in 0..self.n_labels {
            let end = self.u64(self.label_ends, l);
            if end < prev || end > self.label_text.len() as u64 {
                return Err(format!("label {l}: end out of order or range"));
            }
            prev = end;
        }
        std::str::from_utf8(&self.b()[self.label_text.clone()])
            .map_err(|_| "labels are not UTF-8".to_owned())?;
        std::str::from_utf8(&self.b()[self.key.clone()])
            .map_err(|_| "the key is not UTF-8".to_owned())?;
        Ok(())
    }

    /// Number of chunks.
    pub fn n_chunks(&self) -> usize {
        self.n_chunks
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.n_items
    }

    /// Whether the index holds no item.
    pub fn is_empty(&self) -> bool {
        self.n_items == 0
    }

    /// Number of frames.
    pub fn n_frames(&self) -> u64 {
        self.n_frames
    }

    /// The bytes of the file.
    pub fn bytes(&self) -> &[u8] {
        self.b()
    }

    /// What the index recorded of chunk row `chunk`'s files.
    pub fn stamp(&self, chunk: usize) -> ChunkStamp {
        ChunkStamp {
            chunk: self.chunk_word(chunk, 0),
            meta_len: self.chunk_word(chunk, 1),
            meta_mtime_ns: self.chunk_word(chunk, 2),
            data_len: self.chunk_word(chunk, 3),
        }
    }

    /// The items of chunk row `chunk`, as global item numbers.
    pub fn chunk_items(&self, chunk: usize) -> Range<usize> {
        let first = self.chunk_word(chunk, 4) as usize;
        first..first + self.chunk_word(chunk, 7) as usize
    }

    /// The chunk row holding global item `item`.
    pub fn chunk_of(&self, item: usize) -> usize {
        // The last chunk whose first item is at most `item`, skipping
        // empty chunks (they share their successor's first item).
        let (mut lo, mut hi) = (0, self.n_chunks);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.chunk_word(mid, 4) as usize <= item {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut c = lo.saturating_sub(1);
        while c + 1 < self.n_chunks && self.chunk_items(c).end <= item {
            c += 1;
        }
        c
    }

    /// The meta format of chunk row `chunk`.
    pub fn chunk_format(&self, chunk: usize) -> MetaFormat {
        match self.chunk_word(chunk, 6) {
            0 => MetaFormat::Json,
            _ => MetaFormat::Msgpack,
        }
    }

    /// The id of global item `item`.
    pub fn id(&self, item: usize) -> &str {
        let start = match item.checked_sub(1) {
            Some(prev) => self.u64(self.id_ends, prev) as usize,
            None => 0,
        };
        let end = self.u64(self.id_ends, item) as usize;
        let text = &self.b()[self.id_text.start + start..self.id_text.start + end];
        // Checked UTF-8 with ends on char boundaries in `parse`.
        std::str::from_utf8(text).unwrap_or_default()
    }

    /// The frames of global item `item`, as global frame numbers.
    pub fn frames(&self, item: usize) -> Range<u64> {
        self.u64(self.frame_first, item)..self.u64(self.frame_first, item + 1)
    }

    /// The frame record of global frame `frame`.
    pub fn record(&self, frame: u64) -> FrameInfo {
        let k = frame as usize;
        let packed = self.u32(self.lens, k);
        FrameInfo {
            loc: self.u64(self.locs, k),
            pad: u64::from(packed & 3),
            length: u64::from(packed >> 2),
        }
    }

    /// Where the meta of global item `item` lies in its meta file.
    pub fn span(&self, item: usize, format: MetaFormat) -> ItemSpan {
        let meta = self.u64(self.spans, 2 * item)..self.u64(self.spans, 2 * item + 1);
        let frames = match format {
            MetaFormat::Json => 0..0,
            MetaFormat::Msgpack => {
                let at = self.u64(self.frames_at, item);
                let n = self.frames(item);
                at..at.saturating_add((n.end - n.start).saturating_mul(FRAME_RECORD_LEN as u64))
            }
        };
        ItemSpan { meta, frames }
    }

    /// The global item whose id is `id` (a binary search of the sorted ids).
    pub fn find(&self, id: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.n_items);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let item = self.u64(self.sorted, mid) as usize;
            match self.id(item).cmp(id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(item),
            }
        }
        None
    }

    /// Whether each item's label code stands for its value exactly: every
    /// value absent, null, a string or an integer ([`NO_LABEL`] then means
    /// absent or null).
    pub fn labels_exact(&self) -> bool {
        self.flags & FLAG_LABELS_EXACT != 0
    }

    /// Whether every item has at least one frame.
    pub fn all_have_frames(&self) -> bool {
        self.flags & FLAG_ALL_HAVE_FRAMES != 0
    }

    /// The meta_data key of the label column.
    pub fn label_key(&self) -> &str {
        std::str::from_utf8(&self.b()[self.key.clone()]).unwrap_or_default()
    }

    /// The label code of global item `item` ([`NO_LABEL`] for none).
    pub fn label_code(&self, item: usize) -> u32 {
        self.u32(self.labels, item)
    }

    /// Each label code's value, parsed from its JSON text.
    pub fn label_values(&self) -> Vec<Value> {
        let text = &self.b()[self.label_text.clone()];
        let mut start = 0;
        (0..self.n_labels)
            .map(|l| {
                let end = self.u64(self.label_ends, l) as usize;
                let value = JsonSerializer::parse_value(&text[start..end]).unwrap_or(Value::Null);
                start = end;
                value
            })
            .collect()
    }

    /// The [`MetaIndex`] of chunk row `chunk`, read from this file.
    pub fn meta_index(self: &Arc<Self>, chunk: usize) -> MetaIndex {
        let columns: Arc<dyn Columns> = Arc::clone(self) as Arc<dyn Columns>;
        MetaIndex::mapped(columns, chunk)
    }
}

impl Columns for DirIndex {
    fn chunk_items(&self, chunk: usize) -> Range<usize> {
        DirIndex::chunk_items(self, chunk)
    }

    fn chunk_format(&self, chunk: usize) -> MetaFormat {
        DirIndex::chunk_format(self, chunk)
    }

    fn item_id(&self, item: usize) -> &str {
        self.id(item)
    }

    fn item_frames(&self, item: usize) -> Range<u64> {
        self.frames(item)
    }

    fn item_span(&self, item: usize, format: MetaFormat) -> ItemSpan {
        self.span(item, format)
    }
}

/// Where the checksum lies in the header: it covers what comes before it
/// (magic, version, flags, counts) and the body.
const CRC_AT: usize = 72;

fn checksum(head: &[u8], body: &[u8]) -> u64 {
    let mut h = crc32fast::Hasher::new();
    h.update(head);
    h.update(body);
    u64::from(h.finalize())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}
