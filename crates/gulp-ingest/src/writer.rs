//! A writer that a program pushes items into one at a time (Python's
//! `gulp.Writer`), on the pieces the [ingest pipeline](crate::ingest)
//! uses: its directory lock, [`gulp_io::recover`] at open, the frame
//! encoder ([`encode_frames`]), [`gulp_io::ChunkWriter`]'s atomic commits,
//! [`LabelIndex`] for labels and the index refresh at the end.
//!
//! ```text
//!  add() ──validate──▶ jobs (bounded) ──▶ worker 0..N ──results──▶ committer
//!    ▲                                     encode                    │
//!    └────────────── credits (one per item in flight) ◀──────────────┘
//! ```
//!
//! `add` checks an item completely on the caller's thread (so a bad item
//! raises there and nothing of it is written), takes a credit (blocking
//! while `2N + 2` items are in flight) and queues it; the committer thread
//! puts the encoded items back in `add` order, appends them to the chunk
//! being filled and commits it after its last item. The output is the same
//! for any number of workers.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender, bounded};
use gulp_format::{MetaFormat, Value};
use gulp_io::{ChunkWriter, ChunkWriterBuilder, GulpDirectory, LabelIndex};

use crate::dataset::{FrameSource, Pixels};
use crate::error::{Error, ItemError, Result};
use crate::frames::{FrameOptions, SubsamplingChoice, check_jpeg, encode_frames};
use crate::pipeline::{IngestReport, lock, open_output, panic_message};
use crate::raster::jpeg_size;

/// What [`Writer::add`] does with an id that is already in the directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnExists {
    /// Refuse it ([`Error::IdExists`]).
    #[default]
    Error,
    /// Skip it and count it ([`IngestReport::already_present`]): running
    /// the same program again after an interruption finishes the job.
    Skip,
}

// The names every front end parses (`gulp.Writer(on_exists=...)`).
gulp_format::choice!(OnExists, "on_exists", {
    OnExists::Error => "error",
    OnExists::Skip => "skip",
});

/// An item's frames as a program holds them.
#[derive(Debug, Clone, PartialEq)]
pub enum Frames {
    /// JPEG files' bytes, stored byte for byte (each is checked with
    /// [`check_jpeg`]).
    Jpeg(Vec<Vec<u8>>),
    /// 8-bit gray or RGB pixels, encoded at the writer's quality and
    /// subsampling. The frames of one item may differ in size.
    Pixels(Vec<Pixels>),
}

/// Settings of a [`Writer`].
#[derive(Debug, Clone)]
pub struct WriterBuilder {
    items_per_chunk: usize,
    workers: usize,
    frames: FrameOptions,
    meta_format: MetaFormat,
    fsync: bool,
    on_exists: OnExists,
    number_labels: bool,
}

impl Default for WriterBuilder {
    fn default() -> WriterBuilder {
        WriterBuilder {
            items_per_chunk: 100,
            workers: thread::available_parallelism().map_or(1, usize::from),
            frames: FrameOptions::default(),
            meta_format: MetaFormat::Json,
            fsync: true,
            on_exists: OnExists::Error,
            number_labels: true,
        }
    }
}

impl WriterBuilder {
    /// Items per chunk (gulpio2's `videos_per_chunk`; default 100).
    pub fn items_per_chunk(&mut self, n: usize) -> &mut Self {
        self.items_per_chunk = n;
        self
    }

    /// Threads that encode frames (default: one per core).
    pub fn workers(&mut self, n: usize) -> &mut Self {
        self.workers = n;
        self
    }

    /// JPEG quality of the frames the writer encodes, 1–100 (default 90,
    /// gulpio2's); JPEG bytes keep theirs.
    pub fn quality(&mut self, quality: u8) -> &mut Self {
        self.frames.quality = quality;
        self
    }

    /// Chroma subsampling of the frames the writer encodes (default
    /// [`SubsamplingChoice::Auto`]: 4:4:4 for pixels, as gulpio2).
    pub fn subsampling(&mut self, subsampling: SubsamplingChoice) -> &mut Self {
        self.frames.subsampling = subsampling;
        self
    }

    /// The meta format of new chunks (default JSON, which gulpio2 reads).
    pub fn meta_format(&mut self, format: MetaFormat) -> &mut Self {
        self.meta_format = format;
        self
    }

    /// Sync files and directory on every commit (default on; off only for
    /// throw-away output).
    pub fn fsync(&mut self, fsync: bool) -> &mut Self {
        self.fsync = fsync;
        self
    }

    /// What to do with ids already in the directory (default
    /// [`OnExists::Error`]).
    pub fn on_exists(&mut self, on_exists: OnExists) -> &mut Self {
        self.on_exists = on_exists;
        self
    }

    /// Number string labels (default on): an item whose meta is an object
    /// with a `"label"` string gets `"idx"`, the label's number in
    /// `label2idx.json` (existing numbers kept, new labels numbered after
    /// them, in the order first met), and the file is written before each
    /// commit that needs it.
    pub fn number_labels(&mut self, on: bool) -> &mut Self {
        self.number_labels = on;
        self
    }

    /// Opens the local gulp directory `dir` (created if missing) for
    /// writing: takes the directory lock that `gulp ingest` takes, clears
    /// what an interrupted write left ([`gulp_io::recover`]) and starts the
    /// encoding threads. New chunks are numbered after the directory's
    /// highest.
    pub fn open(&self, dir: impl AsRef<Path>) -> Result<Writer> {
        Writer::open(dir.as_ref(), self, encode)
    }

    fn check(&self, dir: &Path) -> Result<()> {
        crate::frames::check_ranges(self.items_per_chunk, self.workers, &self.frames)?;
        if gulp_store::is_remote(dir) {
            return Err(Error::Options(format!(
                "{}: the writer writes local directories (write locally, then copy, or use `gulp ingest` into a bucket)",
                dir.display()
            )));
        }
        Ok(())
    }
}

/// How a worker turns a checked item's frames into JPEGs (a plain function,
/// so that the tests can give one that fails).
type Encode = fn(FrameSource, &FrameOptions) -> std::result::Result<Vec<Vec<u8>>, ItemError>;

/// The encoder of [`WriterBuilder::open`]: JPEG bytes as they are (checked
/// by `add`), pixels through the pipeline's [`encode_frames`].
fn encode(
    frames: FrameSource,
    opts: &FrameOptions,
) -> std::result::Result<Vec<Vec<u8>>, ItemError> {
    if let FrameSource::Jpeg(jpegs) = frames {
        return Ok(jpegs);
    }
    let mut out = Vec::new();
    encode_frames(&frames, opts, &mut |jpeg| {
        out.push(jpeg);
        Ok(())
    })?;
    Ok(out)
}

/// Writes items pushed one at a time into a gulp directory, in chunks of
/// `items_per_chunk`, encoding pixels on worker threads.
///
/// Close it with [`finish`](Writer::finish), which commits the last chunk
/// and returns what was written. A writer dropped without `finish` commits
/// the chunks completed before (full, or ended by
/// [`end_chunk`](Writer::end_chunk)) and discards the chunk being filled;
/// one stopped by an error, or killed, leaves the chunks committed so far.
/// Running the same program again with [`OnExists::Skip`] finishes the job.
///
/// ```
/// use gulp_ingest::{Frames, Pixels, Writer};
/// use gulp_format::Value;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let out = tempfile::tempdir()?;
/// let mut writer = Writer::builder().items_per_chunk(2).open(out.path())?;
/// for k in 0..3u8 {
///     let frame = Pixels { width: 4, height: 2, channels: 1, data: vec![k * 80; 8] };
///     let meta: Value = [("label", Value::from(["dog", "cat"][usize::from(k % 2)]))]
///         .into_iter()
///         .collect();
///     writer.add(&format!("clip-{k}"), meta, Frames::Pixels(vec![frame.clone(), frame]))?;
/// }
/// let report = writer.finish()?;
/// assert_eq!((report.items, report.chunks), (3, vec![0, 1]));
/// let gulp = gulp_io::GulpDirectory::open(out.path())?;
/// // Labels numbered in label2idx.json as first met (dog 0, cat 1), the
/// // number added to the meta as "idx".
/// assert_eq!(gulp.meta_data("clip-1")?.get("idx"), Some(&Value::from(1i64)));
/// # Ok(())
/// # }
/// ```
pub struct Writer {
    dir: PathBuf,
    items_per_chunk: usize,
    on_exists: OnExists,
    number_labels: bool,
    /// The directory as it was at open, for the ids already there.
    present: Option<GulpDirectory>,
    /// The ids added since open.
    seen: HashSet<String>,
    /// `label2idx.json`, shared with the committer, which writes it.
    labels: Arc<Mutex<LabelIndex>>,
    /// Whether an item's label was numbered (the label file is the report's).
    labelled: bool,
    /// The chunk being filled, and the items given to it so far.
    chunk: u64,
    in_chunk: usize,
    /// The next message's place in `add` order.
    seq: usize,
    report: IngestReport,
    start: Instant,
    pool: Option<Pool>,
    /// The exclusive lock on the directory, released at the end.
    lock: Option<File>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("dir", &self.dir)
            .field("chunk", &self.chunk)
            .field("in_chunk", &self.in_chunk)
            .field("open", &self.pool.is_some())
            .finish_non_exhaustive()
    }
}

/// The threads of an open writer and the caller's ends of their channels.
struct Pool {
    jobs: Sender<Job>,
    /// For the markers the caller sends the committer (end of a chunk, of
    /// the input), in order with the items.
    results: Sender<Message>,
    credits: Receiver<()>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
    committer: JoinHandle<Result<Committed>>,
}

/// One checked item on its way to a worker.
struct Job {
    seq: usize,
    /// Its place among the items added (for errors).
    index: usize,
    id: String,
    meta: Value,
    frames: FrameSource,
    chunk: u64,
    /// The last item of its chunk: committed right after it is written.
    last: bool,
    /// Its label was numbered by this writer: the label file is written
    /// before its chunk's commit.
    new_label: bool,
}

/// What the committer receives, each with its place in `add` order.
enum Message {
    Item {
        seq: usize,
        index: usize,
        id: String,
        meta: Value,
        chunk: u64,
        last: bool,
        new_label: bool,
        result: std::result::Result<Vec<Vec<u8>>, Failure>,
    },
    /// [`Writer::end_chunk`]: commit the chunk being filled.
    EndChunk { seq: usize },
    /// [`Writer::finish`]: every item is here; commit the rest.
    End { seq: usize },
    /// The writer was dropped: discard the chunk being filled.
    Abort { seq: usize },
}

impl Message {
    fn seq(&self) -> usize {
        match self {
            Message::Item { seq, .. }
            | Message::EndChunk { seq }
            | Message::End { seq }
            | Message::Abort { seq } => *seq,
        }
    }
}

enum Failure {
    Item(ItemError),
    Panic { worker: String, message: String },
}

/// What the committer wrote.
#[derive(Default)]
struct Committed {
    items: usize,
    frames: u64,
    bytes: u64,
    chunks: Vec<u64>,
}

impl Writer {
    /// A builder with the defaults.
    pub fn builder() -> WriterBuilder {
        WriterBuilder::default()
    }

    fn open(dir: &Path, opts: &WriterBuilder, encode: Encode) -> Result<Writer> {
        let start = Instant::now();
        opts.check(dir)?;
        fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
        let lock = lock(dir)?;
        let recovered = gulp_io::recover(dir)?;
        let present = open_output(dir)?;
        let labels = LabelIndex::read(dir)?.unwrap_or_default();
        let chunk = present.next_chunk_number();
        let labels = Arc::new(Mutex::new(labels));
        let pool = Pool::start(dir, opts, encode, &labels)?;
        Ok(Writer {
            dir: dir.to_owned(),
            items_per_chunk: opts.items_per_chunk,
            on_exists: opts.on_exists,
            number_labels: opts.number_labels,
            present: Some(present),
            seen: HashSet::new(),
            labels,
            labelled: false,
            chunk,
            in_chunk: 0,
            seq: 0,
            report: IngestReport {
                recovered,
                ..IngestReport::default()
            },
            start,
            pool: Some(pool),
            lock: Some(lock),
        })
    }

    /// The directory written.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What was cleaned up at open from an interrupted earlier write.
    pub fn recovered(&self) -> &[gulp_io::Recovery] {
        &self.report.recovered
    }

    /// Whether an error stopped the writer: every call but `finish` (which
    /// then returns [`Error::WriterStopped`]) is refused.
    pub fn is_stopped(&self) -> bool {
        self.pool.is_none()
    }

    /// Adds an item: `meta` (its `meta_data` entry) and its frames.
    ///
    /// The item is checked here, completely, before anything of it is
    /// queued: an id given before in this session or already in the
    /// directory ([`Error::IdExists`], unless [`OnExists::Skip`]), no
    /// frames, a frame that is not a JPEG or not 8-bit gray or RGB pixels,
    /// a meta `"idx"` that is not its label's number ([`Error::Rejected`],
    /// naming the frame). Then it is queued for encoding, waiting while
    /// the writer has `2N + 2` items in flight. Returns `false` when the
    /// id was skipped ([`OnExists::Skip`]).
    ///
    /// An error of the writer itself (a worker's, or writing a chunk) is
    /// returned by the call after it, and the writer stops
    /// ([`Error::WriterStopped`] from then on).
    pub fn add(&mut self, id: &str, meta: Value, frames: Frames) -> Result<bool> {
        if self.pool.is_none() {
            return Err(self.stopped());
        }
        if self.seen.contains(id) {
            return Err(Error::IdExists {
                dir: self.dir.clone(),
                id: id.to_owned(),
                reason: "was given twice".into(),
            });
        }
        if self.present.as_ref().is_some_and(|p| p.contains(id)) {
            return match self.on_exists {
                OnExists::Skip => {
                    self.report.already_present += 1;
                    Ok(false)
                }
                OnExists::Error => Err(Error::IdExists {
                    dir: self.dir.clone(),
                    id: id.to_owned(),
                    reason: "is already in the directory (on_exists \"skip\" skips such ids)"
                        .into(),
                }),
            };
        }
        let frames = self.checked(id, frames)?;
        let (meta, new_label) = self.numbered(id, meta)?;
        self.check_pool()?;
        self.seen.insert(id.to_owned());
        self.in_chunk += 1;
        let last = self.in_chunk == self.items_per_chunk;
        let job = Job {
            seq: self.seq,
            index: self.seen.len() - 1,
            id: id.to_owned(),
            meta,
            frames,
            chunk: self.chunk,
            last,
            new_label,
        };
        self.seq += 1;
        if last {
            self.chunk += 1;
            self.in_chunk = 0;
        }
        let sent = self.pool.as_ref().is_some_and(|pool| {
            pool.credits.recv().is_ok()
                && !pool.stop.load(Ordering::Relaxed)
                && pool.jobs.send(job).is_ok()
        });
        if !sent {
            return Err(self.fail());
        }
        Ok(true)
    }

    /// Ends the chunk being filled: it is committed as soon as its items
    /// are written, and the next item starts a new chunk (gulpio2's
    /// `GulpIngestor` makes a chunk of each slice of its list this way).
    /// Nothing happens when the chunk has no item yet.
    pub fn end_chunk(&mut self) -> Result<()> {
        if self.pool.is_none() {
            return Err(self.stopped());
        }
        if self.in_chunk == 0 {
            return Ok(());
        }
        self.check_pool()?;
        let marker = Message::EndChunk { seq: self.seq };
        self.seq += 1;
        self.chunk += 1;
        self.in_chunk = 0;
        if self
            .pool
            .as_ref()
            .is_some_and(|pool| pool.results.send(marker).is_ok())
        {
            Ok(())
        } else {
            Err(self.fail())
        }
    }

    /// Writes what is still in flight, commits the last chunk, brings the
    /// directory's index file up to date, releases the lock and returns
    /// what this writer did.
    pub fn finish(mut self) -> Result<IngestReport> {
        let Some(pool) = self.pool.take() else {
            return Err(self.stopped());
        };
        let _ = pool.results.send(Message::End { seq: self.seq });
        let committed = pool.join()?;
        self.report.items = committed.items;
        self.report.frames = committed.frames;
        self.report.bytes = committed.bytes;
        self.report.chunks = committed.chunks;
        if self.labelled {
            self.report.label_file = Some(LabelIndex::path(&self.dir));
        }
        let present = self.present.take().map_or(0, |p| p.len());
        if !self.report.chunks.is_empty() {
            GulpDirectory::refresh_index(&self.dir, present + self.report.items)?;
        }
        drop(self.lock.take());
        let mut report = std::mem::take(&mut self.report);
        report.elapsed = self.start.elapsed();
        Ok(report)
    }

    /// The frames of item `id` if they can be stored, as a frame source.
    fn checked(&self, id: &str, frames: Frames) -> Result<FrameSource> {
        let rejected = |frame: Option<usize>, reason: String| Error::Rejected {
            dir: self.dir.clone(),
            id: id.to_owned(),
            frame,
            reason,
        };
        let n = match &frames {
            Frames::Jpeg(f) => f.len(),
            Frames::Pixels(f) => f.len(),
        };
        if n == 0 {
            return Err(rejected(None, "no frames".into()));
        }
        match frames {
            Frames::Jpeg(jpegs) => {
                for (k, jpeg) in jpegs.iter().enumerate() {
                    check_jpeg(jpeg).map_err(|e| rejected(Some(k), e))?;
                }
                Ok(FrameSource::Jpeg(jpegs))
            }
            Frames::Pixels(pixels) => {
                for (k, px) in pixels.iter().enumerate() {
                    px.check()
                        .and_then(|()| jpeg_size(px.width, px.height).map(drop))
                        .map_err(|e| rejected(Some(k), e))?;
                }
                Ok(FrameSource::Pixels(pixels))
            }
        }
    }

    /// `meta` with its label's number as `"idx"`, when it has a `"label"`
    /// string and labels are numbered, and whether the label was new. A new
    /// label is numbered here; the committer writes the file before the
    /// commit of its item's chunk.
    fn numbered(&mut self, id: &str, mut meta: Value) -> Result<(Value, bool)> {
        if !self.number_labels {
            return Ok((meta, false));
        }
        let Value::Object(map) = &mut meta else {
            return Ok((meta, false));
        };
        let Some(label) = map.get("label").and_then(Value::as_str).map(str::to_owned) else {
            return Ok((meta, false));
        };
        let mut labels = self.labels.lock().unwrap_or_else(PoisonError::into_inner);
        let idx = labels
            .index(&label)
            .unwrap_or_else(|| labels.iter().map(|(_, i)| i + 1).max().unwrap_or(0));
        if let Some(given) = map.get("idx")
            && given.as_i64() != Some(idx)
        {
            return Err(Error::Rejected {
                dir: self.dir.clone(),
                id: id.to_owned(),
                frame: None,
                reason: format!(
                    "its meta has \"idx\": {}, but label {label:?} is {idx} in {} (turn label numbering off to keep your own numbers)",
                    gulp_format::JsonSerializer::value_to_string(given),
                    gulp_io::LABEL_FILE
                ),
            });
        }
        let new = labels.index(&label).is_none();
        if new {
            labels.extend([label.as_str()]);
        }
        drop(labels);
        map.insert("idx".into(), Value::Int(idx));
        self.labelled = true;
        Ok((meta, new))
    }

    /// An error of the writer's threads, if one stopped them.
    fn check_pool(&mut self) -> Result<()> {
        if self
            .pool
            .as_ref()
            .is_some_and(|p| p.stop.load(Ordering::Relaxed))
        {
            return Err(self.fail());
        }
        Ok(())
    }

    /// Stops the threads after one of them failed; the error that stopped
    /// them.
    fn fail(&mut self) -> Error {
        let Some(pool) = self.pool.take() else {
            return self.stopped();
        };
        pool.stop.store(true, Ordering::Relaxed);
        match pool.join() {
            Err(e) => e,
            Ok(_) => self.stopped(),
        }
    }

    fn stopped(&self) -> Error {
        Error::WriterStopped {
            path: self.dir.clone(),
        }
    }
}

impl Drop for Writer {
    /// Writes and commits the chunks completed before (full, or ended by
    /// `end_chunk`), discards the chunk being filled, stops the threads.
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            let _ = pool.results.send(Message::Abort { seq: self.seq });
            let _ = pool.join();
        }
    }
}

impl Pool {
    fn start(
        dir: &Path,
        opts: &WriterBuilder,
        encode: Encode,
        labels: &Arc<Mutex<LabelIndex>>,
    ) -> Result<Pool> {
        let workers = opts.workers;
        let window = 2 * workers + 2;
        let (job_tx, job_rx) = bounded::<Job>(workers);
        let (out_tx, out_rx) = bounded::<Message>(window);
        let (credit_tx, credit_rx) = bounded::<()>(window);
        for _ in 0..window {
            let _ = credit_tx.send(());
        }
        let stop = Arc::new(AtomicBool::new(false));
        let start_err = |e| Error::io("starting a thread", dir, e);
        let mut builder = ChunkWriter::builder();
        builder.meta_format(opts.meta_format).fsync(opts.fsync);
        let committer = Committer {
            dir: dir.to_owned(),
            builder,
            labels: Arc::clone(labels),
            labels_changed: false,
            stop: Arc::clone(&stop),
            credits: credit_tx,
            writer: None,
            done: Committed::default(),
        };
        let committer = thread::Builder::new()
            .name("gulp-writer-commit".into())
            .spawn(move || committer.run(&out_rx))
            .map_err(start_err)?;
        let mut pool = Pool {
            jobs: job_tx,
            results: out_tx,
            credits: credit_rx,
            stop,
            workers: Vec::with_capacity(workers),
            committer,
        };
        for k in 0..workers {
            let name = format!("gulp-writer-worker-{k}");
            let jobs = job_rx.clone();
            let out = pool.results.clone();
            let stop = Arc::clone(&pool.stop);
            let frames = opts.frames;
            let spawned = thread::Builder::new()
                .name(name.clone())
                .spawn(move || work(&name, &jobs, &out, &stop, &frames, encode));
            match spawned {
                Ok(handle) => pool.workers.push(handle),
                Err(e) => {
                    pool.stop.store(true, Ordering::Relaxed);
                    let _ = pool.join();
                    return Err(start_err(e));
                }
            }
        }
        Ok(pool)
    }

    /// Closes the channels and waits for every thread; the committer's
    /// result, or a worker's panic that escaped.
    fn join(self) -> Result<Committed> {
        let Pool {
            jobs,
            results,
            credits,
            workers,
            committer,
            ..
        } = self;
        drop(jobs);
        drop(results);
        drop(credits);
        let mut escaped = None;
        for worker in workers {
            let name = worker.thread().name().unwrap_or("worker").to_owned();
            if let Err(panic) = worker.join() {
                escaped.get_or_insert(Error::WorkerPanic {
                    worker: name,
                    message: panic_message(panic.as_ref()),
                });
            }
        }
        let committed = committer
            .join()
            .map_err(|panic| Error::WorkerPanic {
                worker: "gulp-writer-commit".into(),
                message: panic_message(panic.as_ref()),
            })
            .and_then(|r| r);
        match (committed, escaped) {
            (Err(e), _) | (Ok(_), Some(e)) => Err(e),
            (Ok(c), None) => Ok(c),
        }
    }
}

/// A worker: encodes each job's frames and hands the result on.
fn work(
    name: &str,
    jobs: &Receiver<Job>,
    out: &Sender<Message>,
    stop: &AtomicBool,
    frames: &FrameOptions,
    encode: Encode,
) {
    while let Ok(job) = jobs.recv() {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let Job {
            seq,
            index,
            id,
            meta,
            frames: source,
            chunk,
            last,
            new_label,
        } = job;
        let result = match catch_unwind(AssertUnwindSafe(|| encode(source, frames))) {
            Ok(Ok(jpegs)) => Ok(jpegs),
            Ok(Err(e)) => Err(Failure::Item(e)),
            Err(panic) => Err(Failure::Panic {
                worker: name.to_owned(),
                message: panic_message(panic.as_ref()),
            }),
        };
        let message = Message::Item {
            seq,
            index,
            id,
            meta,
            chunk,
            last,
            new_label,
            result,
        };
        if out.send(message).is_err() {
            return;
        }
    }
}

/// The thread that writes items in `add` order and commits chunks.
struct Committer {
    dir: PathBuf,
    builder: ChunkWriterBuilder,
    labels: Arc<Mutex<LabelIndex>>,
    /// Whether a label was numbered since the file was last written.
    labels_changed: bool,
    stop: Arc<AtomicBool>,
    credits: Sender<()>,
    writer: Option<ChunkWriter>,
    done: Committed,
}

impl Committer {
    /// Writes until the end marker (then commits the last chunk), the abort
    /// marker (the writer was dropped: the chunks completed before it are
    /// committed, the chunk being filled is discarded) or an error. On an
    /// error the other threads are told to stop; the chunk writer dropped
    /// with the error removes its temporary files.
    fn run(mut self, results: &Receiver<Message>) -> Result<Committed> {
        let outcome = self.write_in_order(results);
        if outcome.is_err() {
            self.stop.store(true, Ordering::Relaxed);
        }
        outcome.map(|()| self.done)
    }

    fn write_in_order(&mut self, results: &Receiver<Message>) -> Result<()> {
        let mut pending: BTreeMap<usize, Message> = BTreeMap::new();
        let mut next = 0;
        for message in results {
            pending.insert(message.seq(), message);
            while let Some(message) = pending.remove(&next) {
                next += 1;
                if self.stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                match message {
                    Message::Item {
                        index,
                        id,
                        meta,
                        chunk,
                        last,
                        new_label,
                        result,
                        ..
                    } => {
                        self.write(index, id, meta, chunk, result)?;
                        self.labels_changed |= new_label;
                        if last {
                            self.commit()?;
                        }
                        let _ = self.credits.send(());
                    }
                    Message::EndChunk { .. } => self.commit()?,
                    Message::End { .. } => return self.commit(),
                    Message::Abort { .. } => {
                        self.writer = None;
                        return Ok(());
                    }
                }
            }
        }
        // The channel closed without a marker: the writer stopped after an
        // error; the chunk being filled is discarded.
        Ok(())
    }

    fn write(
        &mut self,
        index: usize,
        id: String,
        meta: Value,
        chunk: u64,
        result: std::result::Result<Vec<Vec<u8>>, Failure>,
    ) -> Result<()> {
        let jpegs = match result {
            Ok(jpegs) => jpegs,
            Err(Failure::Panic { worker, message }) => {
                return Err(Error::WorkerPanic { worker, message });
            }
            Err(Failure::Item(error)) => {
                return Err(Error::Item { index, id, error });
            }
        };
        if self.writer.as_ref().is_some_and(|w| w.chunk() != chunk) {
            self.commit()?;
        }
        let writer = match &mut self.writer {
            Some(w) => w,
            None => self.writer.insert(self.builder.create(&self.dir, chunk)?),
        };
        writer.append(&id, meta, &jpegs)?;
        self.done.items += 1;
        self.done.frames += jpegs.len() as u64;
        self.done.bytes += jpegs.iter().map(|j| j.len() as u64).sum::<u64>();
        Ok(())
    }

    /// Commits the chunk being filled, if any, after writing the label
    /// file when labels were numbered since (so that every committed idx is
    /// in it).
    fn commit(&mut self) -> Result<()> {
        let Some(writer) = self.writer.take() else {
            return Ok(());
        };
        if self.labels_changed {
            let labels = self.labels.lock().unwrap_or_else(PoisonError::into_inner);
            if !labels.is_empty() {
                labels.write(&self.dir)?;
            }
            self.labels_changed = false;
        }
        let summary = writer.finish()?;
        self.done.chunks.push(summary.chunk);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gray(k: u8) -> Pixels {
        Pixels {
            width: 8,
            height: 8,
            channels: 1,
            data: vec![k; 64],
        }
    }

    fn builder() -> WriterBuilder {
        let mut b = Writer::builder();
        b.items_per_chunk(2).workers(2).fsync(false);
        b
    }

    fn panics(_: FrameSource, _: &FrameOptions) -> std::result::Result<Vec<Vec<u8>>, ItemError> {
        panic!("encoder bug")
    }

    fn fails(_: FrameSource, _: &FrameOptions) -> std::result::Result<Vec<Vec<u8>>, ItemError> {
        Err(ItemError::new("frame 0: the encoder gave up"))
    }

    /// Adds items until the writer reports its threads' error (the error
    /// comes back from a call after the one that queued the item).
    fn first_error(writer: &mut Writer) -> Error {
        for k in 0..100 {
            if let Err(e) = writer.add(&format!("x{k}"), Value::Null, Frames::Pixels(vec![gray(1)]))
            {
                return e;
            }
        }
        panic!("no error after 100 items")
    }

    #[test]
    fn a_worker_panic_is_returned_and_nothing_is_committed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = Writer::open(dir.path(), &builder(), panics).expect("open");
        let err = first_error(&mut writer);
        assert!(
            matches!(&err, Error::WorkerPanic { worker, message }
                if worker.starts_with("gulp-writer-worker-") && message == "encoder bug"),
            "{err}"
        );
        let again = writer
            .add("y", Value::Null, Frames::Pixels(vec![gray(1)]))
            .expect_err("stopped");
        assert_eq!(
            again.to_string(),
            format!(
                "{}: the writer stopped after an error; committed chunks are kept, open a new writer to go on",
                dir.path().display()
            )
        );
        assert!(matches!(writer.finish(), Err(Error::WriterStopped { .. })));
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[test]
    fn an_encoding_failure_names_the_item() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = Writer::open(dir.path(), &builder(), fails).expect("open");
        let err = first_error(&mut writer);
        assert_eq!(
            err.to_string(),
            "item \"x0\" (input #0): frame 0: the encoder gave up"
        );
    }

    #[test]
    fn on_exists_names_parse() {
        assert_eq!("skip".parse::<OnExists>(), Ok(OnExists::Skip));
        assert_eq!(
            "keep".parse::<OnExists>().expect_err("unknown").to_string(),
            "on_exists must be one of 'error', 'skip', not \"keep\""
        );
    }
}
