//! The order of an epoch: a seeded shuffle of the epoch's samples (as
//! `compose.rs` lists them), the split between the ranks of a distributed
//! job, and the batches.

use crate::rng::Rng;

/// How items are ordered and split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    /// Shuffle the samples each epoch (seeded by `seed` and the epoch).
    pub shuffle: bool,
    /// With `shuffle`, shuffle by chunks: the chunks in a random order, the
    /// samples of each window of this many chunks shuffled together, and
    /// each rank given its own chunks (see `shuffle.rs`), so that a node
    /// cache smaller than the data fetches each chunk about once per epoch.
    /// `None` shuffles all samples together.
    pub chunk_window: Option<usize>,
    /// The seed of the shuffle and of every random draw.
    pub seed: u64,
    /// PyTorch's `drop_last`: drop the tail that does not divide among the
    /// ranks (`DistributedSampler`) and the last incomplete batch
    /// (`DataLoader`). Without it, ranks are padded by repeating items from
    /// the start of the order, and the last batch may be short. `false` by
    /// default, as in PyTorch (and every clip is served); Python's
    /// `gulp.ClipLoader` defaults to `drop_last=True`, the usual setting for
    /// training, where equal batches on every rank matter more.
    pub drop_last: bool,
    /// This process's rank, `0..world_size`.
    pub rank: usize,
    /// The number of processes sharing the epoch.
    pub world_size: usize,
}

impl Default for Order {
    fn default() -> Order {
        Order {
            shuffle: true,
            chunk_window: None,
            seed: 0,
            drop_last: false,
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
        if self.shuffle {
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
        let ws = self.world_size.max(1);
        let n = order.len();
        let end = start + self.per_rank(n.saturating_sub(start)) * ws;
        if order.is_empty() {
            return Vec::new();
        }
        (start + self.rank..end)
            .step_by(ws)
            .map(|position| Slot {
                sample: order[position % n].try_into().unwrap_or(usize::MAX),
                position,
            })
            .collect()
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
            shuffle: false,
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
        let keep = Order::default();
        let drop = Order {
            drop_last: true,
            ..keep
        };
        assert_eq!(keep.batches(10, 4), 3);
        assert_eq!(drop.batches(10, 4), 2);
        assert_eq!(drop.batches(8, 4), 2);
        assert_eq!(keep.batches(0, 4), 0);
    }
}
