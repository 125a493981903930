//! The loader's index of every frame record: 12 bytes a frame, so that a
//! rank holds the index of a million items of 30 frames in about 360 MB
//! rather than the parsed meta's 60 bytes and more a frame.

use std::collections::HashMap;

use gulp_format::FrameInfo;

/// Records as `[loc, pad, length]`: `loc` as a `u64` and `length << 2 |
/// pad` as a `u32` (a record under 1 GiB with a pad of 0 to 3, as every
/// well-formed record is); any other record is kept whole on the side, so
/// that reading it fails exactly as reading it from the meta fails.
#[derive(Debug, Default)]
pub(crate) struct FrameTable {
    locs: Vec<u64>,
    packed: Vec<u32>,
    other: HashMap<usize, FrameInfo>,
}

/// `packed` of a record kept on the side.
const OTHER: u32 = u32::MAX;

impl FrameTable {
    /// A table for `frames` records (the directory's count from its index,
    /// so that the vectors are allocated once, not grown by doubling).
    pub(crate) fn with_capacity(frames: usize) -> FrameTable {
        FrameTable {
            locs: Vec::with_capacity(frames),
            packed: Vec::with_capacity(frames),
            other: HashMap::new(),
        }
    }

    /// Appends an item's records; returns the index of its first.
    pub(crate) fn push_item(&mut self, frame_info: &[FrameInfo]) -> usize {
        let first = self.locs.len();
        for fi in frame_info {
            let packed = match (u32::try_from(fi.length), u32::try_from(fi.pad)) {
                (Ok(length), Ok(pad)) if length < (1 << 30) - 1 && pad <= 3 => length << 2 | pad,
                _ => {
                    self.other.insert(self.locs.len(), *fi);
                    OTHER
                }
            };
            self.locs.push(fi.loc);
            self.packed.push(packed);
        }
        first
    }

    /// Record `index` of the table.
    pub(crate) fn get(&self, index: usize) -> FrameInfo {
        match self.packed[index] {
            OTHER => self.other[&index],
            packed => FrameInfo {
                loc: self.locs[index],
                pad: u64::from(packed & 3),
                length: u64::from(packed >> 2),
            },
        }
    }

    /// Shrinks the vectors to their length (after the last item).
    pub(crate) fn shrink(&mut self) {
        self.locs.shrink_to_fit();
        self.packed.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_as_they_went_in() {
        let records = [
            FrameInfo {
                loc: 0,
                pad: 1,
                length: 100,
            },
            FrameInfo {
                loc: u64::MAX - 7,
                pad: 3,
                length: (1 << 30) - 2,
            },
            // Kept on the side: too long, a pad out of the rules.
            FrameInfo {
                loc: 9,
                pad: 0,
                length: 1 << 31,
            },
            FrameInfo {
                loc: 10,
                pad: 7,
                length: 12,
            },
        ];
        let mut table = FrameTable::default();
        assert_eq!(table.push_item(&records[..1]), 0);
        assert_eq!(table.push_item(&records[1..]), 1);
        table.shrink();
        for (k, fi) in records.iter().enumerate() {
            assert_eq!(table.get(k), *fi);
        }
        assert_eq!(table.other.len(), 2);
    }
}
