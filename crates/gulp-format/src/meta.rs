//! The chunk meta model: id → `{frame_info, meta_data}` in insertion order.

use indexmap::IndexMap;

use crate::layout::FrameInfo;
use crate::media::{AUDIO_KEY, Audio, FRAME_TIMES_KEY, FrameTimes};
use crate::meta_data::MetaData;
use crate::value::{Map, Value};

/// The meta of one item (one video or image) in a chunk.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ItemMeta {
    /// Where each frame's record lies in the data file, in frame order.
    pub frame_info: Vec<FrameInfo>,
    /// One entry per `append` of this id; readers use element 0, as GulpIO does.
    /// Read from a msgpack meta, it is decoded on first access ([`MetaData`]).
    pub meta_data: MetaData,
    /// CRC-32 of each frame's JPEG bytes (msgpack meta only): empty, or one per
    /// frame.
    pub frame_checksums: Vec<u32>,
    /// Named per-item metalayers (msgpack meta only), e.g. frame shapes, in the
    /// manner of Caterva's metalayers. Not part of the JSON meta.
    pub metalayers: Map,
    /// Each frame's presentation time, when the ingest recorded them
    /// (`docs/format.md` §8.1; both formats).
    pub frame_times: Option<FrameTimes>,
    /// The item's sound, when its ingest kept sound (§8.2; both formats).
    pub audio: Option<Audio>,
}

impl ItemMeta {
    /// The `meta_data` entry readers see: the first one, as in gulpio2.
    pub fn first_meta_data(&self) -> Option<&Value> {
        self.meta_data.first()
    }

    /// The item's frame times and audio as (key, value), in the order they
    /// are written: the extra item keys of a JSON meta, the extra
    /// metalayers of a msgpack one (`docs/format.md` §8).
    pub(crate) fn media_entries(&self) -> impl Iterator<Item = (&'static str, Value)> + '_ {
        let times = self
            .frame_times
            .as_ref()
            .map(|t| (FRAME_TIMES_KEY, t.to_value()));
        let audio = self.audio.as_ref().map(|a| (AUDIO_KEY, a.to_value()));
        times.into_iter().chain(audio)
    }

    /// The audio track, if the item has one.
    pub fn audio_track(&self) -> Option<&crate::media::AudioTrack> {
        self.audio.as_ref().and_then(Audio::track)
    }

    /// What keeps this item from being written: frame times whose count
    /// is not the frame count.
    pub fn media_problem(&self) -> Option<String> {
        match &self.frame_times {
            Some(FrameTimes::List(t)) if t.len() != self.frame_info.len() => Some(format!(
                "{} frame_times for {} frames",
                t.len(),
                self.frame_info.len()
            )),
            _ => None,
        }
    }
}

/// The meta of one chunk: items keyed by string id, in insertion order.
///
/// The JSON form of a chunk meta is exactly this map (see `docs/format.md`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChunkMeta {
    items: IndexMap<String, ItemMeta, foldhash::fast::RandomState>,
}

impl ChunkMeta {
    /// An empty chunk meta (`{}`).
    pub fn new() -> ChunkMeta {
        ChunkMeta::default()
    }

    /// An empty chunk meta with room for `n` items.
    pub fn with_capacity(n: usize) -> ChunkMeta {
        ChunkMeta {
            items: IndexMap::with_capacity_and_hasher(n, Default::default()),
        }
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Total number of frames over all items.
    pub fn n_frames(&self) -> usize {
        self.items.values().map(|item| item.frame_info.len()).sum()
    }

    /// The item with this id.
    pub fn get(&self, id: &str) -> Option<&ItemMeta> {
        self.items.get(id)
    }

    /// The item with this id, mutably.
    pub fn get_mut(&mut self, id: &str) -> Option<&mut ItemMeta> {
        self.items.get_mut(id)
    }

    /// Whether an item with this id exists.
    pub fn contains(&self, id: &str) -> bool {
        self.items.contains_key(id)
    }

    /// The item at position `index` in insertion order.
    pub fn get_index(&self, index: usize) -> Option<(&str, &ItemMeta)> {
        self.items
            .get_index(index)
            .map(|(id, item)| (id.as_str(), item))
    }

    /// The position of an id in insertion order.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.items.get_index_of(id)
    }

    /// Items in insertion order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &ItemMeta)> {
        self.items.iter().map(|(id, item)| (id.as_str(), item))
    }

    /// Ids in insertion order.
    pub fn ids(&self) -> impl ExactSizeIterator<Item = &str> {
        self.items.keys().map(String::as_str)
    }

    /// Records one `append` as GulpIO does: the id is created at the end if it
    /// is new; `meta_data` is pushed onto its list; the frames are added to its
    /// `frame_info` (and their checksums, if given, to `frame_checksums`).
    pub fn append(
        &mut self,
        id: &str,
        meta_data: Value,
        frames: impl IntoIterator<Item = FrameInfo>,
    ) -> &mut ItemMeta {
        let item = self.items.entry(id.to_owned()).or_default();
        item.meta_data.push(meta_data);
        item.frame_info.extend(frames);
        item
    }

    /// Inserts or replaces a whole item, keeping the position of an existing id.
    pub fn insert(&mut self, id: String, item: ItemMeta) -> Option<ItemMeta> {
        self.items.insert(id, item)
    }

    /// Adds an item with a new id at the end; `false` (and no change) if the
    /// id is already there.
    pub(crate) fn insert_new(&mut self, id: &str, item: ItemMeta) -> bool {
        match self.items.entry(id.to_owned()) {
            indexmap::map::Entry::Vacant(slot) => {
                slot.insert(item);
                true
            }
            indexmap::map::Entry::Occupied(_) => false,
        }
    }

    /// The end of the last record of the last item — the data file size that
    /// gulpio2's sanity check expects — or `None` for an empty chunk.
    pub fn last_record_end(&self) -> Option<u64> {
        self.items
            .last()
            .and_then(|(_, item)| item.frame_info.last())
            .and_then(FrameInfo::end)
    }

    /// Refuses a meta that would not read back: an item whose frame times
    /// are not one per frame.
    pub(crate) fn check_media(&self) -> crate::Result<()> {
        for (id, item) in self.iter() {
            if let Some(problem) = item.media_problem() {
                return Err(
                    crate::ErrorKind::Unrepresentable(format!("item {id:?}: {problem}")).into(),
                );
            }
        }
        Ok(())
    }

    /// The largest `loc + length` over every record, frames and audio (0 for
    /// no records), i.e.
    /// the data file size the meta needs; `None` on overflow.
    pub fn data_extent(&self) -> Option<u64> {
        let mut extent = 0u64;
        for item in self.items.values() {
            for fi in item
                .frame_info
                .iter()
                .chain(item.audio_track().map(|t| &t.record))
            {
                extent = extent.max(fi.end()?);
            }
        }
        Some(extent)
    }
}

impl<'a> IntoIterator for &'a ChunkMeta {
    type Item = (&'a String, &'a ItemMeta);
    type IntoIter = indexmap::map::Iter<'a, String, ItemMeta>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl IntoIterator for ChunkMeta {
    type Item = (String, ItemMeta);
    type IntoIter = indexmap::map::IntoIter<String, ItemMeta>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl FromIterator<(String, ItemMeta)> for ChunkMeta {
    fn from_iter<I: IntoIterator<Item = (String, ItemMeta)>>(iter: I) -> ChunkMeta {
        ChunkMeta {
            items: iter.into_iter().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_id_appended_twice_merges_as_gulpio() {
        let mut meta = ChunkMeta::new();
        meta.append("A", Value::from("first"), [FrameInfo::for_jpeg(0, 629)]);
        meta.append("B", Value::from("b"), [FrameInfo::for_jpeg(632, 629)]);
        meta.append("A", Value::from("second"), [FrameInfo::for_jpeg(1264, 629)]);
        assert_eq!(meta.ids().collect::<Vec<_>>(), ["A", "B"]);
        let a = meta.get("A").unwrap();
        assert_eq!(a.meta_data, [Value::from("first"), Value::from("second")]);
        assert_eq!(a.first_meta_data(), Some(&Value::from("first")));
        assert_eq!(
            a.frame_info.iter().map(|f| f.loc).collect::<Vec<_>>(),
            [0, 1264]
        );
        // gulpio2's sanity check looks at the last key only, so it sees B's end.
        assert_eq!(meta.last_record_end(), Some(1264));
        assert_eq!(meta.data_extent(), Some(1896));
        assert_eq!(meta.n_frames(), 3);
    }
}
