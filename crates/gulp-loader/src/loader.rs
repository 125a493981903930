//! The clip loader: batches of clips from a gulp directory, decoded on a
//! pool of threads into preallocated buffers, in an order fixed by the seed
//! and the epoch.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use gulp_format::FrameInfo;

use crate::catalog::{Catalog, ChunkKey, Item};
use crate::error::{Error, Result};
use crate::fingerprint::Fnv;
use crate::media::{Clock, sound_span, time_clip};
use crate::options::{LoaderOptions, OnError, check_options};
use crate::order::Slot;
use crate::prefetch::{Filler, Schedule};
use crate::ranks::Ranks;
use crate::rng::Rng;
use crate::sampling::{Placement, clip_indices};
use crate::shuffle::block_shuffle;
use crate::source::Source;
use crate::targets::{TargetTable, Targets};
use crate::transform::{Geometry, Renderer};

/// A clip left out of its batch ([`OnError::Skip`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedClip {
    /// The item.
    pub id: String,
    /// Why (with the frame and byte offset).
    pub reason: String,
}

/// One batch of clips.
#[derive(Debug, Clone)]
pub struct Batch {
    /// The epoch it belongs to.
    pub epoch: u64,
    /// Its number in the epoch (this rank's batches count from 0).
    pub index: usize,
    /// `[B, T, H, W, 3]` `uint8` pixels, row-major.
    pub frames: Vec<u8>,
    /// `[B, T, H, W, 3]`.
    pub shape: [usize; 5],
    /// Class index of each clip (-1 for an item without a label), for a
    /// target of one class ([`crate::Target::Label`], [`crate::Target::Key`]); empty for
    /// the other targets.
    pub labels: Vec<i64>,
    /// The target of each clip, `[B, ...]` (see [`crate::Target`]).
    pub targets: Targets,
    /// Item id of each clip.
    pub ids: Vec<String>,
    /// The source of each clip (its index in the loader's sources).
    pub sources: Vec<usize>,
    /// The frames `[start, end)` of each clip's sample: a segment, or the
    /// whole item.
    pub segments: Vec<[usize; 2]>,
    /// Position of each clip's sample in the epoch's global order (before
    /// the split between ranks): what makes its random draws, and what
    /// tells, over all ranks, that each position was served once.
    pub positions: Vec<usize>,
    /// Whether each clip repeats a sample to pad the ranks' shares to the
    /// same length (`drop_last = false` only; its position is past the
    /// epoch's samples): an exact evaluation leaves these out of its
    /// metrics.
    pub padding: Vec<bool>,
    /// Frame indices of each clip (of its item, inside its segment), `B ×
    /// T`, row-major.
    pub indices: Vec<usize>,
    /// View of each clip: `clip * crops + crop` (0 with one clip and one
    /// crop).
    pub views: Vec<usize>,
    /// The spatial draw of each clip: its crop as fractions of the source
    /// frame, the output size and the flip (what `gulp serve` draws on the
    /// source frames).
    pub geometries: Vec<Geometry>,
    /// Clips left out ([`OnError::Skip`]).
    pub skipped: Vec<SkippedClip>,
    /// The source time, in seconds, of each clip's frames, `B × T`
    /// row-major (docs/format.md §8): with `fps`, the times the clip
    /// samples (each frame is the one on screen then); else each frame's
    /// own. Given with `fps` or `audio`, empty otherwise.
    pub times: Vec<f64>,
    /// Each clip's sound, `[B, C, S]` floats in `[-1, 1)` row-major
    /// (`audio_shape`), with `audio`: from the clip's first time, `T /
    /// fps` seconds with `fps`, else to the end of its last frame (then
    /// `S` is the batch's longest and shorter clips end in silence).
    pub audio: Vec<f32>,
    /// `[B, C, S]` of `audio` (zeros without `audio`).
    pub audio_shape: [usize; 3],
    /// Whether each clip's item has sound (its `audio` is silence
    /// otherwise); empty without `audio`.
    pub has_audio: Vec<bool>,
    /// Each clip's text, with `texts`: its segment's value of the key,
    /// else its item's (text as it is, other values as JSON; "" when
    /// missing).
    pub texts: Vec<String>,
}

/// Where iteration resumes: the epoch and the next batch of this rank, and
/// the global position reached, which any number of ranks can resume from.
///
/// Ranks of a synchronous data-parallel job that have each yielded `k`
/// batches have together served a prefix of the epoch's global order
/// (rank `r` serves positions `r, r + W, ...`): `position` is that prefix's
/// length. A state resumes exactly on the same rank of the same world size
/// (the same batches, the same batch numbers), and on any rank of any world
/// size from `position`: the rest of the epoch is split between the new
/// ranks ([`crate::Order::slots_from`]), so that over the epoch every position is
/// served once, and every clip's random draws are those of its position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    /// The epoch.
    pub epoch: u64,
    /// Batches of this rank's share of the epoch already yielded.
    pub batch: usize,
    /// Where this rank's share of the epoch began in the global order (0,
    /// or the position an elastic resume started from).
    pub start: usize,
    /// The global position reached: the positions before it are served.
    /// `None` when a batch ended inside an item's clips (several clips or
    /// crops per item and a batch size that is not a multiple of them):
    /// such a state resumes on the same rank and world size only.
    pub position: Option<usize>,
    /// The loader's seed.
    pub seed: u64,
    /// This rank.
    pub rank: usize,
    /// World size.
    pub world_size: usize,
    /// Batches of this rank's share of the epoch.
    pub batches: usize,
    /// Items the loader keeps (all sources).
    pub items: usize,
    /// Clips per batch.
    pub batch_size: usize,
    /// A fingerprint of the options that shape the epoch and its clips
    /// (sampling, frames, clips, crops, sizes, drop_last, shuffle, labels,
    /// decoding); ranks, threads and prefetch are not in it.
    pub options: u64,
    /// A fingerprint of the sources: their amounts and sizes, the sampler,
    /// `samples_per_epoch` and the segments.
    pub sources: u64,
    /// A fingerprint of the ids kept from each source (`ids`, `filter`).
    pub subset: u64,
    /// A fingerprint of the per-item weights (0 without).
    pub weights: u64,
    /// A fingerprint of the target and of every sample's value.
    pub targets: u64,
    /// The world size the epoch's order is laid out for: `world_size`, but
    /// in an epoch resumed on another world size, the one it began on. Only
    /// a shuffle by chunks lays the order out per world size (each rank its
    /// own chunks); the rest of such an epoch keeps that order.
    pub layout: usize,
}

/// The epoch, where this rank's share of it began, the next batch, and the
/// world size the epoch's order is laid out for (0: this loader's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Cursor {
    epoch: u64,
    start: usize,
    batch: usize,
    layout: usize,
}

impl Cursor {
    /// The first batch of a whole epoch.
    fn start_of(epoch: u64) -> Cursor {
        Cursor {
            epoch,
            ..Cursor::default()
        }
    }
}

#[derive(Debug)]
struct Inner {
    /// The items, their records, samples and targets: the loader keeps
    /// these, not the parsed metas.
    catalog: Catalog,
    options: LoaderOptions,
    threads: usize,
    /// Chunks made whole in the node cache behind the epochs.
    filler: Filler,
}

/// Batches of clips from a gulp directory.
///
/// ```no_run
/// # fn main() -> gulp_loader::Result<()> {
/// use gulp_loader::{Loader, LoaderOptions};
/// let mut loader = Loader::open("/data/something-gulp", LoaderOptions::default())?;
/// for epoch in 0..10 {
///     loader.set_epoch(epoch);
///     for batch in loader.iter() {
///         let batch = batch?;
///         assert_eq!(batch.shape[1..], [8, 112, 112, 3]);
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Loader {
    inner: Arc<Inner>,
    cursor: Arc<Mutex<Cursor>>,
    /// The plan of the next iteration, made ahead so that its first batch
    /// does not wait for an epoch's shuffle of every sample: the first
    /// epoch's with the loader, the next epoch's as a pass from a node
    /// cache ends ([`look_ahead`]). (epoch, start, layout) and the samples.
    planned: Arc<Mutex<Option<Planned>>>,
}

/// Which plan: the epoch, the position it starts from, the layout of ranks.
type PlanKey = (u64, usize, usize);

/// An epoch's plan from a position, for a layout of ranks.
type Planned = (PlanKey, Arc<Vec<Sample>>);

impl Loader {
    /// Opens `path` (parses every chunk's meta, reads the labels) and
    /// checks the options.
    pub fn open(path: impl AsRef<Path>, options: LoaderOptions) -> Result<Loader> {
        Loader::from_sources(&[Source::new(path.as_ref())], options)
    }

    /// A loader over several directories (or subsets of one): the epoch
    /// holds each source's share ([`crate::Amount`]), shuffled together.
    /// Parses every chunk's meta, reads the labels, evaluates the sources'
    /// filters and weights and the targets once, and checks the options.
    ///
    /// ```no_run
    /// # fn main() -> gulp_loader::Result<()> {
    /// use gulp_loader::{Amount, Loader, LoaderOptions, Source};
    /// let sources = [
    ///     Source::new("/data/ssv2-gulp").amount(Amount::Weight(0.7)),
    ///     Source::new("/data/kinetics-gulp").amount(Amount::Weight(0.3)),
    /// ];
    /// let options = LoaderOptions { samples_per_epoch: Some(100_000), ..LoaderOptions::default() };
    /// let mut loader = Loader::from_sources(&sources, options)?;
    /// for batch in loader.iter() {
    ///     let batch = batch?; // batch.sources: 0 or 1 for each clip
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_sources(sources: &[Source], options: LoaderOptions) -> Result<Loader> {
        check_options(&options)?;
        let catalog = Catalog::open(sources, &options)?;
        let threads = match options.threads {
            Some(n) => n,
            None => default_threads(
                options
                    .local_world_size
                    .unwrap_or_else(|| Ranks::from_env().local_world_size),
            ),
        };
        let loader = Loader {
            inner: Arc::new(Inner {
                catalog,
                options,
                threads,
                filler: Filler::default(),
            }),
            cursor: Arc::new(Mutex::new(Cursor::default())),
            planned: Arc::new(Mutex::new(None)),
        };
        let cursor = loader.cursor();
        let key = (cursor.epoch, cursor.start, loader.layout(cursor));
        let plan = Arc::new(loader.plan(key.0, key.1, key.2));
        *loader
            .planned
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((key, plan));
        Ok(loader)
    }

    /// The options.
    pub fn options(&self) -> &LoaderOptions {
        &self.inner.options
    }

    /// The (first) source's directory.
    pub fn path(&self) -> &Path {
        self.inner.catalog.dirs[0].dir.path()
    }

    /// Every source's directory.
    pub fn paths(&self) -> Vec<PathBuf> {
        let dirs = &self.inner.catalog.dirs;
        dirs.iter().map(|d| d.dir.path().to_owned()).collect()
    }

    /// Whether every source is read from its directory's index file (a
    /// fresh one, and options that keep every item as it is): the loader
    /// then holds nothing per item, its frames and classes read from the
    /// files that every process of the node maps.
    pub fn reads_index_files(&self) -> bool {
        self.inner.catalog.is_indexed()
    }

    /// Items the loader keeps (all sources).
    pub fn items(&self) -> usize {
        self.inner.catalog.n_items()
    }

    /// Samples of an epoch before the split between ranks (the sources'
    /// shares added up).
    pub fn epoch_samples(&self) -> usize {
        self.inner.catalog.composition.len()
    }

    /// Samples left out when the loader was made, their target (or
    /// segment) missing or unusable ([`crate::OnMissing::Skip`]).
    pub fn missing(&self) -> usize {
        self.inner.catalog.missing
    }

    /// Decoding threads.
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// Clips per item per epoch (clips × crops).
    pub fn views(&self) -> usize {
        let o = &self.inner.options;
        o.clips * o.spatial.crop.views()
    }

    /// Clips of this rank in the current epoch.
    pub fn samples(&self) -> usize {
        self.samples_from(self.cursor().start)
    }

    fn samples_from(&self, start: usize) -> usize {
        let n = self.epoch_samples();
        self.inner.options.order.per_rank(n.saturating_sub(start)) * self.views()
    }

    /// Batches of this rank in the current epoch (fewer than usual in an
    /// epoch resumed on another world size).
    pub fn len(&self) -> usize {
        self.batches_from(self.cursor().start)
    }

    fn batches_from(&self, start: usize) -> usize {
        let o = &self.inner.options;
        o.order.batches(self.samples_from(start), o.batch_size)
    }

    /// Whether an epoch has no batch.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The current epoch.
    pub fn epoch(&self) -> u64 {
        self.cursor().epoch
    }

    fn cursor(&self) -> Cursor {
        *self.cursor.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_cursor(&self, cursor: Cursor) {
        *self.cursor.lock().unwrap_or_else(PoisonError::into_inner) = cursor;
    }

    /// Sets the epoch of the next iteration (its shuffle and draws). Moving
    /// to another epoch starts it from its first batch; setting the current
    /// epoch keeps the position (so a resumed run's `set_epoch` keeps the
    /// resumed place). A completed pass moves to the next epoch by itself.
    pub fn set_epoch(&mut self, epoch: u64) {
        let mut cursor = self.cursor.lock().unwrap_or_else(PoisonError::into_inner);
        if cursor.epoch != epoch {
            *cursor = Cursor::start_of(epoch);
        }
    }

    /// A fingerprint of the options a resumed loader must share (see
    /// [`State::options`]).
    fn fingerprint(&self) -> u64 {
        let o = &self.inner.options;
        let base = Fnv::of_debug(&(
            o.frames,
            o.sampling,
            o.step,
            o.clips,
            &o.spatial,
            o.batch_size,
            // As states saved before `Shuffle` spelled it.
            (
                o.order.shuffle.is_on(),
                o.order.drop_last,
                o.order.shuffle.chunk_window(),
            ),
            o.is_training(),
            &o.labels,
            o.decode,
        ));
        // Clips in seconds draw other frames (a state saved without `fps`
        // keeps its fingerprint).
        match o.fps {
            None => base,
            Some(fps) => Fnv::of_debug(&(base, fps.to_bits(), o.default_fps.to_bits())),
        }
    }

    /// Where the next iteration starts.
    pub fn state(&self) -> State {
        let cursor = self.cursor();
        let o = &self.inner.options;
        // Synchronous ranks that each yielded `batch` batches served the
        // global positions before `start + slots * world_size`.
        let clips = cursor.batch * o.batch_size;
        let position = clips
            .is_multiple_of(self.views())
            .then(|| cursor.start + clips / self.views() * o.order.world_size);
        State {
            epoch: cursor.epoch,
            batch: cursor.batch,
            start: cursor.start,
            position,
            seed: o.order.seed,
            rank: o.order.rank,
            world_size: o.order.world_size,
            batches: self.len(),
            items: self.items(),
            batch_size: o.batch_size,
            options: self.fingerprint(),
            sources: self.inner.catalog.fingerprints.sources,
            subset: self.inner.catalog.fingerprints.subset,
            weights: self.inner.catalog.fingerprints.weights,
            targets: self.inner.catalog.fingerprints.targets,
            layout: self.layout(cursor),
        }
    }

    /// The world size `cursor`'s epoch is laid out for.
    fn layout(&self, cursor: Cursor) -> usize {
        match cursor.layout {
            0 => self.inner.options.order.world_size,
            n => n,
        }
    }

    /// Resumes from `state`: the next iteration yields exactly what follows
    /// it. On the world size that saved it, this rank's batches from the
    /// same batch number (a rank's own state, or any rank's of the same
    /// step); on another world size, this rank's share of the rest of the
    /// epoch from `state.position` (see [`State`]). A state of another
    /// seed, data, options, sources, subset, weights or targets is refused,
    /// naming what differs.
    pub fn load_state(&mut self, state: &State) -> Result<()> {
        let now = self.state();
        let count = |v: usize| v.to_string();
        let hash = |v: u64| format!("{v:016x}");
        let differs = [
            ("seed", state.seed.to_string(), now.seed.to_string()),
            // The ids kept first: another subset has other sizes too.
            ("subset", hash(state.subset), hash(now.subset)),
            ("sources", hash(state.sources), hash(now.sources)),
            ("items", count(state.items), count(now.items)),
            ("batch_size", count(state.batch_size), count(now.batch_size)),
            ("options", hash(state.options), hash(now.options)),
            ("weights", hash(state.weights), hash(now.weights)),
            ("targets", hash(state.targets), hash(now.targets)),
        ];
        if let Some((what, theirs, ours)) = differs.iter().find(|(_, a, b)| a != b) {
            return Err(Error::State(format!(
                "the state's {what} is {theirs}, this loader's {ours} (a state resumes a loader \
                 with the same seed, data and options; only the rank, the world size and the \
                 threads may change)"
            )));
        }
        // On the same world size every rank has yielded the same batches of
        // its share: any rank's state says where each rank is (Lightning
        // saves rank 0's and hands it to all), and the epoch keeps its
        // length, as a framework counting batches from its start expects.
        if state.world_size == now.world_size {
            let batches = self.batches_from(state.start);
            if state.batch > batches {
                return Err(Error::State(format!(
                    "batch {} is past the end of the epoch ({batches} batches)",
                    state.batch
                )));
            }
            self.set_cursor(Cursor {
                epoch: state.epoch,
                start: state.start,
                batch: state.batch,
                layout: state.layout,
            });
            return Ok(());
        }
        let Some(position) = state.position else {
            return Err(Error::State(format!(
                "the state of rank {}/{} ended inside an item's {} clips, so it resumes on \
                 a world size of {} only",
                state.rank,
                state.world_size,
                self.views(),
                state.world_size
            )));
        };
        // A position at or past the end of the epoch (the ranks served it
        // all, padding included) resumes at the next epoch.
        self.set_cursor(if self.batches_from(position) == 0 {
            Cursor::start_of(state.epoch + 1)
        } else {
            Cursor {
                epoch: state.epoch,
                start: position,
                batch: 0,
                layout: state.layout,
            }
        });
        Ok(())
    }

    /// The clips of this rank in `epoch` from global position `start`, in
    /// order ([`plan_epoch`]).
    fn plan(&self, epoch: u64, start: usize, layout: usize) -> Vec<Sample> {
        plan_epoch(&self.inner, epoch, start, layout)
    }

    /// Iterates over the rest of the current epoch from the current
    /// position, decoding ahead on the loader's threads. Each yielded batch
    /// advances the position; after the last one the position is the start
    /// of the next epoch. Dropping the iterator stops the threads.
    pub fn iter(&mut self) -> Batches {
        let cursor = self.cursor();
        let epoch = cursor.epoch;
        let start = if cursor.batch >= self.len() {
            0
        } else {
            cursor.batch
        };
        let key = (epoch, cursor.start, self.layout(cursor));
        let made = self
            .planned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .filter(|(k, _)| *k == key);
        let samples = match made {
            Some((_, samples)) => samples,
            None => Arc::new(self.plan(epoch, cursor.start, key.2)),
        };
        let inner = Arc::clone(&self.inner);
        let end = self.len();
        let in_flight = (inner.threads * inner.options.prefetch.max(1)).max(1);
        let schedule = self.schedule(&samples, start, end).map(Arc::new);
        let (job_tx, job_rx) = crossbeam_channel::unbounded::<usize>();
        let (res_tx, res_rx) = crossbeam_channel::unbounded();
        let cancel = Arc::new(AtomicBool::new(false));
        let workers = (0..inner.threads.min(end.saturating_sub(start)).max(1))
            .map(|_| {
                let (inner, samples, job_rx, res_tx, cancel, schedule) = (
                    Arc::clone(&inner),
                    Arc::clone(&samples),
                    job_rx.clone(),
                    res_tx.clone(),
                    Arc::clone(&cancel),
                    schedule.clone(),
                );
                std::thread::spawn(move || {
                    let mut renderer = Renderer::default();
                    for index in job_rx {
                        if cancel.load(Ordering::Relaxed) {
                            break;
                        }
                        let batch =
                            make_batch(&inner, &samples, epoch, index, &mut renderer, &cancel);
                        if let Some(schedule) = &schedule {
                            schedule.done(&inner.catalog, index);
                        }
                        if res_tx.send((index, batch)).is_err() {
                            break;
                        }
                    }
                })
            })
            .collect();
        // From a node cache: the chunks of the batches after those in
        // flight, fetched ahead.
        let fetcher = schedule.clone().map(|schedule| {
            let pass = Pass {
                inner: Arc::clone(&inner),
                samples: Arc::clone(&samples),
                cancel: Arc::clone(&cancel),
                epoch,
            };
            spawn_fetcher(pass, schedule, Arc::clone(&self.planned), in_flight)
        });
        let mut batches = Batches {
            cursor: Arc::clone(&self.cursor),
            epoch,
            share: cursor.start,
            layout: cursor.layout,
            next: start,
            dispatched: start,
            end,
            in_flight,
            jobs: Some(job_tx),
            results: res_rx,
            ready: BTreeMap::new(),
            workers,
            fetcher,
            schedule,
            inner: Arc::clone(&self.inner),
            cancel,
            failed: false,
        };
        batches.dispatch();
        batches
    }

    /// The cached chunks each batch `start..end` of the pass reads, each
    /// to be fetched whole or by the ranges read (decided here, for the
    /// pass, by the cache's fetch policy); `None` when no source is read
    /// through a node cache.
    fn schedule(&self, samples: &[Sample], start: usize, end: usize) -> Option<Schedule> {
        let catalog = &self.inner.catalog;
        if !catalog.dirs.iter().any(|d| d.dir.cache_dir().is_some()) {
            return None;
        }
        let b = self.inner.options.batch_size;
        let per_batch = (start..end)
            .map(|index| {
                let from = (index * b).min(samples.len());
                let mut keys: Vec<ChunkKey> = samples[from..(from + b).min(samples.len())]
                    .iter()
                    .map(|s| catalog.chunk_of(s.slot.sample))
                    .filter(|(source, _)| catalog.is_cached(*source))
                    .collect();
                keys.sort_unstable();
                keys.dedup();
                keys
            })
            .collect::<Vec<_>>();
        let mut sizes = std::collections::HashMap::new();
        for &key in per_batch.iter().flatten() {
            sizes.entry(key).or_insert_with(|| {
                let (ranged, fill) = catalog.plan_ranges(key);
                if fill {
                    let inner = Arc::downgrade(&self.inner);
                    self.inner
                        .filler
                        .queue(key, |chunks| start_filler(inner, chunks));
                }
                if ranged { 0 } else { catalog.chunk_size(key) }
            });
        }
        Schedule::new(start, per_batch, sizes, catalog.cache_budget())
    }
}

/// Chunks made whole at once behind the epochs: chosen when each fill
/// ended with its file synced to disk, which one at a time bounded (about
/// two 42 MB chunks an epoch in the benchmark, against ten with three).
/// The node cache now syncs a whole object when it is opened again.
const FILLERS: usize = 3;

/// Starts the [`FILLERS`] threads that make chunks whole in the node cache,
/// in the order `chunks` gives them ([`Filler`]); `false` if none can
/// start. Each holds the loader only while it fills a chunk, and ends when
/// the loader is gone (the queue then closes): dropping a loader never
/// waits for them.
fn start_filler(inner: std::sync::Weak<Inner>, chunks: Receiver<ChunkKey>) -> bool {
    (0..FILLERS).fold(false, |any, _| {
        let (inner, chunks) = (inner.clone(), chunks.clone());
        std::thread::Builder::new()
            .name("gulp-fill".into())
            .spawn(move || {
                for key in chunks {
                    let Some(inner) = inner.upgrade() else {
                        break;
                    };
                    // A failure here leaves the chunk read by ranges; a store
                    // that fails is the decoding threads' to report.
                    if !matches!(inner.catalog.fill(key), Ok(true)) {
                        inner.filler.forget(key);
                    }
                }
            })
            .is_ok()
            || any
    })
}

/// The decoding threads of a loader with `threads = None`: the cores this
/// process may use divided among the `local_world_size` ranks of the node
/// (see [`crate::Ranks`]), at least 1: 8 ranks on a 64-core node get 8
/// threads each, not 64.
pub fn default_threads(local_world_size: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    (cores / local_world_size.max(1)).max(1)
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    slot: Slot,
    clip: usize,
    crop: usize,
}

/// Decodes batch `index` of the epoch's `samples`.
fn make_batch(
    inner: &Inner,
    samples: &[Sample],
    epoch: u64,
    index: usize,
    renderer: &mut Renderer,
    cancel: &AtomicBool,
) -> Result<Batch> {
    let o = &inner.options;
    let from = index * o.batch_size;
    let part = &samples[from..(from + o.batch_size).min(samples.len())];
    let t = o.frames;
    let mut frames = Vec::new();
    if let Some((h, w)) = o.spatial.size {
        frames.reserve_exact(part.len() * t * h * w * 3);
    }
    let catalog = &inner.catalog;
    let mut rows = Vec::with_capacity(part.len());
    let mut batch = Batch {
        epoch,
        index,
        frames: Vec::new(),
        shape: [0, t, 0, 0, 3],
        labels: Vec::new(),
        targets: Targets {
            shape: Vec::new(),
            values: crate::TargetValues::Int64(Vec::new()),
        },
        ids: Vec::with_capacity(part.len()),
        sources: Vec::with_capacity(part.len()),
        segments: Vec::with_capacity(part.len()),
        positions: Vec::with_capacity(part.len()),
        padding: Vec::with_capacity(part.len()),
        indices: Vec::with_capacity(part.len() * t),
        views: Vec::with_capacity(part.len()),
        geometries: Vec::with_capacity(part.len()),
        skipped: Vec::new(),
        times: Vec::new(),
        audio: Vec::new(),
        audio_shape: [0; 3],
        has_audio: Vec::new(),
        texts: Vec::new(),
    };
    let mut gathered = Gathered::new(inner);
    let mut out_size: Option<(usize, usize, String)> = None;
    for sample in part {
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        let (item, first, end) = catalog.sample(sample.slot.sample);
        let start = frames.len();
        match make_clip(
            inner,
            (&item, first, end),
            sample,
            epoch,
            renderer,
            &mut frames,
            &mut out_size,
        ) {
            Ok((indices, geometry, media)) => {
                gathered.add(inner, &item, media, &mut batch)?;
                batch.geometries.push(geometry);
                rows.push(sample.slot.sample);
                batch.ids.push(catalog.id(&item).to_owned());
                batch.sources.push(item.source as usize);
                batch.segments.push([first, end]);
                batch.positions.push(sample.slot.position);
                batch
                    .padding
                    .push(sample.slot.position >= catalog.composition.len());
                batch.indices.extend(indices);
                batch
                    .views
                    .push(sample.clip * o.spatial.crop.views() + sample.crop);
            }
            Err(e) => {
                frames.truncate(start);
                // A store's failure (the network, the server) is not the
                // clip's: it stops the pass, which resumes from the state.
                let remote = matches!(&e, Error::Io(io) if matches!(io.kind(), gulp_io::ErrorKind::Remote { .. } | gulp_io::ErrorKind::RemoteNotFound { .. }));
                match (o.on_error, &e) {
                    (OnError::Skip, Error::Io(_) | Error::Clip { .. }) if !remote => {
                        batch.skipped.push(SkippedClip {
                            id: catalog.id(&item).to_owned(),
                            reason: e.to_string(),
                        });
                    }
                    _ => return Err(e),
                }
            }
        }
    }
    let (h, w) = out_size.map_or((0, 0), |(h, w, _)| (h, w));
    batch.shape = [batch.ids.len(), t, h, w, 3];
    batch.frames = frames;
    gathered.finish(inner, &rows, &mut batch);
    Ok(batch)
}

/// What a batch gathers of its clips beyond their frames: their times,
/// sound and texts, and a target read per batch.
struct Gathered {
    /// Each clip's `[C, S]` sound and `S`.
    sounds: Vec<(Vec<f32>, usize)>,
    /// The clips' targets, when read per batch from their items' metas.
    targets: Option<TargetTable>,
}

impl Gathered {
    fn new(inner: &Inner) -> Gathered {
        Gathered {
            sounds: Vec::new(),
            targets: inner
                .catalog
                .targets
                .is_lazy()
                .then(|| TargetTable::new(&inner.options.target)),
        }
    }

    /// Adds the clip of `item` whose `media` [`make_clip`] gave.
    fn add(
        &mut self,
        inner: &Inner,
        item: &Item,
        media: ClipMedia,
        batch: &mut Batch,
    ) -> Result<()> {
        let catalog = &inner.catalog;
        if let (Some(table), Some(meta)) = (&mut self.targets, &media.meta) {
            let id = catalog.id(item);
            let space = &catalog.spaces[item.source as usize];
            table
                .push(id, meta, None, &inner.options.labels.key, space)
                .map_err(|p| Error::Meta {
                    path: catalog.dirs[item.source as usize].dir.path().to_owned(),
                    id: id.to_owned(),
                    key: p.key,
                    reason: p.reason,
                })?;
        }
        batch.times.extend(media.times);
        if let Some(sound) = media.sound {
            self.sounds.push(sound);
            batch.has_audio.push(media.has_audio);
        }
        if let Some(text) = media.text {
            batch.texts.push(text);
        }
        Ok(())
    }

    /// Puts the sound in one array of the batch's longest length (shorter
    /// clips end in silence), and the targets of the batch's clips (`rows`,
    /// their samples) in it.
    fn finish(self, inner: &Inner, rows: &[usize], batch: &mut Batch) {
        if let Some(a) = inner.options.audio {
            let c = usize::from(a.channels);
            let s = self.sounds.iter().map(|(_, n)| *n).max().unwrap_or(0);
            batch.audio = vec![0.0; self.sounds.len() * c * s];
            for (b, (samples, n)) in self.sounds.iter().enumerate() {
                for ch in 0..c {
                    let row = (b * c + ch) * s;
                    batch.audio[row..row + n].copy_from_slice(&samples[ch * n..(ch + 1) * n]);
                }
            }
            batch.audio_shape = [self.sounds.len(), c, s];
        }
        (batch.targets, batch.labels) = match &self.targets {
            Some(table) => table.gather(&(0..rows.len()).collect::<Vec<_>>()),
            None => inner.catalog.targets.gather(rows),
        };
    }
}

/// The frames (indices into the item's) of the clip `sample` of frames
/// `start..end` in `epoch`, and the clip's random state after drawing them
/// (from which its crop is drawn): a function of the seed (and, with
/// `fps`, of the item's `clock`), so that the prefetcher knows them ahead
/// of the decoding threads. With a clock, also their source times.
fn clip_frames(
    o: &LoaderOptions,
    start: usize,
    end: usize,
    sample: &Sample,
    epoch: u64,
    clock: Option<&Clock>,
) -> (Rng, Vec<usize>, Vec<f64>) {
    let mut rng = Rng::new(&[
        o.order.seed,
        epoch,
        sample.slot.position as u64,
        sample.clip as u64,
    ]);
    let placement = if o.is_training() {
        Placement::Random(&mut rng)
    } else {
        Placement::Fixed {
            index: sample.clip,
            count: o.clips,
        }
    };
    if let (Some(fps), Some(clock)) = (o.fps, clock) {
        let (indices, times) = time_clip(o.sampling, o.frames, fps, clock, (start, end), placement);
        return (rng, indices, times);
    }
    let indices: Vec<usize> = clip_indices(o.sampling, o.frames, o.step, end - start, placement)
        .into_iter()
        .map(|k| start + k)
        .collect();
    let times = clock.map_or_else(Vec::new, |c| indices.iter().map(|&k| c.at(k)).collect());
    (rng, indices, times)
}

/// What a clip gives beside its frames, when the loader asks for time,
/// sound or text.
#[derive(Debug, Default)]
struct ClipMedia {
    times: Vec<f64>,
    /// `[C, S]` floats and `S`.
    sound: Option<(Vec<f32>, usize)>,
    has_audio: bool,
    text: Option<String>,
    /// The item's meta (`meta_data[0]`), for a target read per batch.
    meta: Option<gulp_format::Value>,
}

/// Whether clips need their item's meta: for times, sound, text, or a
/// target read per batch.
fn needs_meta(inner: &Inner) -> bool {
    let o = &inner.options;
    o.fps.is_some() || o.audio.is_some() || o.texts.is_some() || inner.catalog.targets.is_lazy()
}

/// The text of a clip: its segment's `key` (the segment `segment` of the
/// item's `segments`), else its item's.
fn clip_text(
    o: &LoaderOptions,
    meta: &gulp_format::ItemMeta,
    segment: Option<usize>,
    key: &str,
) -> String {
    let m = meta.first_meta_data();
    let of_segment = o.segments.as_ref().zip(segment).and_then(|(spec, k)| {
        m.and_then(|m| m.get(&spec.key))
            .and_then(gulp_format::Value::as_array)
            .and_then(|list| list.get(k))
            .and_then(|seg| seg.get(key))
    });
    match of_segment.or_else(|| m.and_then(|m| m.get(key))) {
        None | Some(gulp_format::Value::Null) => String::new(),
        Some(gulp_format::Value::String(s)) => s.clone(),
        Some(other) => gulp_format::JsonSerializer::value_to_string(other),
    }
}

/// The prefetcher's fetching threads for `threads` decoding threads, each
/// fetching a clip's ranges (up to 8 requests, [`gulp_io`] sends them
/// together): four per decoding thread, 64 requests in flight for 2
/// threads, enough to keep a store busy (fewer starved Garage, and more
/// delayed the first clips), at most 32 threads (256 requests).
fn range_fetchers(threads: usize) -> usize {
    (4 * threads).clamp(4, 32)
}

/// The clips of batch `index` of the epoch's `samples` whose chunks the
/// pass reads by ranges, in the batch's order: each clip's item and the
/// frames it decodes, for the prefetcher to fetch into the node cache, and
/// the bytes of their records.
fn range_clips(
    inner: &Inner,
    samples: &[Sample],
    epoch: u64,
    index: usize,
) -> Vec<((Item, Vec<usize>), u64)> {
    let o = &inner.options;
    let catalog = &inner.catalog;
    let from = (index * o.batch_size).min(samples.len());
    samples[from..(from + o.batch_size).min(samples.len())]
        .iter()
        .filter_map(|sample| {
            let (item, start, end) = catalog.sample(sample.slot.sample);
            if !catalog.reads_ranges((item.source, item.chunk)) || end <= start {
                return None;
            }
            let clock = o
                .fps
                .and_then(|_| catalog.item_meta(&item).ok())
                .map(|m| Clock::of(&m, item.frames as usize, o.default_fps));
            let (_, frames, _) = clip_frames(o, start, end, sample, epoch, clock.as_ref());
            let bytes = frames.iter().map(|&k| catalog.frame(&item, k).length).sum();
            Some(((item, frames), bytes))
        })
        .collect()
}

/// Decodes one clip of `item`'s frames `start..end` at the end of
/// `frames`; returns its frame indices and its spatial draw.
fn make_clip(
    inner: &Inner,
    (item, start, end): (&Item, usize, usize),
    sample: &Sample,
    epoch: u64,
    renderer: &mut Renderer,
    frames: &mut Vec<u8>,
    out_size: &mut Option<(usize, usize, String)>,
) -> Result<(Vec<usize>, Geometry, ClipMedia)> {
    let o = &inner.options;
    let id = inner.catalog.id(item);
    let reader = inner.catalog.reader(item)?;
    let meta = if needs_meta(inner) {
        Some(inner.catalog.item_meta(item)?)
    } else {
        None
    };
    let n = item.frames as usize;
    let clock = meta.as_ref().map(|m| Clock::of(m, n, o.default_fps));
    let (mut rng, indices, times) = clip_frames(o, start, end, sample, epoch, clock.as_ref());
    let codec = o.decode.codec;
    // The clip's frames in one read: from an object store, one range
    // request for frames close together.
    let records: Vec<(usize, FrameInfo)> = indices
        .iter()
        .map(|&k| (k, inner.catalog.frame(item, k)))
        .collect();
    let jpegs = reader.records_at(id, &records)?;
    let first = reader.with_record(id, indices[0], records[0].1.loc, &jpegs[0], codec, |f| {
        Ok(*f.header())
    })?;
    let geometry: Geometry = o
        .spatial
        .draw(
            first.width,
            first.height,
            o.is_training().then_some(&mut rng),
            sample.crop,
        )
        .map_err(|reason| Error::Clip {
            id: id.to_owned(),
            reason,
        })?;
    let (oh, ow) = geometry.out;
    match out_size {
        Some((h, w, other)) if (*h, *w) != (oh, ow) => {
            return Err(Error::Config(format!(
                "clips of different sizes in one batch: id {other:?} gives {w}x{h}, id {:?} {ow}x{oh}; give a size (and a crop) so that every clip has the same",
                id
            )));
        }
        Some(_) => {}
        None => *out_size = Some((oh, ow, id.to_owned())),
    }
    let per_frame = oh * ow * 3;
    let at = frames.len();
    frames.resize(at + indices.len() * per_frame, 0);
    for (k, ((index, record), jpeg)) in records.iter().zip(&jpegs).enumerate() {
        let out = &mut frames[at + k * per_frame..at + (k + 1) * per_frame];
        reader.with_record(id, *index, record.loc, jpeg, codec, |frame| {
            renderer.render(frame, &geometry, &o.decode, out)
        })?;
    }
    let media = match (&meta, &clock) {
        (Some(meta), Some(clock)) => clip_media(
            inner,
            (item, &reader),
            sample,
            meta,
            clock,
            (&indices, times),
        )?,
        _ => ClipMedia::default(),
    };
    Ok((indices, geometry, media))
}

/// What clip `sample` of `item` (read with `reader`, its meta `meta` and
/// clock `clock`) gives beside its frames `indices` at `times`: the sound
/// of its span, its text, its times, its item's meta for a target read per
/// batch.
fn clip_media(
    inner: &Inner,
    (item, reader): (&Item, &gulp_io::ChunkReader),
    sample: &Sample,
    meta: &gulp_format::ItemMeta,
    clock: &Clock,
    (indices, times): (&[usize], Vec<f64>),
) -> Result<ClipMedia> {
    let o = &inner.options;
    let id = inner.catalog.id(item);
    let mut media = ClipMedia::default();
    if let Some(a) = o.audio {
        let (from, length) = sound_span(o.fps, clock, indices, &times, item.frames as usize);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // seconds × rate
        let samples = (length * f64::from(a.sample_rate)).round().max(0.0) as usize;
        let mut sound = vec![0.0f32; usize::from(a.channels) * samples];
        let track = crate::media::track(meta);
        if let Some(track) = &track {
            let pcm = reader.audio(id, track)?;
            let request = gulp_io::audio::SpanRequest {
                start: from,
                samples,
                sample_rate: a.sample_rate,
                channels: a.channels,
            };
            gulp_io::audio::span_f32(&pcm, track, &request, &mut sound);
        }
        media.has_audio = track.is_some();
        media.sound = Some((sound, samples));
    }
    if let Some(key) = &o.texts {
        media.text = Some(clip_text(
            o,
            meta,
            inner.catalog.segment(sample.slot.sample),
            key,
        ));
    }
    if o.fps.is_some() || o.audio.is_some() {
        media.times = times;
    }
    if inner.catalog.targets.is_lazy() {
        media.meta = Some(
            meta.first_meta_data()
                .cloned()
                .unwrap_or(gulp_format::Value::Null),
        );
    }
    Ok(media)
}

/// The clips of this rank in `epoch` from global position `start`, in
/// order: the epoch's composition, shuffled (by chunks, laid out for
/// `layout` ranks), split between the ranks.
fn plan_epoch(inner: &Inner, epoch: u64, start: usize, layout: usize) -> Vec<Sample> {
    let o = &inner.options;
    let crops = o.spatial.crop.views();
    let catalog = &inner.catalog;
    let mut order = catalog.composition.epoch(o.order.seed, epoch);
    match o.order.shuffle.chunk_window() {
        Some(window) => block_shuffle(
            &mut order,
            |&s| catalog.chunk_of(s as usize),
            window,
            o.order.seed,
            epoch,
            layout,
        ),
        _ => o.order.arrange(&mut order, epoch),
    }
    // Made in one allocation of its final size: a rank holds its share
    // and nothing else of an epoch's order.
    let slots = o.order.slots_iter(&order, start);
    let mut samples = Vec::with_capacity(slots.len() * o.clips * crops);
    samples.extend(slots.flat_map(|slot| {
        (0..o.clips).flat_map(move |clip| (0..crops).map(move |crop| Sample { slot, clip, crop }))
    }));
    samples
}

/// What the threads of one pass share.
struct Pass {
    inner: Arc<Inner>,
    samples: Arc<Vec<Sample>>,
    cancel: Arc<AtomicBool>,
    epoch: u64,
}

/// Starts the thread that fetches what the batches of `pass` read from a
/// node cache, `2 × in_flight` batches ahead of the consumer at most
/// ([`Schedule::fetch_ahead`]), then, the pass's chunks fetched, looks
/// ahead to the next epoch ([`look_ahead`]).
fn spawn_fetcher(
    pass: Pass,
    schedule: Arc<Schedule>,
    planned: Arc<Mutex<Option<Planned>>>,
    in_flight: usize,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let Pass {
            inner,
            samples,
            cancel,
            epoch,
        } = pass;
        schedule.fetch_ahead(
            &inner.catalog,
            2 * in_flight,
            range_fetchers(inner.threads),
            &cancel,
            |batch| range_clips(&inner, &samples, epoch, batch),
            |(item, frames)| {
                // A failure is the decoding thread's to report.
                let _ = inner.catalog.fetch_frames(item, frames);
            },
        );
        if !cancel.load(Ordering::Relaxed) && schedule.fetches_whole() {
            let next: PlanKey = (epoch + 1, 0, inner.options.order.world_size);
            look_ahead(&inner, &schedule, &planned, next, &cancel);
        }
    })
}

/// What a pass from a node cache does for the next epoch once it has
/// fetched all its own chunks (`next`: the epoch after it, from its
/// start): plans it, for the loader to take when it begins, and fetches the
/// chunk it reads first into the cache (when that chunk is fetched whole
/// and this pass holds it no longer; once there is room, which the pass's
/// releases make), while the pass's last batches are decoded. Each such
/// epoch otherwise began by waiting for its first chunk: its first batch
/// came 44–70 ms after it began (15–20 ms with this, 13–15 locally), of a
/// 0.45 s epoch at 320×240 from Garage on the same cores.
fn look_ahead(
    inner: &Inner,
    schedule: &Schedule,
    planned: &Mutex<Option<Planned>>,
    next: PlanKey,
    cancel: &AtomicBool,
) {
    let made = planned
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .filter(|(key, _)| *key == next)
        .map(|(_, samples)| Arc::clone(samples));
    let samples = made.unwrap_or_else(|| {
        let samples = Arc::new(plan_epoch(inner, next.0, next.1, next.2));
        let mut slot = planned.lock().unwrap_or_else(PoisonError::into_inner);
        // The loader may have begun another iteration meanwhile.
        if slot.is_none() {
            *slot = Some((next, Arc::clone(&samples)));
        }
        samples
    });
    let Some(first) = samples.first() else {
        return;
    };
    let catalog = &inner.catalog;
    let key = catalog.chunk_of(first.slot.sample);
    if catalog.is_cached(key.0) && !catalog.reads_ranges(key) && !schedule.holds(key) {
        schedule.warm_when_room(catalog, key, cancel);
    }
}

/// The batches of one pass, in order; see [`Loader::iter`].
#[derive(Debug)]
pub struct Batches {
    cursor: Arc<Mutex<Cursor>>,
    epoch: u64,
    /// Where this rank's share of the epoch began (the cursor's `start`).
    share: usize,
    /// The cursor's `layout`.
    layout: usize,
    next: usize,
    dispatched: usize,
    end: usize,
    in_flight: usize,
    jobs: Option<Sender<usize>>,
    results: Receiver<(usize, Result<Batch>)>,
    ready: BTreeMap<usize, Result<Batch>>,
    workers: Vec<JoinHandle<()>>,
    /// The thread fetching chunks ahead from a node cache.
    fetcher: Option<JoinHandle<()>>,
    schedule: Option<Arc<Schedule>>,
    inner: Arc<Inner>,
    cancel: Arc<AtomicBool>,
    failed: bool,
}

impl Batches {
    fn dispatch(&mut self) {
        while self.dispatched < self.end && self.dispatched - self.next < self.in_flight {
            if let Some(jobs) = &self.jobs {
                // The workers hold the receiver until this sender drops.
                let _ = jobs.send(self.dispatched);
            }
            self.dispatched += 1;
        }
        if self.dispatched >= self.end {
            self.jobs = None;
        }
    }

    /// Batches not yet yielded.
    pub fn remaining(&self) -> usize {
        self.end - self.next
    }

    fn stop(&mut self) {
        // A pass that ran to its end lets the fetching thread finish what
        // it does for the next epoch (`look_ahead`); one abandoned stops it.
        if self.failed || self.next < self.end {
            self.cancel.store(true, Ordering::Relaxed);
        }
        // The fetching thread may be waiting for the consumer or for room.
        if let Some(schedule) = &self.schedule {
            schedule.wake();
        }
        self.jobs = None;
        for worker in self.workers.drain(..).chain(self.fetcher.take()) {
            // A worker only panics on a bug; the batch it was making is
            // then reported missing below.
            let _ = worker.join();
        }
        if let Some(schedule) = self.schedule.take() {
            schedule.release_all(&self.inner.catalog);
        }
    }
}

impl Iterator for Batches {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Result<Batch>> {
        if self.failed || self.next >= self.end {
            return None;
        }
        let result = loop {
            if let Some(result) = self.ready.remove(&self.next) {
                break result;
            }
            match self.results.recv() {
                Ok((index, result)) => {
                    self.ready.insert(index, result);
                }
                Err(_) => {
                    break Err(Error::Config(format!(
                        "batch {} was not made: a decoding thread stopped",
                        self.next
                    )));
                }
            }
        };
        if result.is_err() {
            self.failed = true;
            self.stop();
            return Some(result);
        }
        self.next += 1;
        {
            let mut cursor = self.cursor.lock().unwrap_or_else(PoisonError::into_inner);
            // A set_epoch or load_state during the pass wins.
            if (cursor.epoch, cursor.start) == (self.epoch, self.share) {
                *cursor = if self.next >= self.end {
                    Cursor::start_of(self.epoch + 1)
                } else {
                    Cursor {
                        epoch: self.epoch,
                        start: self.share,
                        batch: self.next,
                        layout: self.layout,
                    }
                };
            }
        }
        if let Some(schedule) = &self.schedule {
            schedule.consumed(self.next);
        }
        self.dispatch();
        Some(result)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.remaining();
        (n, Some(n))
    }
}

impl Drop for Batches {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cores_are_divided_among_the_ranks_of_a_node() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(default_threads(1), cores);
        assert_eq!(default_threads(0), cores);
        assert_eq!(default_threads(cores), 1);
        assert_eq!(default_threads(cores * 4), 1, "at least one");
        assert_eq!(default_threads(2), (cores / 2).max(1));
    }
}
