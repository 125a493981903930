//! Fetching ahead from a node cache. The order of a pass is known when it
//! starts, so a thread of its own fetches what the next batches read, in
//! the order the batches need it and a bounded number of batches ahead of
//! the consumer, while the decoding threads work on earlier batches: the
//! byte ranges of the frames their clips decode, or — for a chunk the
//! cache's fetch policy takes whole — the chunk, opened (fetched into the
//! cache). Each chunk is released after the last batch of the pass that
//! reads it, so that the cache may evict it. Local directories and
//! directories without a cache are not scheduled: their chunks stay open.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::catalog::{Catalog, ChunkKey};

/// The chunks of one pass's batches, and how far the consumer is.
#[derive(Debug)]
pub(crate) struct Schedule {
    /// The pass's first batch (batch `first + k` is `per_batch[k]`).
    first: usize,
    /// Per batch, the cached chunks it reads (each once).
    per_batch: Vec<Vec<ChunkKey>>,
    /// Per batch, the bytes of the ranges its clips read (counted when
    /// they are queued for fetching).
    ranged: Vec<AtomicU64>,
    /// Per chunk, the batches still to make that read it.
    uses: Mutex<HashMap<ChunkKey, usize>>,
    /// The size of each chunk fetched whole, and the bytes the loader may
    /// hold ahead of the chunks the consumer's batch reads (`None`: no
    /// limit).
    sizes: HashMap<ChunkKey, u64>,
    budget: Option<u64>,
    /// The batch the consumer waits for next.
    next: Mutex<usize>,
    /// Chunks released so far (room made in the cache).
    released: AtomicUsize,
    /// Signalled when the consumer moves or a chunk is released.
    moved: Condvar,
}

impl Schedule {
    /// The schedule of batches `first..` reading `per_batch`, chunks of
    /// `sizes`, at most `budget` bytes of them held ahead of the chunks the
    /// consumer's batch reads (but one chunk ahead whatever its size);
    /// `None` when they read no cached chunk.
    pub(crate) fn new(
        first: usize,
        per_batch: Vec<Vec<ChunkKey>>,
        sizes: HashMap<ChunkKey, u64>,
        budget: Option<u64>,
    ) -> Option<Schedule> {
        let mut uses: HashMap<ChunkKey, usize> = HashMap::new();
        for key in per_batch.iter().flatten() {
            *uses.entry(*key).or_default() += 1;
        }
        (!uses.is_empty()).then(|| Schedule {
            first,
            ranged: per_batch.iter().map(|_| AtomicU64::new(0)).collect(),
            per_batch,
            uses: Mutex::new(uses),
            sizes,
            budget,
            next: Mutex::new(first),
            released: AtomicUsize::new(0),
            moved: Condvar::new(),
        })
    }

    /// Batch `batch` is made (or failed): the chunks no later batch of the
    /// pass reads are released.
    pub(crate) fn done(&self, catalog: &Catalog, batch: usize) {
        let Some(keys) = batch
            .checked_sub(self.first)
            .and_then(|k| self.per_batch.get(k))
        else {
            return;
        };
        let mut uses = self.uses.lock().unwrap_or_else(PoisonError::into_inner);
        for key in keys {
            if let Some(n) = uses.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    uses.remove(key);
                    catalog.release(*key);
                    self.released.fetch_add(1, Ordering::Relaxed);
                    self.moved.notify_all();
                }
            }
        }
    }

    /// The consumer now waits for batch `next`.
    pub(crate) fn consumed(&self, next: usize) {
        *self.next.lock().unwrap_or_else(PoisonError::into_inner) = next;
        self.moved.notify_all();
    }

    /// Wakes the threads waiting on the schedule (to see `cancel`).
    pub(crate) fn wake(&self) {
        let _guard = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        self.moved.notify_all();
    }

    /// Whether a batch of the pass still to be made reads chunk `key`
    /// (the pass holds it open).
    pub(crate) fn holds(&self, key: ChunkKey) -> bool {
        self.uses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(&key)
    }

    /// Whether a batch of the pass still to be made reads any chunk.
    fn holds_any(&self) -> bool {
        !self
            .uses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// Fetches chunk `key` whole into the node cache without holding it
    /// (the next pass's first chunk), once the cache has room: tried again
    /// after each chunk this pass releases, until it holds none or `cancel`
    /// is set. A failure is left to the pass that reads the chunk.
    pub(crate) fn warm_when_room(&self, catalog: &Catalog, key: ChunkKey, cancel: &AtomicBool) {
        loop {
            // Read before the try: a release between a try that finds no
            // room and the wait is seen by the wait.
            let released = self.released.load(Ordering::Relaxed);
            let held = self.holds_any();
            if !matches!(catalog.warm(key), Ok(false)) || !held {
                return;
            }
            let waited = self.wait_while(cancel, |_| {
                self.released.load(Ordering::Relaxed) == released && self.holds_any()
            });
            if waited.is_none() {
                return;
            }
        }
    }

    /// Whether the pass fetches some chunk whole (not by ranges).
    pub(crate) fn fetches_whole(&self) -> bool {
        self.sizes.values().any(|&size| size > 0)
    }

    /// Releases every chunk of the pass (at its end, or when it is
    /// abandoned midway).
    pub(crate) fn release_all(&self, catalog: &Catalog) {
        self.uses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        for key in self.per_batch.iter().flatten() {
            catalog.release(*key);
        }
    }

    /// What batches `from..=to` hold ahead of the chunks batch `from` reads
    /// (those are in use): the bytes of the ranges their clips read, the
    /// bytes of the other distinct chunks fetched whole that they read, and
    /// how many such chunks there are.
    fn held_ahead(&self, from: usize, to: usize) -> (u64, u64, usize) {
        let start = from.saturating_sub(self.first);
        let end = (to + 1)
            .saturating_sub(self.first)
            .min(self.per_batch.len());
        let ranges: u64 = self.ranged[start.min(end)..end]
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .sum();
        let in_use = self.per_batch.get(start).map_or(&[][..], Vec::as_slice);
        let mut keys: Vec<ChunkKey> = self.per_batch[start.min(end)..end]
            .iter()
            .flatten()
            .filter(|k| !in_use.contains(k))
            .copied()
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let chunks: u64 = keys
            .iter()
            .map(|k| self.sizes.get(k).copied().unwrap_or(0))
            .sum();
        (ranges, chunks, keys.len())
    }

    /// Whether what batch `batch` reads may be fetched while the consumer
    /// waits for batch `next`: it is fewer than `ahead` batches beyond it,
    /// and the batches up to it hold at most the budget ahead of the chunks
    /// in use — or one chunk fetched whole, whatever its size, beside ranges
    /// within the budget.
    fn within_reach(&self, next: usize, batch: usize, ahead: usize) -> bool {
        if batch >= next + ahead {
            return false;
        }
        if batch <= next {
            return true;
        }
        let budget = self.budget.unwrap_or(u64::MAX);
        let (ranges, chunk_bytes, chunks) = self.held_ahead(next, batch);
        ranges.saturating_add(chunk_bytes) <= budget || (chunks == 1 && ranges <= budget)
    }

    /// Waits while `blocked(next)` holds for the consumer's next batch, in
    /// steps of 50 ms so that `cancel` is seen; the lock on the consumer's
    /// batch, or `None` once cancelled.
    fn wait_while(
        &self,
        cancel: &AtomicBool,
        mut blocked: impl FnMut(usize) -> bool,
    ) -> Option<MutexGuard<'_, usize>> {
        let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        while blocked(*next) {
            if cancel.load(Ordering::Relaxed) {
                return None;
            }
            next = self
                .moved
                .wait_timeout(next, Duration::from_millis(50))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Some(next)
    }

    /// Fetches what each batch of the pass reads, batch after batch, at
    /// most `ahead` batches beyond the consumer, until the pass ends or
    /// `cancel` is set: the ranges of the clips `clips(batch)` lists (each
    /// with the bytes it reads), each fetched by `fetch`, and the chunks
    /// fetched whole, each opened in the order of the batches that first
    /// read it. When the cache has no room for the next chunk (the chunks
    /// it holds are all in use), it waits for one to be released, and gives
    /// up on a chunk whose batch the consumer has reached (its decoding
    /// thread then reads it around the cache). What fails to be fetched is
    /// left to the decoding thread that needs it, which reports the error.
    ///
    /// The clips are fetched in the order the pass decodes them by
    /// `fetchers` threads, a clip each at a time: a bounded number of
    /// requests in flight, which a store serves roughly in the order they
    /// came, so that the first clips of the pass arrive first (all of the
    /// first batches' requests at once would each take as long as all of
    /// them). The clips of a batch the consumer has passed are skipped.
    pub(crate) fn fetch_ahead<J: Send>(
        &self,
        catalog: &Catalog,
        ahead: usize,
        fetchers: usize,
        cancel: &AtomicBool,
        clips: impl Fn(usize) -> Vec<(J, u64)>,
        fetch: impl Fn(&J) + Sync,
    ) {
        std::thread::scope(|scope| {
            let (jobs, queue) = crossbeam_channel::unbounded::<(usize, J)>();
            for _ in 0..fetchers.max(1) {
                let (queue, fetch) = (queue.clone(), &fetch);
                scope.spawn(move || {
                    for (k, clip) in queue {
                        if cancel.load(Ordering::Relaxed) {
                            break;
                        }
                        let next = *self.next.lock().unwrap_or_else(PoisonError::into_inner);
                        if self.first + k < next {
                            continue;
                        }
                        fetch(&clip);
                    }
                });
            }
            drop(queue);
            self.fetch_each(catalog, ahead, cancel, |k, batch| {
                // The bytes count as the clips are queued, so that the
                // budget holds for the batches queued but not yet fetched.
                for (clip, bytes) in clips(batch) {
                    self.ranged[k].fetch_add(bytes, Ordering::Relaxed);
                    // The fetchers end with the pass, so the queue is open.
                    let _ = jobs.send((k, clip));
                }
            });
        });
    }

    /// [`fetch_ahead`](Self::fetch_ahead)'s walk over the batches:
    /// `ranges(k, batch)` starts the fetch of batch `batch`'s ranges (the
    /// pass's `k`-th), then its chunks fetched whole are opened.
    fn fetch_each(
        &self,
        catalog: &Catalog,
        ahead: usize,
        cancel: &AtomicBool,
        mut ranges: impl FnMut(usize, usize),
    ) {
        let mut seen = std::collections::HashSet::new();
        for (k, keys) in self.per_batch.iter().enumerate() {
            let batch = self.first + k;
            // Wait until the batch is within reach of the consumer, and what
            // the batches from the consumer's to this one hold beyond the
            // chunks in use fits the budget; one chunk ahead always may be
            // fetched (whether it fits is the cache's to say), so that a
            // chunk is fetched while the one before it is decoded.
            let Some(next) = self.wait_while(cancel, |next| !self.within_reach(next, batch, ahead))
            else {
                return;
            };
            drop(next);
            ranges(k, batch);
            for key in keys {
                if cancel.load(Ordering::Relaxed) {
                    return;
                }
                if catalog.reads_ranges(*key) {
                    continue;
                }
                if !self.holds(*key) || !seen.insert(*key) {
                    continue;
                }
                loop {
                    let released = self.released.load(Ordering::Relaxed);
                    let opened = catalog.prefetch(*key);
                    if matches!(opened, Ok(true)) && !self.holds(*key) {
                        // Its last batch was made, and the chunk released,
                        // while it was being opened: opened after its
                        // release, it would stay held (its room in the
                        // cache lost) until the pass ends.
                        catalog.release(*key);
                    }
                    if !matches!(opened, Ok(false)) {
                        break;
                    }
                    // No room: wait for a release, until the batch's turn.
                    let Some(next) = self.wait_while(cancel, |next| {
                        self.released.load(Ordering::Relaxed) == released && next <= batch
                    }) else {
                        return;
                    };
                    if *next > batch {
                        break;
                    }
                }
            }
        }
    }
}

/// Makes chunks whole in the node cache behind the epochs: the `auto`
/// fetch policy's chunks read before and not whole yet
/// ([`gulp_io::ChunkEntry::fill_pending`]). An epoch reads the ranges it
/// decodes as the first did, and a thread of the loader fetches the
/// missing bytes of such chunks, one chunk at a time in the order the
/// epoch first reads them, so that later epochs read whole chunks from the
/// cache. No epoch waits for bytes it does not decode: on long items, of
/// which a clip decodes a few per cent, waiting for the whole chunks made
/// the second epoch several times slower than the first.
#[derive(Debug, Default)]
pub(crate) struct Filler {
    state: Mutex<FillerState>,
}

#[derive(Debug, Default)]
struct FillerState {
    /// The filling thread's queue, once it is started.
    queue: Option<crossbeam_channel::Sender<ChunkKey>>,
    /// The chunks queued (each once, unless its fill failed).
    queued: HashSet<ChunkKey>,
}

impl Filler {
    /// Queues chunk `key` to be made whole, unless it was already; `start`
    /// starts the thread that fills what the queue gives, on the first
    /// call.
    pub(crate) fn queue(
        &self,
        key: ChunkKey,
        start: impl FnOnce(crossbeam_channel::Receiver<ChunkKey>) -> bool,
    ) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.queued.contains(&key) {
            return;
        }
        if state.queue.is_none() {
            let (queue, chunks) = crossbeam_channel::unbounded();
            if !start(chunks) {
                return;
            }
            state.queue = Some(queue);
        }
        if let Some(queue) = &state.queue
            && queue.send(key).is_ok()
        {
            state.queued.insert(key);
        }
    }

    /// The fill of chunk `key` failed or found no room: a later pass may
    /// queue it again (the pass reads its ranges either way).
    pub(crate) fn forget(&self, key: ChunkKey) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .queued
            .remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks 0, 1 and 2 of 10 bytes, each read by two batches in turn.
    fn schedule(budget: Option<u64>) -> Schedule {
        let per_batch = (0..6u32).map(|b| vec![(0, b / 2)]).collect();
        let sizes = (0..3u32).map(|c| ((0, c), 10)).collect();
        Schedule::new(0, per_batch, sizes, budget).expect("batches read chunks")
    }

    #[test]
    fn one_chunk_ahead_whatever_the_budget() {
        let s = schedule(Some(5));
        // The consumer in chunk 0: chunk 1 may be fetched though it is
        // larger than the budget; chunk 2 (20 bytes ahead) may not.
        assert!(s.within_reach(0, 1, 8));
        assert!(s.within_reach(0, 2, 8));
        assert!(s.within_reach(0, 3, 8));
        assert!(!s.within_reach(0, 4, 8));
        // Once the consumer is in chunk 1, chunk 2 is the one ahead.
        assert!(s.within_reach(2, 4, 8));
        assert_eq!(s.held_ahead(2, 5), (0, 10, 1));
    }

    #[test]
    fn the_budget_counts_the_chunks_beyond_those_in_use() {
        let s = schedule(Some(20));
        assert_eq!(s.held_ahead(0, 5), (0, 20, 2));
        assert!(s.within_reach(0, 5, 8));
        let s = schedule(Some(19));
        assert!(!s.within_reach(0, 4, 8));
        // Never more than `ahead` batches beyond the consumer.
        let s = schedule(None);
        assert!(s.within_reach(0, 5, 6));
        assert!(!s.within_reach(0, 5, 5));
        assert!(s.within_reach(3, 2, 1));
    }

    #[test]
    fn ranges_ahead_stay_within_the_budget() {
        // Batches that read only ranges (no chunk fetched whole): the
        // one-chunk rule does not let their bytes past the budget.
        let per_batch = (0..4).map(|_| vec![(0, 0)]).collect();
        let sizes = [((0, 0), 0)].into_iter().collect();
        let s = Schedule::new(0, per_batch, sizes, Some(100)).expect("batches read chunks");
        for k in 0..4 {
            s.ranged[k].store(60, Ordering::Relaxed);
        }
        assert!(s.within_reach(0, 0, 8));
        assert!(!s.within_reach(0, 1, 8), "120 bytes of ranges ahead");
    }
}
