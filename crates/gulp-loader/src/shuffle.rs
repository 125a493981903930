//! The block shuffle by chunks (`shuffle="chunks"`): an epoch order in which
//! each rank reads few chunks at a time, so that a node cache smaller than
//! the dataset fetches each byte about once per epoch.
//!
//! 1. The samples are grouped by chunk, and the chunks put in a random order.
//! 2. That order is cut into windows of `window` chunks, and the samples of
//!    each window are shuffled together.
//! 3. The result `S` is laid out for `world_size` ranks: rank `r` serves
//!    the `r`-th of `world_size` equal spans of `S`. The epoch's global
//!    order `G` interleaves the spans (`G[i * world_size + r] = S[r * L +
//!    i]`, the tail that does not divide left in place), so that the usual
//!    split (rank `r` serves positions `r, r + world_size, ...`; see
//!    [`Order::slots_from`](crate::Order::slots_from)) gives each rank its
//!    span, and resuming from a global position works as with any order.
//!
//! A rank then reads its chunks `window` at a time, each within one stretch
//! of its batches; a batch mixes the items of `window` chunks only. What
//! that costs in batch diversity is measured in `docs/loader.md`
//! ("Shuffling by chunks"). An epoch resumed on another world size is split
//! between the new ranks position by position: correct, but without the
//! locality for the rest of that epoch.

use crate::rng::Rng;

/// The key of the chunks' permutation (after the seed and the epoch).
const CHUNKS: u64 = 0x4348_554e; // "CHUN"
/// The key of a window's shuffle (then its number).
const WINDOW: u64 = 0x5749_4e44; // "WIND"

/// Puts `samples` in the order of a block shuffle by chunks of `(seed,
/// epoch)`, laid out for `world_size` ranks (see the module's
/// documentation). `chunk` names the chunk a sample is read from; the
/// samples of one chunk keep their relative order before the window's
/// shuffle, so the result depends only on the seed, the epoch, the world
/// size and the list given.
pub(crate) fn block_shuffle<T: Copy, K: Ord + Copy>(
    samples: &mut [T],
    chunk: impl Fn(&T) -> K,
    window: usize,
    seed: u64,
    epoch: u64,
    world_size: usize,
) {
    if samples.is_empty() {
        return;
    }
    let window = window.max(1);
    // 1. The chunks, each a run of consecutive samples, in a random order.
    samples.sort_by_key(|s| chunk(s));
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for i in 1..=samples.len() {
        if i == samples.len() || chunk(&samples[i]) != chunk(&samples[start]) {
            runs.push((start, i));
            start = i;
        }
    }
    Rng::new(&[seed, epoch, CHUNKS]).shuffle(&mut runs);
    // 2. Windows of `window` chunks, each shuffled as a whole.
    let mut order: Vec<T> = Vec::with_capacity(samples.len());
    for (w, group) in runs.chunks(window).enumerate() {
        let from = order.len();
        for &(a, b) in group {
            order.extend_from_slice(&samples[a..b]);
        }
        Rng::new(&[seed, epoch, WINDOW, w as u64]).shuffle(&mut order[from..]);
    }
    // 3. One span of `order` per rank, interleaved.
    let ws = world_size.max(1);
    let span = order.len() / ws;
    for r in 0..ws {
        for i in 0..span {
            samples[i * ws + r] = order[r * span + i];
        }
    }
    let laid = span * ws;
    samples[laid..].copy_from_slice(&order[laid..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Order;

    /// `n` samples, `per` per chunk: sample `s` is in chunk `s / per`.
    fn shuffled(n: usize, per: usize, window: usize, epoch: u64, ws: usize) -> Vec<usize> {
        let mut s: Vec<usize> = (0..n).collect();
        block_shuffle(&mut s, |&x| x / per, window, 7, epoch, ws);
        s
    }

    #[test]
    fn it_is_a_permutation_fixed_by_seed_epoch_and_world_size() {
        let a = shuffled(1000, 10, 3, 0, 4);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
        assert_eq!(a, shuffled(1000, 10, 3, 0, 4));
        assert_ne!(a, shuffled(1000, 10, 3, 1, 4));
        assert_ne!(a, shuffled(1000, 10, 3, 0, 2));
        assert_ne!(a, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn each_rank_reads_window_chunks_at_a_time() {
        // 40 chunks of 25, windows of 2, 4 ranks: each rank's 250 samples
        // come from about 10 chunks, 2 at a time.
        let (n, per, window, ws) = (1000, 25, 2, 4);
        let g = shuffled(n, per, window, 3, ws);
        for rank in 0..ws {
            let order = Order {
                rank,
                world_size: ws,
                drop_last: true,
                ..Order::default()
            };
            let mine: Vec<usize> = order
                .slots_from(&g, 0)
                .into_iter()
                .map(|s| g[s.position] / per)
                .collect();
            let mut chunks = mine.clone();
            chunks.sort_unstable();
            chunks.dedup();
            // Its span cuts at most two windows.
            assert!(chunks.len() <= n / per / ws + 2 * window, "{chunks:?}");
            // Any stretch of 25 consecutive samples touches at most two
            // windows' chunks.
            for stretch in mine.windows(25) {
                let mut c = stretch.to_vec();
                c.sort_unstable();
                c.dedup();
                assert!(c.len() <= 2 * window, "{c:?}");
            }
        }
        // With windows of one chunk, a chunk's samples are consecutive.
        let one = shuffled(100, 10, 1, 0, 1);
        for run in one.chunks(10) {
            assert!(run.iter().all(|&s| s / 10 == run[0] / 10), "{run:?}");
        }
    }

    #[test]
    fn the_ranks_cover_the_epoch_once_and_the_tail_stays_in_place() {
        // 103 samples on 4 ranks: 100 laid out in spans of 25, 3 in the tail.
        let g = shuffled(103, 7, 2, 0, 4);
        let mut seen: Vec<usize> = (0..4)
            .flat_map(|rank| {
                let order = Order {
                    rank,
                    world_size: 4,
                    drop_last: true,
                    ..Order::default()
                };
                order.slots_from(&g, 0).into_iter().map(|s| g[s.position])
            })
            .collect();
        assert_eq!(seen.len(), 100);
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 100);
    }
}
