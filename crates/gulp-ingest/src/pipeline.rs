//! The ingest pipeline: a producer, worker threads and an in-order writer.
//!
//! ```text
//!  producer ──jobs (bounded)──▶ worker 0..N ──results (bounded)──▶ writer
//!     ▲                         decode/resize/encode                 │
//!     └──────────────── credits (one per item in flight) ◀───────────┘
//! ```
//!
//! The producer hands out items in input order, one per credit; the writer
//! puts results back in that order, fills chunks of `items_per_chunk` and
//! returns a credit for each item it has written. So at most `window` items
//! are in flight whatever the number or length of the inputs, and the output
//! is the same for any number of workers.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File};
use std::io;
use std::num::NonZeroU32;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, bounded};
use gulp_format::{FrameTimes, MetaFormat, Value};
use gulp_io::{AudioInput, ChunkWriter, GulpDirectory, ItemMedia, Pcm, Recovery};

use crate::cut::Span;
use crate::dataset::{DatasetAdapter, FrameSource, Item};
use crate::error::{Error, ItemError, Result, SkippedItem};
use crate::frames::{
    ClipAudio, Encoding, FrameOptions, JpegSink, encode_clips, encode_frames, encode_videos,
};
use crate::shard::{Plan, Shard, TaskLock};
use crate::staging::Staging;
use crate::video::{self, BATCH, BATCH_MAX_FILE, BatchOutcome};

/// How much encoded frame data the items in flight may hold in memory in
/// all; an item beyond its share spills to an unnamed temporary file.
const MEMORY_BUDGET: usize = 128 << 20;

/// ffmpeg's decoding threads for each worker: an equal share of the cores,
/// at least 1 and at most 16 (ffmpeg's own limit for its automatic choice).
/// With a worker per core, decoding on one thread saves the CPU time that
/// frame threading spends on handing frames between threads (about 14 % of
/// ffmpeg's time on 2 cores).
fn decode_threads_per_worker(workers: usize) -> NonZeroU32 {
    let cores = thread::available_parallelism().map_or(1, usize::from);
    let share = (cores / workers.max(1)).clamp(1, 16);
    NonZeroU32::new(u32::try_from(share).unwrap_or(1)).unwrap_or(NonZeroU32::MIN)
}

/// Options of an ingest run.
#[derive(Debug, Clone, PartialEq)]
pub struct IngestOptions {
    /// Items per chunk (gulpio2's `videos_per_chunk`), at least 1.
    pub items_per_chunk: usize,
    /// Worker threads that decode, resize and encode, at least 1.
    pub workers: usize,
    /// Resize, JPEG quality and video frame rate.
    pub frames: FrameOptions,
    /// The meta format of new chunks.
    pub meta_format: MetaFormat,
    /// Stop at the first item that fails instead of skipping it.
    pub strict: bool,
    /// Shuffle the items with this seed before chunking.
    pub shuffle_seed: Option<u64>,
    /// Sync files and directory on every commit (on unless the output is
    /// throw-away).
    pub fsync: bool,
    /// Write only this task's chunks of a sharded run (see [`Shard`]).
    pub shard: Option<Shard>,
}

impl Default for IngestOptions {
    fn default() -> IngestOptions {
        IngestOptions {
            items_per_chunk: 100,
            workers: thread::available_parallelism().map_or(1, usize::from),
            frames: FrameOptions::default(),
            meta_format: MetaFormat::Json,
            strict: false,
            shuffle_seed: None,
            fsync: true,
            shard: None,
        }
    }
}

/// Where a run is, given to the progress callback after every item.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Items to do in this run (after skipping ids already present).
    pub items_total: usize,
    /// Items done (written or skipped).
    pub items_done: usize,
    /// Items skipped because they failed.
    pub items_failed: usize,
    /// Frames written.
    pub frames: u64,
    /// JPEG bytes written (without padding).
    pub bytes: u64,
    /// Chunks committed.
    pub chunks: usize,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IngestReport {
    /// Items written.
    pub items: usize,
    /// Frames written.
    pub frames: u64,
    /// JPEG bytes written (without padding).
    pub bytes: u64,
    /// The chunk numbers committed, in order.
    pub chunks: Vec<u64>,
    /// Items not written because they failed, or repeated an id of the input.
    pub skipped: Vec<SkippedItem>,
    /// Items written although ffmpeg reported errors while decoding them.
    pub warnings: Vec<SkippedItem>,
    /// Items whose id was already in the directory (a resumed or extended
    /// run), left as they are.
    pub already_present: usize,
    /// What was cleaned up from an interrupted earlier run.
    pub recovered: Vec<Recovery>,
    /// The label file written, if the adapter has labels.
    pub label_file: Option<PathBuf>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

/// What a run writes and skips: every item to write with its chunk, the
/// items skipped (with why), and the count already present. A pure
/// function of the list (`n` items, their ids by `id`), of the directory
/// (the ids `present`, `committed` chunks, the `next_chunk` number) and of the
/// options (items per chunk, shuffle, shard).
///
/// Chunk k holds the items at positions `[k * per_chunk, (k + 1) *
/// per_chunk)` of the (shuffled) list, as gulpio2 slices it: an item that
/// fails leaves its chunk shorter, so every task of a sharded run computes
/// the same chunks.
fn plan_items(
    list: &dyn DatasetAdapter,
    present: impl Fn(&str) -> bool,
    committed: &HashSet<u64>,
    next_chunk: u64,
    opts: &IngestOptions,
) -> ItemPlan {
    let id_of = |index| list.id(index);
    let source_of = |index| list.source(index);
    let origin_of = |index| list.origin(index);
    let n = list.len();
    let per_chunk = opts.items_per_chunk;
    let order: Vec<usize> = match opts.shuffle_seed {
        None => (0..n).collect(),
        Some(seed) => {
            // The clips of one source stay together (one decode): the
            // runs of a source are shuffled, not the clips.
            let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
            for i in 0..n {
                match runs.last_mut() {
                    Some(run) if source_of(i).is_some() && source_of(i) == source_of(run.start) => {
                        run.end = i + 1;
                    }
                    _ => runs.push(i..i + 1),
                }
            }
            fastrand::Rng::with_seed(seed).shuffle(&mut runs);
            runs.into_iter().flatten().collect()
        }
    };
    let slices = order.len().div_ceil(per_chunk) as u64;
    let mut plan = ItemPlan::default();
    let mut leftover = Vec::new();
    let mut first_seen = FirstSeen::<std::hash::RandomState>::default();
    for (position, index) in order.into_iter().enumerate() {
        let chunk = (position / per_chunk) as u64;
        let mine = opts.shard.is_none_or(|s| s.owns(chunk));
        let id = id_of(index);
        if let Some(first) = first_seen.check(&id, index, &id_of) {
            if mine {
                plan.skipped.push(SkippedItem {
                    index,
                    id,
                    error: ItemError {
                        origin: origin_of(index),
                        ..ItemError::new(format!(
                            "id repeated in the input (first at {})",
                            origin_of(first).unwrap_or_else(|| format!("input #{first}"))
                        ))
                    },
                });
            }
            continue;
        }
        if !mine {
            continue;
        }
        if present(id.as_str()) {
            plan.already_present += 1;
        } else if committed.contains(&chunk) {
            // Its chunk is written without it: it failed in an earlier run,
            // or the list changed.
            leftover.push((index, id, chunk));
        } else {
            plan.todo.push((index, id, chunk));
        }
    }
    if opts.shard.is_some() {
        // Other tasks number their chunks from the list too: no room for
        // extra chunks. Retrying is for an unsharded run.
        for (index, id, chunk) in leftover {
            plan.skipped.push(SkippedItem {
                index,
                id,
                error: ItemError::new(format!(
                    "chunk {chunk} is committed without this item (it failed in an earlier run, or the list changed); an unsharded run retries it"
                )),
            });
        }
    } else {
        // Items of chunks already written (an extended list, or items that
        // failed before): in new chunks after every chunk of the list.
        let first = slices.max(next_chunk);
        for (k, (index, id, _)) in leftover.into_iter().enumerate() {
            plan.todo.push((index, id, first + (k / per_chunk) as u64));
        }
    }
    plan
}

/// The input index at which each id was first seen, held as a 64-bit hash
/// of the id (16 bytes an item, not the id's copy): an id whose hash is
/// already known is compared with the id first seen with that hash, and
/// only ids whose hash collides with another's are kept whole.
#[derive(Default)]
struct FirstSeen<S = std::hash::RandomState> {
    by_hash: HashMap<u64, usize>,
    collided: HashMap<String, usize>,
    hasher: S,
}

impl<S: std::hash::BuildHasher> FirstSeen<S> {
    /// The input index where `id` (input `index`) was first seen, if
    /// before; else records it. `id_of` gives the id of an earlier index.
    fn check(&mut self, id: &str, index: usize, id_of: &impl Fn(usize) -> String) -> Option<usize> {
        use std::collections::hash_map::Entry;
        match self.by_hash.entry(self.hasher.hash_one(id)) {
            Entry::Vacant(slot) => {
                slot.insert(index);
                None
            }
            Entry::Occupied(slot) if id_of(*slot.get()) == id => Some(*slot.get()),
            Entry::Occupied(_) => match self.collided.get(id) {
                Some(&first) => Some(first),
                None => {
                    self.collided.insert(id.to_owned(), index);
                    None
                }
            },
        }
    }
}

/// See [`plan_items`].
#[derive(Debug, Default, PartialEq)]
struct ItemPlan {
    /// (input index, id, chunk) of each item to write, in writing order.
    todo: Vec<(usize, String, u64)>,
    skipped: Vec<SkippedItem>,
    already_present: usize,
}

/// Ingests every item of `adapter` into `output` (created if missing).
///
/// Ids already in `output` are skipped, and new chunks are numbered after the
/// highest one there, so running the same ingest again after an interruption
/// finishes it with every id exactly once. A chunk becomes visible only when
/// complete; an error leaves the chunks committed so far and nothing else.
pub fn ingest(
    adapter: &dyn DatasetAdapter,
    output: &Path,
    opts: &IngestOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<IngestReport> {
    let start = Instant::now();
    check_options(opts)?;
    // Into an object store: chunks are written in a local staging directory
    // and uploaded when committed (data, then meta: the meta is the commit,
    // as locally). Several writers of one prefix are told apart only by
    // their chunks (--shard), so there is no lock and no plan file there.
    let remote = gulp_store::is_remote(output);
    // The staging directory is removed at the end; one that a killed run
    // left is removed by the next run (see `staging`).
    let staging = if remote {
        Some(Staging::create()?)
    } else {
        None
    };
    let write_dir = staging.as_ref().map_or(output, |s| s.path());
    if !remote {
        fs::create_dir_all(output).map_err(|e| Error::io("creating", output, e))?;
    }
    let (task, dir_lock) = take_output(adapter, output, opts, remote)?;
    let mut report = IngestReport {
        recovered: match opts.shard {
            _ if remote => Vec::new(),
            Some(shard) => gulp_io::recover_chunks(output, |k| shard.owns(k))?,
            None => gulp_io::recover(output)?,
        },
        ..IngestReport::default()
    };
    let gulp = open_output(output)?;
    let committed: HashSet<u64> = gulp.chunks().iter().map(|c| c.chunk).collect();

    let plan = plan_items(
        adapter,
        |id| gulp.contains(id),
        &committed,
        gulp.next_chunk_number(),
        opts,
    );
    report.skipped.extend(plan.skipped);
    report.already_present += plan.already_present;
    let todo = plan.todo;
    let mut task = task;
    if let Some(task) = task.as_mut() {
        task.join(!todo.is_empty())?;
    }
    if opts.strict
        && let Some(dup) = report.skipped.first()
    {
        return Err(Error::Item {
            index: dup.index,
            id: dup.id.clone(),
            error: dup.error.clone(),
        });
    }
    report.label_file = write_labels(adapter, write_dir, output, remote)?;

    let state = Run {
        adapter,
        output: write_dir,
        publish: remote.then_some(output),
        opts,
        frames: frame_options(adapter, opts),
        batching: AtomicBool::new(true),
    };
    let present = gulp.len();
    drop(gulp);
    state.run(todo, &mut report, progress)?;
    match task {
        Some(task) => _ = task.finish()?,
        None if !remote && !report.chunks.is_empty() => {
            refresh_index(output, present + report.items, dir_lock)?;
        }
        None => {}
    }
    report.elapsed = start.elapsed();
    Ok(report)
}

/// The output directory as the run plans from it: its index file read if
/// fresh, never built here (the run is about to make it stale;
/// [`refresh_index`] writes it after).
pub(crate) fn open_output(output: &Path) -> Result<GulpDirectory> {
    Ok(GulpDirectory::options()
        .index(GulpDirectory::writer_index_policy()?)
        .open(output)?)
}

/// After an unsharded run wrote chunks, `items` in the directory now:
/// brings its index file up to date while `lock` keeps other writers out,
/// then releases it (a sharded task leaves it to the first open after the
/// run, so that the tasks do not each rebuild it while the others write).
fn refresh_index(output: &Path, items: usize, lock: Option<File>) -> Result<()> {
    GulpDirectory::refresh_index(output, items)?;
    drop(lock);
    Ok(())
}

/// Refuses options that would write nothing.
fn check_options(opts: &IngestOptions) -> Result<()> {
    crate::frames::check_ranges(opts.items_per_chunk, opts.workers, &opts.frames)
}

/// Claims the output for the run: a sharded task shares the directory with
/// the other tasks (and recovers only its own chunks), so it takes its task
/// lock; a plain run has the directory to itself and locks it; an object
/// store has no lock (see [`ingest`]).
fn take_output(
    adapter: &dyn DatasetAdapter,
    output: &Path,
    opts: &IngestOptions,
    remote: bool,
) -> Result<(Option<TaskLock>, Option<File>)> {
    Ok(match opts.shard {
        None if remote => (None, None),
        Some(shard) => {
            let plan = Plan {
                count: shard.count,
                items_per_chunk: opts.items_per_chunk,
                items: adapter.len(),
                shuffle_seed: opts.shuffle_seed,
            };
            (Some(TaskLock::take(output, shard, plan)?), None)
        }
        None => (None, Some(lock(output)?)),
    })
}

/// Writes the adapter's label file, if it has labels, into `write_dir` and,
/// into an object store, uploads it; returns where it is.
fn write_labels(
    adapter: &dyn DatasetAdapter,
    write_dir: &Path,
    output: &Path,
    remote: bool,
) -> Result<Option<PathBuf>> {
    let Some(labels) = adapter.labels() else {
        return Ok(None);
    };
    let written = labels.write(write_dir)?;
    Ok(Some(if remote {
        let url = gulp_io::LabelIndex::path(output);
        publish_file(&written, &url)?;
        url
    } else {
        written
    }))
}

/// The frame options of the run: the adapter's frame rate and a share of
/// the cores for decoding where the caller left them unset.
fn frame_options(adapter: &dyn DatasetAdapter, opts: &IngestOptions) -> FrameOptions {
    let mut frames = opts.frames;
    if frames.frame_rate.is_none() {
        frames.frame_rate = adapter.default_frame_rate();
    }
    if frames.decode_threads.is_none() {
        frames.decode_threads = Some(decode_threads_per_worker(opts.workers));
    }
    frames
}

/// Takes an exclusive lock on the output directory itself for the run, so
/// two ingests never write into one directory (released on drop, and by the
/// OS if the process dies; no lock file is left behind).
pub(crate) fn lock(output: &Path) -> Result<File> {
    let dir = File::open(output).map_err(|e| Error::io("opening", output, e))?;
    match dir.try_lock() {
        Ok(()) => Ok(dir),
        Err(fs::TryLockError::WouldBlock) => Err(Error::Locked {
            path: output.to_owned(),
        }),
        Err(fs::TryLockError::Error(e)) => Err(Error::io("locking", output, e)),
    }
}

struct Run<'a> {
    adapter: &'a dyn DatasetAdapter,
    /// Where chunks are written (the output, or the staging directory).
    output: &'a Path,
    /// The object-store URL committed chunks are uploaded to.
    publish: Option<&'a Path>,
    opts: &'a IngestOptions,
    frames: FrameOptions,
    /// Cleared when a batch meets frames too large to batch: the videos of
    /// a dataset tend to share a size, and a batch that fails costs an
    /// ffmpeg start and the decoding of its first frames.
    batching: AtomicBool,
}

/// How many of the `remaining` items the next group takes: [`BATCH`], or a
/// worker's share of what is left when that is less (at least 1), so that
/// no worker is left with a long group while the others have nothing to do.
/// (Halving that share gave more single decodes at the end of a run, each
/// with its own ffmpeg start, and was about 2 % slower.)
fn group_size(remaining: usize, workers: usize) -> usize {
    (remaining / workers.max(1)).clamp(1, BATCH)
}

/// The least memory a clip in flight may hold before it spills, when a
/// source has many.
const MIN_CLIP_MEMORY: usize = 64 << 10;

impl Run<'_> {
    /// `error` of item `index`, with where the item is in the input when
    /// the adapter says (a manifest's row).
    fn located(&self, index: usize, mut error: ItemError) -> ItemError {
        error.origin = self.adapter.origin(index);
        error
    }

    /// The sizes of the groups the producer hands out, in order: the clips
    /// of one source together ([`DatasetAdapter::source`]), other items
    /// as [`group_size`] says.
    fn groups(&self, todo: &[(usize, String, u64)], workers: usize) -> Vec<usize> {
        let source = |k: usize| self.adapter.source(todo[k].0);
        let mut sizes = Vec::new();
        let mut k = 0;
        while k < todo.len() {
            let size = match source(k) {
                Some(s) => todo[k..]
                    .iter()
                    .take_while(|t| self.adapter.source(t.0) == Some(s))
                    .count(),
                None => {
                    let most = group_size(todo.len() - k, workers);
                    todo[k..]
                        .iter()
                        .take(most)
                        .take_while(|t| self.adapter.source(t.0).is_none())
                        .count()
                }
            };
            sizes.push(size.max(1));
            k += size.max(1);
        }
        sizes
    }
}

/// One item to do: its place in the run, its index in the adapter, its id.
struct Job {
    seq: usize,
    index: usize,
    id: String,
    chunk: u64,
}

/// A worker's answer for one item.
struct Outcome {
    seq: usize,
    index: usize,
    id: String,
    chunk: u64,
    result: std::result::Result<Encoded, Failure>,
}

enum Failure {
    Item(ItemError),
    Panic { worker: String, message: String },
}

struct Encoded {
    meta: Value,
    frames: FrameBuffer,
    warning: Option<String>,
    times: Option<FrameTimes>,
    audio: Option<ClipAudio>,
}

/// A clip cut from its source's decode, before its meta joins it.
struct Cut {
    frames: FrameBuffer,
    times: FrameTimes,
    audio: Option<ClipAudio>,
    warning: Option<String>,
}

impl Run<'_> {
    fn run(
        &self,
        todo: Vec<(usize, String, u64)>,
        report: &mut IngestReport,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<()> {
        let workers = self.opts.workers;
        let groups = self.groups(&todo, workers);
        // Room for every worker's group and one more group each; and for
        // the largest source's clips, which go to one worker together.
        let largest = groups.iter().copied().max().unwrap_or(0);
        let usual = workers * BATCH * 2 + 2;
        let window = usual.max(largest + workers * BATCH);
        // Many clips in flight share the budget; they spill to one file a
        // source.
        let floor = if window > usual {
            MIN_CLIP_MEMORY
        } else {
            1 << 20
        };
        let per_item_memory = (MEMORY_BUDGET / window).max(floor);
        let (job_tx, job_rx) = bounded::<Vec<Job>>(workers);
        let (out_tx, out_rx) = bounded::<Outcome>(window);
        let (credit_tx, credit_rx) = bounded::<()>(window);
        for _ in 0..window {
            let _ = credit_tx.send(());
        }
        let stop = AtomicBool::new(false);
        let mut status = Progress {
            items_total: todo.len(),
            ..Progress::default()
        };
        progress(&status);
        // Items left per chunk: a chunk is committed after its last one.
        let mut left: HashMap<u64, usize> = HashMap::new();
        for (_, _, chunk) in &todo {
            *left.entry(*chunk).or_default() += 1;
        }

        thread::scope(|scope| -> Result<()> {
            let stop = &stop;
            thread::Builder::new()
                .name("gulp-ingest-producer".into())
                .spawn_scoped(scope, move || {
                    // Groups of consecutive items, so that a worker can
                    // decode a group's videos (or a source's clips) with
                    // one ffmpeg.
                    let mut jobs = todo.into_iter().enumerate();
                    for size in groups {
                        let mut group = Vec::with_capacity(size);
                        for (seq, (index, id, chunk)) in jobs.by_ref().take(size) {
                            if credit_rx.recv().is_err() || stop.load(Ordering::Relaxed) {
                                return;
                            }
                            group.push(Job {
                                seq,
                                index,
                                id,
                                chunk,
                            });
                        }
                        if job_tx.send(group).is_err() {
                            return;
                        }
                    }
                })
                .map_err(|e| Error::io("starting a thread", self.output, e))?;
            for k in 0..workers {
                let jobs = job_rx.clone();
                let out = out_tx.clone();
                let name = format!("gulp-ingest-worker-{k}");
                let run = self;
                thread::Builder::new()
                    .name(name.clone())
                    .spawn_scoped(scope, move || {
                        run.worker(&name, &jobs, &out, stop, per_item_memory);
                    })
                    .map_err(|e| Error::io("starting a thread", self.output, e))?;
            }
            drop(job_rx);
            drop(out_tx);
            let result = self.write_in_order(
                &out_rx,
                &credit_tx,
                &mut left,
                report,
                &mut status,
                progress,
            );
            stop.store(true, Ordering::Relaxed);
            // Unblock everyone: no more credits, no more results taken.
            drop(credit_tx);
            drop(out_rx);
            result
        })
    }

    fn worker(
        &self,
        name: &str,
        jobs: &Receiver<Vec<Job>>,
        out: &Sender<Outcome>,
        stop: &AtomicBool,
        memory: usize,
    ) {
        let failure = |panic: Box<dyn std::any::Any + Send>| Failure::Panic {
            worker: name.to_owned(),
            message: panic_message(panic.as_ref()),
        };
        while let Ok(group) = jobs.recv() {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let mut items: Vec<(Job, std::result::Result<Item, Failure>)> = group
                .into_iter()
                .map(|job| {
                    let item = match catch_unwind(AssertUnwindSafe(|| self.adapter.item(job.index)))
                    {
                        Ok(Ok(item)) => Ok(item),
                        Ok(Err(e)) => Err(Failure::Item(e)),
                        Err(panic) => Err(failure(panic)),
                    };
                    (job, item)
                })
                .collect();
            let mut cuts = match catch_unwind(AssertUnwindSafe(|| self.cut_clips(&items, memory))) {
                Ok(cuts) => cuts,
                Err(panic) => {
                    let message = panic_message(panic.as_ref());
                    items
                        .iter()
                        .map(|_| {
                            Some(Err(Failure::Panic {
                                worker: name.to_owned(),
                                message: message.clone(),
                            }))
                        })
                        .collect()
                }
            };
            let mut batched = catch_unwind(AssertUnwindSafe(|| self.encode_batch(&items, memory)))
                .unwrap_or_default();
            for (k, (job, item)) in items.drain(..).enumerate() {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let cut = cuts.get_mut(k).and_then(Option::take);
                let result = match (batched.get_mut(k).and_then(Option::take), item) {
                    (_, Err(failure)) => Err(failure),
                    (_, Ok(item)) if cut.is_some() => match cut {
                        Some(Ok(cut)) => Ok(Encoded {
                            meta: item.meta,
                            frames: cut.frames,
                            warning: cut.warning,
                            times: Some(cut.times),
                            audio: cut.audio,
                        }),
                        Some(Err(failure)) => Err(failure),
                        None => Err(Failure::Item(ItemError::new("no cut"))),
                    },
                    (Some((frames, times)), Ok(item)) => Ok(Encoded {
                        meta: item.meta,
                        frames,
                        warning: None,
                        times,
                        audio: None,
                    }),
                    (None, Ok(item)) => {
                        match catch_unwind(AssertUnwindSafe(|| self.encode(item, memory))) {
                            Ok(Ok(encoded)) => Ok(encoded),
                            Ok(Err(e)) => Err(Failure::Item(e)),
                            Err(panic) => Err(failure(panic)),
                        }
                    }
                };
                let Job {
                    seq,
                    index,
                    id,
                    chunk,
                } = job;
                if out
                    .send(Outcome {
                        seq,
                        index,
                        id,
                        chunk,
                        result,
                    })
                    .is_err()
                {
                    return;
                }
            }
        }
    }

    /// Cuts the group's clips ([`FrameSource::Clip`]) from one decode per
    /// source; for each item, its cut when it is a clip, `None` otherwise.
    fn cut_clips(
        &self,
        items: &[(Job, std::result::Result<Item, Failure>)],
        memory: usize,
    ) -> Vec<Option<std::result::Result<Cut, Failure>>> {
        let mut result: Vec<_> = items.iter().map(|_| None).collect();
        // The clips of each source, in the group's order.
        let mut sources: Vec<(&Path, Vec<(usize, Span)>)> = Vec::new();
        for (k, (_, item)) in items.iter().enumerate() {
            let Ok(item) = item else { continue };
            let (path, span) = match &item.frames {
                FrameSource::Clip { path, span } => (path, *span),
                // Sound comes with times: the whole video as a clip.
                FrameSource::Video(path) if self.frames.audio.is_some() => (path, Span::WHOLE),
                _ => continue,
            };
            match sources.iter_mut().find(|(p, _)| p == path) {
                Some((_, clips)) => clips.push((k, span)),
                None => sources.push((path.as_path(), vec![(k, span)])),
            }
        }
        for (path, clips) in sources {
            let spill = SpillFile::new(self.output);
            let spans: Vec<Span> = clips.iter().map(|&(_, span)| span).collect();
            let buffers = std::cell::RefCell::new(
                clips
                    .iter()
                    .map(|_| FrameBuffer::sharing(spill.clone(), memory))
                    .collect::<Vec<_>>(),
            );
            let report = encode_clips(
                path,
                &spans,
                &self.frames,
                &mut |clip, jpeg| buffers.borrow_mut()[clip].push(jpeg.to_vec()),
                &mut || {
                    for b in buffers.borrow_mut().iter_mut() {
                        *b = FrameBuffer::sharing(spill.clone(), memory);
                    }
                },
            );
            let buffers = buffers.into_inner();
            match report {
                Err(e) => {
                    for &(k, _) in &clips {
                        result[k] = Some(Err(Failure::Item(e.clone())));
                    }
                }
                Ok(report) => {
                    // Sound that could not be decoded is named (a source
                    // without sound is not).
                    let lost = report
                        .no_audio
                        .filter(|why| why != video::NO_AUDIO_STREAM)
                        .map(|why| format!("kept without sound: {why}"));
                    let reported = report.warning.map(|w| format!("ffmpeg reported: {w}"));
                    let warning = match (reported, lost) {
                        (Some(w), Some(l)) => Some(format!("{w}; {l}")),
                        (w, l) => w.or(l),
                    };
                    for (((k, _), frames), cut) in clips.iter().zip(buffers).zip(report.clips) {
                        result[*k] = Some(match cut {
                            Ok(cut) => Ok(Cut {
                                frames,
                                times: cut.times,
                                audio: cut.audio,
                                warning: warning.clone(),
                            }),
                            Err(why) => Err(Failure::Item(ItemError::at(path, why))),
                        });
                    }
                }
            }
        }
        result
    }

    /// Encodes the videos of a group (two or more) with one ffmpeg; for each
    /// item, its frames when that worked, `None` for the items left to
    /// encode one by one (all of them if the batch failed).
    fn encode_batch(
        &self,
        items: &[(Job, std::result::Result<Item, Failure>)],
        memory: usize,
    ) -> Vec<Option<(FrameBuffer, Option<FrameTimes>)>> {
        let mut result: Vec<Option<_>> = items.iter().map(|_| None).collect();
        let videos: Vec<(usize, &Path)> = items
            .iter()
            .enumerate()
            .filter_map(|(k, (_, item))| match item {
                Ok(Item {
                    frames: FrameSource::Video(path),
                    ..
                }) => Some((k, path.as_path())),
                _ => None,
            })
            // A large file (or one that cannot be read) is decoded alone.
            .filter(|(_, path)| fs::metadata(path).is_ok_and(|m| m.len() <= BATCH_MAX_FILE))
            .collect();
        // With sound, videos are cut as clips (`cut_clips`).
        if videos.len() < 2 || !self.batching.load(Ordering::Relaxed) || self.frames.audio.is_some()
        {
            return result;
        }
        let paths: Vec<&Path> = videos.iter().map(|&(_, p)| p).collect();
        let mut buffers: Vec<FrameBuffer> = videos
            .iter()
            .map(|_| FrameBuffer::new(self.output, memory))
            .collect();
        let mut sinks: Vec<_> = buffers
            .iter_mut()
            .map(|frames| move |jpeg: Vec<u8>| frames.push(jpeg))
            .collect();
        let mut refs: Vec<&mut JpegSink<'_>> = sinks.iter_mut().map(|s| s as _).collect();
        let rates = match encode_videos(&paths, &self.frames, &mut refs) {
            BatchOutcome::Decoded(rates) => rates,
            BatchOutcome::Failed => return result,
            BatchOutcome::TooLarge => {
                self.batching.store(false, Ordering::Relaxed);
                return result;
            }
        };
        drop(refs);
        drop(sinks);
        for (((k, _), frames), rate) in videos.iter().zip(buffers).zip(rates) {
            result[*k] = Some((frames, Encoding::video(None, rate).times));
        }
        result
    }

    fn encode(&self, item: Item, memory: usize) -> std::result::Result<Encoded, ItemError> {
        let mut frames = FrameBuffer::new(self.output, memory);
        let encoding = encode_frames(&item.frames, &self.frames, &mut |jpeg| frames.push(jpeg))?;
        if frames.len() == 0 {
            return Err(ItemError::new("no frames"));
        }
        Ok(Encoded {
            meta: item.meta,
            frames,
            warning: encoding.warning.map(|m| format!("ffmpeg reported: {m}")),
            times: encoding.times,
            audio: None,
        })
    }

    fn write_in_order(
        &self,
        results: &Receiver<Outcome>,
        credits: &Sender<()>,
        left: &mut HashMap<u64, usize>,
        report: &mut IngestReport,
        status: &mut Progress,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<()> {
        let mut pending: BTreeMap<usize, Outcome> = BTreeMap::new();
        let mut next = 0usize;
        let mut chunk: Option<ChunkWriter> = None;
        for outcome in results {
            pending.insert(outcome.seq, outcome);
            while let Some(outcome) = pending.remove(&next) {
                next += 1;
                let number = outcome.chunk;
                self.write_one(outcome, &mut chunk, report, status)?;
                let rest = left.get_mut(&number).map(|n| {
                    *n -= 1;
                    *n
                });
                if rest == Some(0)
                    && chunk.as_ref().is_some_and(|w| w.chunk() == number)
                    && let Some(w) = chunk.take()
                {
                    self.commit(w, report, status)?;
                }
                progress(status);
                let _ = credits.send(());
            }
        }
        if next != status.items_total {
            // Workers stopped early without an error reaching us: only a
            // failed thread start can do that.
            return Err(Error::Options(format!(
                "the pipeline stopped after {next} of {} items",
                status.items_total
            )));
        }
        if let Some(writer) = chunk.take() {
            self.commit(writer, report, status)?;
            progress(status);
        }
        Ok(())
    }

    /// Commits a chunk (and uploads it, into an object store).
    fn commit(
        &self,
        writer: ChunkWriter,
        report: &mut IngestReport,
        status: &mut Progress,
    ) -> Result<()> {
        let summary = writer.finish()?;
        if let Some(url) = self.publish {
            for name in [
                gulp_format::data_file_name(summary.chunk),
                gulp_format::meta_file_name(summary.chunk),
            ] {
                let local = self.output.join(&name);
                publish_file(&local, &url.join(&name))?;
                let _ = fs::remove_file(&local);
            }
        }
        report.chunks.push(summary.chunk);
        status.chunks += 1;
        Ok(())
    }

    fn write_one(
        &self,
        outcome: Outcome,
        chunk: &mut Option<ChunkWriter>,
        report: &mut IngestReport,
        status: &mut Progress,
    ) -> Result<()> {
        status.items_done += 1;
        let Outcome {
            index,
            id,
            chunk: number,
            result,
            ..
        } = outcome;
        // Items come in list order: the first item of another chunk
        // commits the one being written.
        if chunk.as_ref().is_some_and(|w| w.chunk() != number)
            && let Some(w) = chunk.take()
        {
            self.commit(w, report, status)?;
        }
        let encoded = match result {
            Ok(e) => e,
            Err(Failure::Panic { worker, message }) => {
                return Err(Error::WorkerPanic { worker, message });
            }
            Err(Failure::Item(error)) => {
                let error = self.located(index, error);
                if error.fatal || self.opts.strict {
                    return Err(Error::Item { index, id, error });
                }
                status.items_failed += 1;
                report.skipped.push(SkippedItem { index, id, error });
                return Ok(());
            }
        };
        let writer = match chunk {
            Some(w) => w,
            None => {
                let w = ChunkWriter::builder()
                    .meta_format(self.opts.meta_format)
                    .fsync(self.opts.fsync)
                    .create(self.output, number)?;
                chunk.insert(w)
            }
        };
        let Encoded {
            meta,
            mut frames,
            warning,
            times,
            audio,
        } = encoded;
        let n = frames.len() as u64;
        let bytes = frames.bytes;
        let sound = self.frames.audio.zip(audio.as_ref());
        let media = ItemMedia {
            frame_times: times,
            audio: sound.map(|(a, clip)| match clip {
                ClipAudio::NoTrack => AudioInput::NoTrack,
                ClipAudio::Pcm { samples, start } => AudioInput::Pcm(Pcm {
                    samples,
                    sample_rate: a.sample_rate,
                    channels: a.channels,
                    start: *start,
                }),
            }),
        };
        frames
            .append_to(writer, &id, meta, media)
            .map_err(|e| match e {
                AppendError::Gulp(e) => Error::from(e),
                AppendError::Spill(e) => {
                    Error::io("reading back spilled frames of", self.output, e)
                }
            })?;
        if let Some(message) = warning {
            report.warnings.push(SkippedItem {
                index,
                id,
                error: self.located(index, ItemError::new(message)),
            });
        }
        report.items += 1;
        report.frames += n;
        report.bytes += bytes;
        status.frames += n;
        status.bytes += bytes;
        Ok(())
    }
}

/// Uploads a local file to an object-store URL.
fn publish_file(local: &Path, url: &Path) -> Result<()> {
    #[cfg(feature = "s3")]
    return Ok(gulp_store::s3::upload_file(local, url)?);
    #[cfg(not(feature = "s3"))]
    {
        let _ = local;
        Err(gulp_store::Error::no_object_store(url).into())
    }
}

pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".into()
    }
}

/// An item's encoded frames: in memory up to a limit, then in an unnamed
/// temporary file in the output directory (never visible, gone when
/// closed), which the clips of one source share.
struct FrameBuffer {
    limit: usize,
    memory: Vec<Vec<u8>>,
    in_memory: usize,
    spill: SpillFile,
    /// (offset, length) of each spilled frame in the spill file.
    spilled: Vec<(u64, u64)>,
    bytes: u64,
}

/// A temporary file that frame buffers spill to, made when first needed.
#[derive(Clone)]
struct SpillFile {
    dir: PathBuf,
    file: std::sync::Arc<std::sync::Mutex<Option<(File, u64)>>>,
}

impl SpillFile {
    fn new(dir: &Path) -> SpillFile {
        SpillFile {
            dir: dir.to_owned(),
            file: std::sync::Arc::default(),
        }
    }

    /// Appends `bytes`; where they went.
    fn write(&self, bytes: &[u8]) -> io::Result<u64> {
        let mut guard = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if guard.is_none() {
            *guard = Some((tempfile::tempfile_in(&self.dir)?, 0));
        }
        let Some((file, len)) = guard.as_mut() else {
            return Err(io::Error::other("no spill file"));
        };
        let at = *len;
        // Positioned writes: the clips of a source may take turns.
        std::os::unix::fs::FileExt::write_all_at(file, bytes, at)?;
        *len += bytes.len() as u64;
        Ok(at)
    }

    fn read(&self, at: u64, len: u64) -> io::Result<Vec<u8>> {
        let guard = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some((file, _)) = guard.as_ref() else {
            return Err(io::Error::other("no spill file"));
        };
        let mut buf = vec![0; usize::try_from(len).map_err(io::Error::other)?];
        std::os::unix::fs::FileExt::read_exact_at(file, &mut buf, at)?;
        Ok(buf)
    }
}

enum AppendError {
    Gulp(gulp_io::Error),
    Spill(io::Error),
}

impl FrameBuffer {
    fn new(dir: &Path, limit: usize) -> FrameBuffer {
        FrameBuffer::sharing(SpillFile::new(dir), limit)
    }

    /// A buffer that spills to `spill`, which other buffers may share.
    fn sharing(spill: SpillFile, limit: usize) -> FrameBuffer {
        FrameBuffer {
            limit,
            memory: Vec::new(),
            in_memory: 0,
            spill,
            spilled: Vec::new(),
            bytes: 0,
        }
    }

    fn len(&self) -> usize {
        self.memory.len() + self.spilled.len()
    }

    /// Adds a frame; a failure to spill is the machine's (the disk), not the
    /// item's.
    fn push(&mut self, jpeg: Vec<u8>) -> std::result::Result<(), ItemError> {
        self.add(jpeg).map_err(|e| {
            ItemError::new(format!("spilling frames to a temporary file: {e}")).fatal()
        })
    }

    fn add(&mut self, jpeg: Vec<u8>) -> io::Result<()> {
        self.bytes += jpeg.len() as u64;
        if self.spilled.is_empty() && self.in_memory + jpeg.len() <= self.limit {
            self.in_memory += jpeg.len();
            self.memory.push(jpeg);
            return Ok(());
        }
        let at = self.spill.write(&jpeg)?;
        self.spilled.push((at, jpeg.len() as u64));
        Ok(())
    }

    /// Appends the item to `writer`: the in-memory frames, then the spilled
    /// ones read back one at a time.
    fn append_to(
        &mut self,
        writer: &mut ChunkWriter,
        id: &str,
        meta: Value,
        media: ItemMedia<'_>,
    ) -> std::result::Result<(), AppendError> {
        let memory = std::mem::take(&mut self.memory);
        let spilled = std::mem::take(&mut self.spilled);
        let mut failed: Option<io::Error> = None;
        let spill = &self.spill;
        let from_disk = spilled
            .iter()
            .map_while(|&(at, len)| match spill.read(at, len) {
                Ok(buf) => Some(buf),
                Err(e) => {
                    failed = Some(e);
                    None
                }
            });
        writer
            .append_with(id, meta, memory.into_iter().chain(from_disk), media)
            .map_err(AppendError::Gulp)?;
        match failed {
            // The chunk now holds part of the item: the caller drops the
            // writer, which discards the whole chunk.
            Some(e) => Err(AppendError::Spill(e)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::Shard;

    /// A list of ids, for planning.
    struct Ids<'a>(&'a [&'a str]);

    impl DatasetAdapter for Ids<'_> {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn id(&self, index: usize) -> String {
            self.0[index].to_owned()
        }
        fn item(&self, _: usize) -> std::result::Result<Item, ItemError> {
            Err(ItemError::new("planning only"))
        }
    }

    fn plan(
        ids: &[&str],
        existing: &[&str],
        committed: &[u64],
        next_chunk: u64,
        opts: &IngestOptions,
    ) -> ItemPlan {
        plan_items(
            &Ids(ids),
            |id| existing.contains(&id),
            &committed.iter().copied().collect(),
            next_chunk,
            opts,
        )
    }

    fn todo(plan: &ItemPlan) -> Vec<(&str, u64)> {
        plan.todo
            .iter()
            .map(|(_, id, k)| (id.as_str(), *k))
            .collect()
    }

    #[test]
    fn chunks_are_slices_of_the_list_and_present_ids_are_skipped() {
        let opts = IngestOptions {
            items_per_chunk: 2,
            ..IngestOptions::default()
        };
        let p = plan(&["a", "b", "c", "d", "e"], &[], &[], 0, &opts);
        assert_eq!(todo(&p), [("a", 0), ("b", 0), ("c", 1), ("d", 1), ("e", 2)]);
        // A re-run: chunk 0 is there with a and b; c failed in chunk 1,
        // which holds d: c goes to a new chunk after the list's.
        let p = plan(
            &["a", "b", "c", "d", "e"],
            &["a", "b", "d"],
            &[0, 1],
            2,
            &opts,
        );
        assert_eq!(p.already_present, 3);
        assert_eq!(todo(&p), [("e", 2), ("c", 3)]);
        // A repeated id is skipped, named with its first place.
        let p = plan(&["a", "b", "a"], &[], &[], 0, &opts);
        assert_eq!(p.skipped.len(), 1);
        assert!(p.skipped[0].error.to_string().contains("first at input #0"));
    }

    /// Ids whose hashes collide are still told apart, and a repeat of
    /// one is still found: every id hashes to 0 here.
    #[test]
    fn repeated_ids_are_found_whatever_their_hashes() {
        #[derive(Default)]
        struct Zero;
        impl std::hash::Hasher for Zero {
            fn finish(&self) -> u64 {
                0
            }
            fn write(&mut self, _: &[u8]) {}
        }
        fn firsts<S: std::hash::BuildHasher + Default>(ids: &[&str]) -> Vec<Option<usize>> {
            let id_of = |i: usize| ids[i].to_owned();
            let mut seen = FirstSeen::<S>::default();
            (0..ids.len())
                .map(|i| seen.check(ids[i], i, &id_of))
                .collect()
        }
        let ids = ["a", "b", "a", "c", "b", "b"];
        let want = [None, None, Some(0), None, Some(1), Some(1)];
        assert_eq!(firsts::<std::hash::BuildHasherDefault<Zero>>(&ids), want);
        assert_eq!(firsts::<std::hash::RandomState>(&ids), want);
    }

    #[test]
    fn a_shard_plans_its_chunks_and_retries_nothing() {
        let opts = |index| IngestOptions {
            items_per_chunk: 1,
            shard: Shard::new(index, 2),
            ..IngestOptions::default()
        };
        let ids = ["a", "b", "c", "d"];
        assert_eq!(
            todo(&plan(&ids, &[], &[], 0, &opts(0))),
            [("a", 0), ("c", 2)]
        );
        assert_eq!(
            todo(&plan(&ids, &[], &[], 0, &opts(1))),
            [("b", 1), ("d", 3)]
        );
        let p = plan(&ids, &[], &[1], 4, &opts(1));
        assert_eq!(todo(&p), [("d", 3)]);
        assert!(
            p.skipped[0]
                .error
                .to_string()
                .contains("an unsharded run retries it")
        );
        // A shuffle is the same for every task: together they cover the list.
        let shuffled = |index| IngestOptions {
            shuffle_seed: Some(9),
            ..opts(index)
        };
        let mut chunks: Vec<u64> = [0, 1]
            .iter()
            .flat_map(|&i| plan(&ids, &[], &[], 0, &shuffled(i)).todo)
            .map(|(_, _, k)| k)
            .collect();
        chunks.sort_unstable();
        assert_eq!(chunks, [0, 1, 2, 3]);
    }
}
