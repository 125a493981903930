//! The ids of a chunk meta and their frame counts, read without building the
//! meta model: what opening a directory needs.

use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use crate::serializer::MetaFormat;

/// Bytes of one record of a msgpack meta's frame table (`loc`, `pad`,
/// `length`, each a little-endian u64).
pub(crate) const FRAME_RECORD_LEN: usize = 24;

/// The ids of a chunk meta, in order, with the number of frames of each.
///
/// [`read_index`](crate::read_index) builds it from the bytes of a meta file much faster than
/// [`read_meta`](crate::read_meta) builds a [`ChunkMeta`](crate::ChunkMeta):
/// it allocates a few buffers per chunk rather than several per item. For a
/// file that `read_meta` accepts, the ids, their order and their frame counts
/// are exactly those of the `ChunkMeta` (for JSON, a repeated id keeps its
/// first position and the frame count of its last occurrence, as
/// `json.load` into an `OrderedDict` does).
#[derive(Debug, Clone)]
pub struct MetaIndex {
    format: MetaFormat,
    store: Store,
}

/// Where a [`MetaIndex`] keeps its columns.
#[derive(Debug, Clone)]
enum Store {
    /// Read from the meta file, held in memory.
    Owned(Owned),
    /// A chunk of a directory's index file ([`DirIndex`]), shared by every
    /// process that maps it.
    Mapped {
        index: Arc<dyn Columns>,
        /// The global numbers of the chunk's items.
        items: std::ops::Range<usize>,
        total_frames: u64,
    },
}

/// Per-item columns kept elsewhere (a directory's index file, see
/// `DirIndex`), by global item number.
pub(crate) trait Columns: std::fmt::Debug + Send + Sync {
    /// The global numbers of chunk row `chunk`'s items.
    fn chunk_items(&self, chunk: usize) -> std::ops::Range<usize>;
    /// The meta format of chunk row `chunk`.
    fn chunk_format(&self, chunk: usize) -> MetaFormat;
    /// The id of item `item`.
    fn item_id(&self, item: usize) -> &str;
    /// The frames of item `item`, as global frame numbers.
    fn item_frames(&self, item: usize) -> std::ops::Range<u64>;
    /// Where the meta of item `item` lies in its meta file.
    fn item_span(&self, item: usize, format: MetaFormat) -> ItemSpan;
}

#[derive(Debug, Clone, Default)]
struct Owned {
    /// Every id, concatenated.
    ids: String,
    /// The end of each id in `ids`.
    ends: Vec<usize>,
    /// The frame count of each item.
    frames: Vec<u64>,
    /// Where each item's meta lies in the file: `[start, end)` (see
    /// [`ItemSpan::meta`]).
    spans: Vec<[u64; 2]>,
    /// msgpack: where each item's first record lies in the frame table
    /// (empty for JSON, whose `frame_info` is inside the item's span).
    frames_at: Vec<u64>,
    total_frames: u64,
}

impl PartialEq for MetaIndex {
    /// Same format, and the same ids, frame counts and spans in the same
    /// order, wherever each keeps them.
    fn eq(&self, other: &MetaIndex) -> bool {
        self.format == other.format
            && self.len() == other.len()
            && (0..self.len()).all(|i| {
                self.id(i) == other.id(i)
                    && self.item_frames(i) == other.item_frames(i)
                    && self.item_span(i) == other.item_span(i)
            })
    }
}

impl Eq for MetaIndex {}

/// Where the meta of one item lies in its meta file, in bytes from the
/// file's start: what [`read_item`](crate::read_item) needs to parse that
/// item alone, without the rest of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemSpan {
    /// JSON: the item's `{"frame_info": ..., "meta_data": ...}` object;
    /// msgpack: its entry of the meta section (`[meta_data, metalayers]`).
    pub meta: std::ops::Range<u64>,
    /// msgpack: its records in the frame table (24 bytes a frame); JSON:
    /// empty, the `frame_info` being inside [`meta`](Self::meta).
    pub frames: std::ops::Range<u64>,
}

impl MetaIndex {
    /// Chunk row `chunk` of a directory's index file.
    pub(crate) fn mapped(index: Arc<dyn Columns>, chunk: usize) -> MetaIndex {
        let items = index.chunk_items(chunk);
        let total_frames = if items.is_empty() {
            0
        } else {
            index.item_frames(items.end - 1).end - index.item_frames(items.start).start
        };
        MetaIndex {
            format: index.chunk_format(chunk),
            store: Store::Mapped {
                index,
                items,
                total_frames,
            },
        }
    }

    /// The format of the meta file.
    pub fn format(&self) -> MetaFormat {
        self.format
    }

    /// Whether the columns are a directory index file's, shared through
    /// the page cache, rather than held in memory.
    pub fn is_mapped(&self) -> bool {
        matches!(self.store, Store::Mapped { .. })
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        match &self.store {
            Store::Owned(o) => o.ends.len(),
            Store::Mapped { items, .. } => items.len(),
        }
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total number of frames over all items.
    pub fn n_frames(&self) -> u64 {
        match &self.store {
            Store::Owned(o) => o.total_frames,
            Store::Mapped { total_frames, .. } => *total_frames,
        }
    }

    /// The id at position `index`.
    #[inline]
    pub fn id(&self, index: usize) -> Option<&str> {
        match &self.store {
            Store::Owned(o) => {
                let end = *o.ends.get(index)?;
                let start = match index.checked_sub(1) {
                    Some(prev) => o.ends[prev],
                    None => 0,
                };
                o.ids.get(start..end)
            }
            Store::Mapped {
                index: dir, items, ..
            } => (index < items.len()).then(|| dir.item_id(items.start + index)),
        }
    }

    /// The frame count of the item at position `index`.
    pub fn item_frames(&self, index: usize) -> Option<u64> {
        match &self.store {
            Store::Owned(o) => o.frames.get(index).copied(),
            Store::Mapped {
                index: dir, items, ..
            } => (index < items.len()).then(|| {
                let f = dir.item_frames(items.start + index);
                f.end - f.start
            }),
        }
    }

    /// Where the meta of the item at position `index` lies in the file.
    pub fn item_span(&self, index: usize) -> Option<ItemSpan> {
        let o = match &self.store {
            Store::Owned(o) => o,
            Store::Mapped {
                index: dir, items, ..
            } => {
                return (index < items.len())
                    .then(|| dir.item_span(items.start + index, self.format));
            }
        };
        let [start, end] = *o.spans.get(index)?;
        let frames = match o.frames_at.get(index) {
            Some(&at) => {
                let len = o.frames.get(index)?.checked_mul(FRAME_RECORD_LEN as u64)?;
                at..at.checked_add(len)?
            }
            None => 0..0,
        };
        Some(ItemSpan {
            meta: start..end,
            frames,
        })
    }

    /// The ids in order.
    pub fn ids(&self) -> Ids<'_> {
        Ids {
            index: self,
            next: 0,
            end: self.len(),
        }
    }

    /// The ids in order with their frame counts.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, u64)> {
        self.ids()
            .enumerate()
            .map(|(k, id)| (id, self.item_frames(k).unwrap_or(0)))
    }
}

/// The ids of a [`MetaIndex`] in order.
#[derive(Debug, Clone)]
pub struct Ids<'a> {
    index: &'a MetaIndex,
    next: usize,
    end: usize,
}

impl<'a> Iterator for Ids<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        if self.next >= self.end {
            return None;
        }
        let id = self.index.id(self.next).unwrap_or_default();
        self.next += 1;
        Some(id)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Ids<'_> {}

/// Builds a [`MetaIndex`], one id at a time, spotting repeated ids.
pub(crate) struct IndexBuilder {
    format: MetaFormat,
    index: Owned,
    /// Positions of the ids so far, hashed by id.
    seen: HashTable<usize>,
    hasher: foldhash::fast::RandomState,
}

impl IndexBuilder {
    pub(crate) fn new(format: MetaFormat, capacity: usize) -> IndexBuilder {
        IndexBuilder {
            format,
            index: Owned {
                ids: String::new(),
                ends: Vec::with_capacity(capacity),
                frames: Vec::with_capacity(capacity),
                spans: Vec::with_capacity(capacity),
                frames_at: Vec::new(),
                total_frames: 0,
            },
            seen: HashTable::with_capacity(capacity),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// The buffer the next id is appended to.
    pub(crate) fn arena(&mut self) -> &mut String {
        &mut self.index.ids
    }

    /// The id being built: what was appended to the arena since `start`.
    pub(crate) fn pending(&self, start: usize) -> &str {
        self.index.ids.get(start..).unwrap_or_default()
    }

    /// Ends the id appended to the arena since `start`, with `frames` frames
    /// and its meta at `span` of the file. If the id is new it is added at
    /// the end and `None` is returned; otherwise it is removed from the
    /// arena and its earlier position is returned.
    pub(crate) fn finish_id(&mut self, start: usize, frames: u64, span: [u64; 2]) -> Option<usize> {
        let Owned { ids, ends, .. } = &self.index;
        let id = ids.get(start..).unwrap_or_default();
        let hash = self.hasher.hash_one(id);
        let id_at = |i: usize| {
            let from = if i == 0 { 0 } else { ends[i - 1] };
            ids.get(from..ends[i]).unwrap_or_default()
        };
        let hasher = &self.hasher;
        match self
            .seen
            .entry(hash, |&i| id_at(i) == id, |&i| hasher.hash_one(id_at(i)))
        {
            Entry::Occupied(earlier) => {
                let earlier = *earlier.get();
                self.index.ids.truncate(start);
                Some(earlier)
            }
            Entry::Vacant(slot) => {
                slot.insert(ends.len());
                self.index.ends.push(self.index.ids.len());
                self.index.frames.push(frames);
                self.index.spans.push(span);
                None
            }
        }
    }

    /// Sets the frame count and span of the item at `position` (a repeated
    /// JSON id takes the value of its last occurrence).
    pub(crate) fn set_item(&mut self, position: usize, frames: u64, span: [u64; 2]) {
        if let Some(slot) = self.index.frames.get_mut(position) {
            *slot = frames;
        }
        if let Some(slot) = self.index.spans.get_mut(position) {
            *slot = span;
        }
    }

    /// Records where the last item's frame records start (msgpack).
    pub(crate) fn push_frames_at(&mut self, at: u64) {
        self.index.frames_at.push(at);
    }

    pub(crate) fn finish(mut self) -> MetaIndex {
        self.index.total_frames = self
            .index
            .frames
            .iter()
            .fold(0u64, |acc, &n| acc.saturating_add(n));
        MetaIndex {
            format: self.format,
            store: Store::Owned(self.index),
        }
    }
}
