//! The order of an epoch: a seeded shuffle of the epoch's samples (as
//! `compose.rs` lists them), the split between the ranks of a distributed
//! job, and the batches.

use crate::rng::Rng;

/// How an epoch's samples are shuffled (seeded by the seed and the epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shuffle {
    /// Not at all: the samples in their order (evaluation).
    Off,
    /// All samples together: a new permutation each epoch.
    Items,
    /// By chunks: the chunks in a random order, the samples of each window
    /// of `window` chunks shuffled together, and each rank given its own
    /// chunks (see `shuffle.rs`), so that a node cache smaller than the
    /// data fetches each chunk about once per epoch.
    Chunks {
        /// Chunks whose samples are shuffled together.
        window: usize,
    },
}

/// The chunks shuffled together by [`Shuffle::Chunks`] when not said.
pub const CHUNK_WINDOW: usize = 4;

impl gulp_format::Choice for Shuffle {
    const OPTION: &'static str = "shuffle";
    const NAMES: &'static [&'static str] = &["items", "chunks", "none"];

    /// `items` (also `true`), `chunks` (windows of [`CHUNK_WINDOW`]) or
    /// `none` (also `false`).
    fn from_name(text: &str) -> Option<Shuffle> {
        match text {
            "items" | "true" => Some(Shuffle::Items),
            "chunks" => Some(Shuffle::Chunks {
                window: CHUNK_WINDOW,
            }),
            "none" | "false" => Some(Shuffle::Off),
            _ => None,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Shuffle::Items => "items",
            Shuffle::Chunks { .. } => "chunks",
            Shuffle::Off => "none",
        }
    }
}

gulp_format::choice_from_str!(Shuffle);

impl Shuffle {
    /// This shuffle with the chunk window `window`, when one is given:
    /// only a shuffle by chunks takes one, of at least 1 chunk.
    pub fn with_window(self, window: Option<usize>) -> Result<Shuffle, String> {
        match (self, window) {
            (shuffle, None) => Ok(shuffle),
            (Shuffle::Chunks { .. }, Some(0)) => {
                Err("chunk_window must be at least 1 chunk".into())
            }
            (Shuffle::Chunks { .. }, Some(window)) => Ok(Shuffle::Chunks { window }),
            (_, Some(_)) => Err("chunk_window goes with shuffle='chunks'".into()),
        }
    }

    /// Whether the samples are shuffled at all.
    pub fn is_on(&self) -> bool {
        !matches!(self, Shuffle::Off)
    }

    /// The window of a shuffle by chunks.
    pub fn chunk_window(&self) -> Option<usize> {
        match self {
            Shuffle::Chunks { window } => Some(*window),
            _ => None,
        }
    }
}

/// How items are ordered and split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    /// The shuffle of each epoch.
    pub shuffle: Shuffle,
    /// The seed of the shuffle and of every random draw.
    pub seed: u64,
    /// PyTorch's `drop_last`: drop the tail that does not divide among the
    /// ranks (`DistributedSampler`) and the last incomplete batch
    /// (`DataLoader`). Without it, ranks are padded by repeating samples
    /// from the start of the order (marked in [`crate::Batch::padding`]),
    /// and the last batch may be short: what an exact evaluation wants.
    /// `true` by default, the usual setting for training, where equal
    /// batches on every rank matter more.
    pub drop_last: bool,
    /// This process's rank, `0..world_size`.
    pub rank: usize,
    /// The number of processes sharing the epoch.
    pub world_size: usize,
}

impl Default for Order {
    fn default() -> Order {
        Order {
            shuffle: Shuffle::Items,
            seed: 0,
            drop_last: true,
            rank: 0,
            world_size: 1,
        }
    }
}

/// One sample of a rank's share of an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Index of the sample in the loader's numbering (an item, or one
    /// segment of an item; the sources one after another).
    pub sample: usize,
    /// Position in the epoch's global (padded) order: the key of the
    /// sample's random draws, so they do not depend on the rank or thread
    /// count.
    pub position: usize,
}

/// The key of the shuffle's random stream (after the seed and the epoch).
const SHUFFLE: u64 = 0x5348_5546; // "SHUF"

impl Order {
    /// The epoch's order of `n` samples before the split: `0..n`, shuffled
    /// when `shuffle`.
    pub fn permutation(&self, n: usize, epoch: u64) -> Vec<usize> {
        let mut order: Vec<usize> = (0..n).collect();
        self.arrange(&mut order, epoch);
        order
    }

    /// The shuffle of an epoch: puts its samples (as the epoch's
    /// composition lists them) in the epoch's order, a seeded permutation
    /// of `(seed, epoch)` when `shuffle`, else as they are. A function of
    /// its own, so that another shuffle can take the same composition.
    pub fn arrange<T>(&self, samples: &mut [T], epoch: u64) {
        if self.shuffle.is_on() {
            Rng::new(&[self.seed, epoch, SHUFFLE]).shuffle(samples);
        }
    }

    /// Samples per rank: `DistributedSampler`'s `num_samples`.
    pub fn per_rank(&self, n: usize) -> usize {
        let ws = self.world_size.max(1);
        if self.drop_last && !n.is_multiple_of(ws) {
            // ceil((n - ws) / ws), i.e. floor(n / ws).
            n.saturating_sub(ws).div_ceil(ws)
        } else {
            n.div_ceil(ws)
        }
    }

    /// This rank's samples of epoch `epoch` of `n` samples `0..n`, as
    /// `DistributedSampler` splits them: the order is cut (`drop_last`) or
    /// padded by repeating its start to a multiple of `world_size`, then
    /// every `world_size`-th sample from `rank` on.
    pub fn rank_slots(&self, n: usize, epoch: u64) -> Vec<Slot> {
        self.slots_from(&self.permutation(n, epoch), 0)
    }

    /// This rank's samples of the rest of an epoch whose global order is
    /// `order`, from global position `start` on (elastic resume: the
    /// positions before `start` were served by the ranks of another world
    /// size). The rest, positions `start..order.len()`, is split as
    /// [`Order::rank_slots`] splits a whole epoch: cut to a multiple of
    /// `world_size` (`drop_last`) or padded by repeating the order's start,
    /// every `world_size`-th position from `start + rank` on. `start = 0`
    /// is the whole epoch; for the world size that served `start = s *
    /// world_size` positions it is the same positions as the whole epoch's
    /// from slot `s` on.
    pub fn slots_from<T: Copy + TryInto<usize>>(&self, order: &[T], start: usize) -> Vec<Slot> {
        self.slots_iter(order, start).collect()
    }

    /// [`Order::slots_from`] one slot at a time (for a caller that keeps
    /// something else per slot, without the vector of slots).
    pub fn slots_iter<'a, T: Copy + TryInto<usize>>(
        &self,
        order: &'a [T],
        start: usize,
    ) -> impl ExactSizeIterator<Item = Slot> + 'a {
        let ws = self.world_size.max(1);
        let n = order.len();
        let end = if order.is_empty() {
            start
        } else {
            start + self.per_rank(n.saturating_sub(start)) * ws
        };
        let first = start + self.rank;
        let count = if end > first {
            (end - first).div_ceil(ws)
        } else {
            0
        };
        (0..count).map(move |k| {
            let position = first + k * ws;
            Slot {
                sample: order[position % n].try_into().unwrap_or(usize::MAX),
                position,
            }
        })
    }

    /// The number of batches of `batch_size` samples in `samples`.
    pub fn batches(&self, samples: usize, batch_size: usize) -> usize {
        let b = batch_size.max(1);
        if self.drop_last {
            samples / b
        } else {
            samples.div_ceil(b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(o: &Order, n: usize) -> Vec<usize> {
        o.rank_slots(n, 0).into_iter().map(|s| s.sample).collect()
    }

    #[test]
    fn ranks_split_like_distributed_sampler() {
        // DistributedSampler(range(10), num_replicas=3, shuffle=False):
        // padded to 12 with items 0, 1; rank r takes r, r+3, ...
        let o = |rank, drop_last| Order {
            shuffle: Shuffle::Off,
            drop_last,
            rank,
            world_size: 3,
            ..Order::default()
        };
        assert_eq!(items(&o(0, false), 10), [0, 3, 6, 9]);
        assert_eq!(items(&o(1, false), 10), [1, 4, 7, 0]);
        assert_eq!(items(&o(2, false), 10), [2, 5, 8, 1]);
        // drop_last: 9 items, 3 each.
        assert_eq!(items(&o(0, true), 10), [0, 3, 6]);
        assert_eq!(items(&o(2, true), 10), [2, 5, 8]);
        // Fewer items than ranks, padded by repetition.
        assert_eq!(items(&o(2, false), 2), [0]);
        assert_eq!(items(&o(2, true), 2), Vec::<usize>::new());
    }

    #[test]
    fn shuffles_depend_on_seed_and_epoch_only() {
        let o = Order::default();
        let a = o.permutation(100, 3);
        assert_eq!(a, o.permutation(100, 3));
        assert_ne!(a, o.permutation(100, 4));
        assert_ne!(a, Order { seed: 1, ..o }.permutation(100, 3));
        // The ranks of a world partition the epoch's order.
        let world: Vec<Vec<Slot>> = (0..4)
            .map(|rank| {
                Order {
                    rank,
                    world_size: 4,
                    ..o
                }
                .rank_slots(100, 3)
            })
            .collect();
        let mut seen: Vec<usize> = world.iter().flatten().map(|s| s.sample).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
        assert_eq!(world[1][0].sample, a[1]);
        assert_eq!(world[1][1].position, 5);
    }

    #[test]
    fn batch_counts_follow_drop_last() {
        let drop = Order::default();
        let keep = Order {
            drop_last: false,
            ..drop
        };
        assert_eq!(keep.batches(10, 4), 3);
        assert_eq!(drop.batches(10, 4), 2);
        assert_eq!(drop.batches(8, 4), 2);
        assert_eq!(keep.batches(0, 4), 0);
    }
}
