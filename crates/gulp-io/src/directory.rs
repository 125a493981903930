//! A gulp directory: every chunk pair, and an index from id to chunk.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use gulp_format::{
    ChunkFile, ChunkMeta, ChunkStamp, DirIndex, DirIndexWriter, INDEX_FILE, ItemMeta, MetaFormat,
    MetaIndex, TEMP_PREFIX, Value, parse_chunk_file_name, read_index,
};
use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use crate::error::{Error, ErrorKind, Result};
use crate::index_policy::{IndexPolicy, IndexState, is_index_temp};
use crate::labels::{LABEL_FILE, LabelIndex};
use crate::reader::{ChunkReader, ReadMode, load_meta_from};
use crate::select::Selection;
use gulp_store::CachedStore;
use gulp_store::StoredFile;
use gulp_store::cache::{Cache, CacheChoice, CacheFetch, CacheOptions, RangeStore};

/// One chunk of a directory: its number, its files, its ids and, once
/// something needs it, its parsed meta.
///
/// Opening a directory reads each meta file's ids and frame counts only
/// ([`read_index`]); the full meta ([`meta`](Self::meta)) is parsed on first
/// use, and problems that only the full parse finds (e.g. a malformed
/// `meta_data` in a msgpack meta) are reported then.
#[derive(Debug)]
pub struct ChunkEntry {
    /// The chunk number N of `data_N.gulp`.
    pub chunk: u64,
    /// The data file.
    pub data_path: PathBuf,
    /// The meta file.
    pub meta_path: PathBuf,
    /// How to read the data file (through the node cache, for an object).
    data: StoredFile,
    /// How to read the meta file.
    meta_source: StoredFile,
    index: MetaIndex,
    meta: OnceLock<Arc<ChunkMeta>>,
    /// Held while the meta is parsed, so that it is parsed once.
    loading: Mutex<()>,
    reader: OnceLock<ChunkReader>,
    /// The node cache's ranges of the data object (made on first use).
    ranges: OnceLock<Option<Arc<RangeStore>>>,
    /// Whether the data object is fetched whole rather than by ranges,
    /// as far as the policy alone decides ([`Fetch`]).
    fetch: Fetch,
    /// The data file's reader without the meta ([`GulpDirectory::data_reader`]).
    bare_reader: OnceLock<ChunkReader>,
    /// The meta file, open for [`read_item`](Self::read_item).
    meta_file: OnceLock<std::fs::File>,
}

/// What a directory's [`CacheFetch`] policy comes to, given its size and
/// its cache's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fetch {
    /// Whole objects.
    Whole,
    /// Ranges only.
    Ranges,
    /// Ranges on a chunk's first read, the whole chunk on a later one.
    RangesThenWhole,
}

impl ChunkEntry {
    /// The parsed meta, read from the meta file on the first call.
    ///
    /// Errors name the meta file (with the byte offset and id where they
    /// apply); a failed parse is tried again on the next call.
    pub fn meta(&self) -> Result<&ChunkMeta> {
        self.meta_arc().map(|meta| &**meta)
    }

    /// The meta parsed from the meta file now, not kept (for a caller that
    /// keeps only what it needs of it, as the clip loader does for a
    /// million items); the same checks as [`meta`](Self::meta).
    pub fn read_meta(&self) -> Result<ChunkMeta> {
        if let Some(meta) = self.meta.get() {
            return Ok(ChunkMeta::clone(meta));
        }
        let meta = load_meta_from(&self.meta_source)?;
        self.check_unchanged(&meta)?;
        Ok(meta)
    }

    /// A reader of the data file alone (its meta left empty): frames are
    /// read by their frame_info, through
    /// [`ChunkReader::records_at`].
    ///
    /// From a directory with a node cache, the data object is fetched whole
    /// into the cache first if it is not there, and stays in use (never
    /// evicted) while the reader lives: a loader opens the readers of the
    /// chunks it needs next ahead of time, and drops each after its last
    /// use.
    ///
    /// What is fetched is the cache's [`CacheFetch`] policy's choice: with
    /// ranges, the reader fetches (and caches) the ranges of the frames
    /// read only ([`fetches_whole`](Self::fetches_whole)).
    pub fn data_reader(&self, mode: ReadMode) -> Result<ChunkReader> {
        self.open_reader(Arc::new(ChunkMeta::default()), mode, self.fetches_whole())
    }

    /// Whether [`data_reader`](Self::data_reader) fetches the data object
    /// whole into the node cache now, rather than the ranges read: always
    /// with the policy `chunks`, never with `ranges`; with `auto`, when the
    /// cache's limit holds the directory's data and the chunk was read
    /// before (the cache holds some of it). `true` for a local file or
    /// without a cache (nothing is fetched by ranges then).
    pub fn fetches_whole(&self) -> bool {
        match self.fetch {
            Fetch::Whole => true,
            Fetch::Ranges => false,
            Fetch::RangesThenWhole => self.range_store().is_none_or(|r| r.any_cached()),
        }
    }

    /// Whether the fetch policy wants the data object whole now but the
    /// node cache does not hold it whole yet: `auto`, with a cache that holds
    /// the directory, for a chunk read before. A reader that cannot wait for
    /// the whole object (the clip loader) reads its ranges meanwhile and
    /// has it made whole apart ([`whole_reader`](Self::whole_reader) or
    /// [`cached_data_reader`](Self::cached_data_reader), in a thread of its
    /// own), so that no epoch waits for bytes it does not decode.
    pub fn fill_pending(&self) -> bool {
        matches!(self.fetch, Fetch::RangesThenWhole)
            && self
                .range_store()
                .is_some_and(|r| !r.whole_cached() && r.any_cached())
    }

    /// A reader of the data file alone that fetches only the ranges read
    /// (through the node cache's ranges of the object, which it keeps);
    /// [`data_reader`](Self::data_reader) for a local file or without a
    /// cache.
    pub fn range_reader(&self, mode: ReadMode) -> Result<ChunkReader> {
        self.open_reader(Arc::new(ChunkMeta::default()), mode, false)
    }

    /// A reader of the data file alone with the data object fetched whole
    /// into the node cache when it is not there (read from the store when
    /// the cache has no room), whatever the fetch policy.
    pub fn whole_reader(&self, mode: ReadMode) -> Result<ChunkReader> {
        self.open_reader(Arc::new(ChunkMeta::default()), mode, true)
    }

    /// A reader of the data file with `meta`: the object fetched whole into
    /// the node cache (`whole`, or when the cache holds it whole already),
    /// else read by ranges through the cache.
    fn open_reader(
        &self,
        meta: Arc<ChunkMeta>,
        mode: ReadMode,
        whole: bool,
    ) -> Result<ChunkReader> {
        if let Some(store) = self.range_store().filter(|_| !whole) {
            // A whole copy in the cache serves better than ranges.
            if !store.whole_cached() {
                return ChunkReader::from_ranges(
                    &self.data,
                    Arc::clone(store),
                    self.meta_path.clone(),
                    self.chunk,
                    meta,
                );
            }
        }
        ChunkReader::from_source(&self.data, self.meta_path.clone(), self.chunk, meta, mode)
    }

    fn range_store(&self) -> Option<&Arc<RangeStore>> {
        self.ranges
            .get_or_init(|| {
                // A cache that will hold the chunk whole keeps what each
                // request brings, so that few, large holes are left to fill.
                let whole_later = matches!(self.fetch, Fetch::RangesThenWhole);
                self.data
                    .range_store()
                    .map(|r| Arc::new(r.keeping_gaps(whole_later)))
            })
            .as_ref()
    }

    /// [`data_reader`](Self::data_reader) from the node cache only: the
    /// chunk's data object fetched into the cache if it is not there, or
    /// `None` when there is no cache or it has no room for it now (what
    /// it holds is all in use): a loader fetching ahead then waits for a
    /// chunk to be released, rather than reading around the cache.
    pub fn cached_data_reader(&self, mode: ReadMode) -> Result<Option<ChunkReader>> {
        let Some(cached) = self.data.cached()? else {
            return Ok(None);
        };
        ChunkReader::from_parts(
            &self.data,
            Some(cached),
            self.meta_path.clone(),
            self.chunk,
            Arc::new(ChunkMeta::default()),
            mode,
        )
        .map(Some)
    }

    /// Whether the data file is an object of a store (`s3://`).
    pub fn is_remote(&self) -> bool {
        self.data.object.is_some()
    }

    /// The data object's size, as the directory's listing gave it (`None`
    /// for a local file).
    pub fn data_size(&self) -> Option<u64> {
        self.data.object.as_ref().map(|o| o.size)
    }

    /// Whether the meta has been parsed.
    pub fn is_loaded(&self) -> bool {
        self.meta.get().is_some()
    }

    /// The ids and frame counts read when the directory was opened.
    pub fn index(&self) -> &MetaIndex {
        &self.index
    }

    /// The format of the meta file.
    pub fn format(&self) -> MetaFormat {
        self.index.format()
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the chunk holds no item.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Number of frames over all items.
    pub fn n_frames(&self) -> u64 {
        self.index.n_frames()
    }

    /// The ids in the order of the meta file.
    pub fn ids(&self) -> impl ExactSizeIterator<Item = &str> {
        self.index.ids()
    }

    /// The meta of the item at `position` (in the order of the meta file),
    /// parsed alone from the bytes [`MetaIndex::item_span`] locates and not
    /// kept: one item costs what one item takes, whatever the chunk's size
    /// (a forked DataLoader worker that reads items at random does not
    /// come to hold every chunk's meta). From the parsed meta when it is
    /// already there, and from it also for a meta file in an object store
    /// (parsed whole, then kept, on first use). The frame checksums of a
    /// msgpack meta are not read.
    pub fn read_item(&self, position: usize) -> Result<ItemMeta> {
        if self.meta.get().is_some() || self.meta_source.object.is_some() {
            return self
                .meta()?
                .get_index(position)
                .map(|(_, item)| item.clone())
                .ok_or_else(|| self.changed());
        }
        let (Some(id), Some(span), Some(n)) = (
            self.index.id(position),
            self.index.item_span(position),
            self.index.item_frames(position),
        ) else {
            return Err(self.changed());
        };
        let file = match self.meta_file.get() {
            Some(file) => file,
            None => {
                let file = std::fs::File::open(&self.meta_path)
                    .map_err(|e| Error::io("opening", &self.meta_path, e))?;
                self.meta_file.get_or_init(|| file)
            }
        };
        let read = |range: &std::ops::Range<u64>| -> Result<Vec<u8>> {
            let len = range
                .end
                .checked_sub(range.start)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| self.changed())?;
            let mut buf = vec![0; len];
            std::os::unix::fs::FileExt::read_exact_at(file, &mut buf, range.start).map_err(
                |e| match e.kind() {
                    // Shorter than when it was opened.
                    std::io::ErrorKind::UnexpectedEof => self.changed(),
                    _ => Error::io("reading", &self.meta_path, e),
                },
            )?;
            Ok(buf)
        };
        let item = gulp_format::read_item(
            self.format(),
            id,
            &span,
            &read(&span.meta)?,
            &read(&span.frames)?,
        )
        .map_err(|source| ErrorKind::Meta {
            path: self.meta_path.clone(),
            source,
        })?;
        if item.frame_info.len() as u64 != n {
            return Err(self.changed());
        }
        Ok(item)
    }

    fn meta_arc(&self) -> Result<&Arc<ChunkMeta>> {
        if let Some(meta) = self.meta.get() {
            return Ok(meta);
        }
        let _guard = self.loading.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(meta) = self.meta.get() {
            return Ok(meta);
        }
        let meta = load_meta_from(&self.meta_source)?;
        self.check_unchanged(&meta)?;
        Ok(self.meta.get_or_init(|| Arc::new(meta)))
    }

    /// The file is read again, so it must still be the one indexed.
    fn check_unchanged(&self, meta: &ChunkMeta) -> Result<()> {
        let same = meta.len() == self.index.len()
            && meta
                .iter()
                .zip(self.index.iter())
                .all(|((id, item), (id2, n))| id == id2 && item.frame_info.len() as u64 == n);
        if same { Ok(()) } else { Err(self.changed()) }
    }

    fn changed(&self) -> Error {
        ErrorKind::Invalid {
            path: self.meta_path.clone(),
            reason: "the meta file changed after the directory was opened (open it again)".into(),
        }
        .into()
    }
}

/// Where an id is: a chunk (index into `chunks`) and a position in it.
#[derive(Debug, Clone, Copy)]
struct Slot {
    chunk: u32,
    item: u32,
}

/// How ids are found.
#[derive(Debug)]
enum Lookup {
    /// A hash table in memory, in shards by hash (built on several threads).
    Hashed(Vec<HashTable<Slot>>),
    /// The sorted ids of the directory's index file.
    Sorted(Arc<DirIndex>),
}

/// Something odd about a directory that does not stop it being read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirectoryWarning {
    /// A data file without its meta file (e.g. left by a crash of gulpio2):
    /// its frames are unreachable and it is not part of the directory.
    OrphanData(PathBuf),
    /// A meta file without its data file: the chunk is skipped.
    OrphanMeta(PathBuf),
    /// A temporary file of an unfinished write.
    TempFile(PathBuf),
    /// The directory's index file could not be written (it is read from its
    /// meta files): why.
    IndexNotWritten(PathBuf, String),
}

impl fmt::Display for DirectoryWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DirectoryWarning::OrphanData(p) => {
                write!(f, "{}: data file without meta file, ignored", p.display())
            }
            DirectoryWarning::OrphanMeta(p) => {
                write!(f, "{}: meta file without data file, ignored", p.display())
            }
            DirectoryWarning::TempFile(p) => {
                write!(f, "{}: temporary file of an unfinished write", p.display())
            }
            DirectoryWarning::IndexNotWritten(p, why) => {
                write!(f, "{}: index file not written: {why}", p.display())
            }
        }
    }
}

/// An opened gulp directory.
///
/// Opening lists the directory, pairs `data_N.gulp` with `meta_N.gmeta` in
/// numeric order, reads every meta file's ids and frame counts (on all
/// cores; the whole file is checked, see [`read_index`]) and builds the id
/// index, rejecting an id found in two chunks. A chunk's full meta is parsed
/// when first needed ([`ChunkEntry::meta`]), and its data file mapped when
/// first read.
#[derive(Debug)]
pub struct GulpDirectory {
    dir: PathBuf,
    chunks: Vec<ChunkEntry>,
    /// The id index.
    lookup: Lookup,
    /// The stamps of the chunks' files, for a local directory whose index
    /// file is read or written (`GULP_INDEX` not `off`).
    stamps: Option<Vec<ChunkStamp>>,
    hasher: foldhash::fast::RandomState,
    n_frames: u64,
    warnings: Vec<DirectoryWarning>,
    max_chunk_seen: Option<u64>,
    mode: ReadMode,
    cache: Option<Arc<Cache>>,
    /// The directory's `label2idx.json`, if its listing had one.
    labels: Option<StoredFile>,
}

/// How a directory is opened ([`GulpDirectory::options`]): the read mode
/// and, for a directory in an object store, the node cache.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectoryOptions {
    mode: ReadMode,
    cache: CacheChoice,
    /// `None`: `GULP_INDEX`.
    index: Option<IndexPolicy>,
}

impl DirectoryOptions {
    /// How data files are read (memory maps by default).
    pub fn read_mode(mut self, mode: ReadMode) -> DirectoryOptions {
        self.mode = mode;
        self
    }

    /// The node cache of a remote directory: `Some` caches its objects
    /// there, `None` reads the store every time. Without this call, the
    /// cache `GULP_CACHE_DIR` and `GULP_CACHE_LIMIT` name, if any. A local
    /// directory is never cached.
    pub fn cache(mut self, cache: Option<CacheOptions>) -> DirectoryOptions {
        self.cache = cache.map_or(CacheChoice::Off, CacheChoice::On);
        self
    }

    /// When the directory's index file is read and written; without this
    /// call, as `GULP_INDEX` says (`auto` when unset).
    pub fn index(mut self, policy: IndexPolicy) -> DirectoryOptions {
        self.index = Some(policy);
        self
    }

    /// The node cache as [`CacheOptions::resolve`] decided it.
    pub fn cache_choice(mut self, choice: CacheChoice) -> DirectoryOptions {
        self.cache = choice;
        self
    }

    /// Opens `dir`.
    pub fn open(&self, dir: impl AsRef<Path>) -> Result<GulpDirectory> {
        let dir = dir.as_ref();
        let cache = if gulp_store::is_remote(dir) {
            let options = match &self.cache {
                CacheChoice::FromEnv => CacheOptions::from_env()?,
                CacheChoice::Off => None,
                CacheChoice::On(options) => Some(options.clone()),
            };
            options.map(|o| Cache::open(&o).map(Arc::new)).transpose()?
        } else {
            None
        };
        let policy = match self.index {
            Some(policy) => policy,
            None => IndexPolicy::from_env()?,
        };
        GulpDirectory::open_inner(dir, self.mode, cache, policy)
    }
}

impl GulpDirectory {
    /// Opens a directory, memory-mapping data files (a remote one through
    /// the node cache that `GULP_CACHE_DIR` names, if set).
    pub fn open(dir: impl AsRef<Path>) -> Result<GulpDirectory> {
        GulpDirectory::options().open(dir)
    }

    /// Opens a directory with the given read mode.
    pub fn open_with(dir: impl AsRef<Path>, mode: ReadMode) -> Result<GulpDirectory> {
        GulpDirectory::options().read_mode(mode).open(dir)
    }

    /// The options of an opening: read mode, node cache.
    pub fn options() -> DirectoryOptions {
        DirectoryOptions::default()
    }

    /// `GULP_INDEX`'s policy for a writer that reads the directory before
    /// it changes it (an ingest, a convert, a merge), or a command that
    /// runs beside writers (`gulp status`): `read` (or `off`), never `auto`
    /// or `always`, whose index file would be stale as soon as a chunk is
    /// written (the writer calls [`refresh_index`](Self::refresh_index)
    /// after).
    pub fn writer_index_policy() -> Result<IndexPolicy> {
        Ok(match IndexPolicy::from_env()? {
            IndexPolicy::Off => IndexPolicy::Off,
            _ => IndexPolicy::Read,
        })
    }

    /// After chunks of the local directory `dir` were written or rewritten
    /// (an ingest, a convert, a merge): writes its index file now if it has
    /// one (stale since) or if `GULP_INDEX` wants one for its `items` items
    /// (which the writer knows: they are not counted here), so that the
    /// next open maps it rather than building it. `false` when none is
    /// written (a remote directory, `GULP_INDEX=off` or `read`, a small
    /// directory without one); then no meta file is read.
    pub fn refresh_index(dir: &Path, items: usize) -> Result<bool> {
        let policy = IndexPolicy::from_env()?;
        if matches!(policy, IndexPolicy::Off | IndexPolicy::Read) || gulp_store::is_remote(dir) {
            return Ok(false);
        }
        if !dir.join(gulp_format::INDEX_FILE).is_file() && !policy.writes(items) {
            return Ok(false);
        }
        let gd = GulpDirectory::options()
            .index(IndexPolicy::Always)
            .open(dir)?;
        Ok(gd.index_file().is_some())
    }

    fn open_inner(
        dir: &Path,
        mode: ReadMode,
        cache: Option<Arc<Cache>>,
        policy: IndexPolicy,
    ) -> Result<GulpDirectory> {
        let dir = dir.to_owned();
        let Listed {
            pairs,
            warnings,
            labels,
            max_chunk_seen,
        } = list_chunks(&dir, &cache)?;
        let fetch = fetch_policy(cache.as_deref(), &pairs);
        let local = !gulp_store::is_remote(&dir)
            && pairs
                .iter()
                .all(|(_, d, m)| d.object.is_none() && m.object.is_none());
        // A file gone between the listing and its stat: no index this time.
        let stamps = (local && policy != IndexPolicy::Off)
            .then(|| crate::index_policy::stamps(&pairs).ok())
            .flatten();
        let fresh = stamps
            .as_deref()
            .and_then(|s| match crate::index_policy::state(&dir, s) {
                IndexState::Fresh(index) => Some(index),
                _ => None,
            });
        let hasher = foldhash::fast::RandomState::default();
        let (indices, hashes): (Vec<MetaIndex>, Vec<Vec<u64>>) = match &fresh {
            Some(index) => (0..pairs.len())
                .map(|c| (index.meta_index(c), Vec::new()))
                .unzip(),
            None => read_indices(&pairs, &hasher)?.into_iter().unzip(),
        };
        let chunks: Vec<ChunkEntry> = pairs
            .into_iter()
            .zip(indices)
            .map(|((chunk, data, meta_source), index)| ChunkEntry {
                chunk,
                data_path: data.path.clone(),
                meta_path: meta_source.path.clone(),
                data,
                meta_source,
                index,
                meta: OnceLock::new(),
                loading: Mutex::new(()),
                reader: OnceLock::new(),
                ranges: OnceLock::new(),
                fetch,
                bare_reader: OnceLock::new(),
                meta_file: OnceLock::new(),
            })
            .collect();
        let lookup = match fresh {
            Some(index) => Lookup::Sorted(index),
            None => Lookup::Hashed(build_lookup(&chunks, &hashes, &hasher)?),
        };
        let n_frames = chunks
            .iter()
            .fold(0u64, |acc, c| acc.saturating_add(c.n_frames()));
        let mut gd = GulpDirectory {
            dir,
            chunks,
            lookup,
            stamps,
            hasher,
            n_frames,
            warnings,
            max_chunk_seen,
            mode,
            cache,
            labels,
        };
        let wanted = matches!(gd.lookup, Lookup::Hashed(_))
            && gd.stamps.is_some()
            && policy.writes(gd.len());
        if wanted && let Err(e) = gd.write_index() {
            let path = gd.dir.join(INDEX_FILE);
            gd.warnings
                .push(DirectoryWarning::IndexNotWritten(path, e.to_string()));
        }
        Ok(gd)
    }

    /// Writes the directory's index file now (a local directory, unless
    /// `GULP_INDEX=off`), whatever its size, and reads the directory from it
    /// from then on; `false` when it cannot have one (a remote directory,
    /// a frame record too long to pack, a read-only directory).
    pub fn write_index(&mut self) -> Result<bool> {
        let Some(stamps) = &self.stamps else {
            return Ok(false);
        };
        let Some(index) = crate::index_policy::build(
            &self.dir,
            stamps,
            || self.stamps_now(),
            || self.index_bytes(stamps),
        )?
        else {
            return Ok(false);
        };
        for (c, entry) in self.chunks.iter_mut().enumerate() {
            entry.index = index.meta_index(c);
        }
        self.lookup = Lookup::Sorted(index);
        Ok(true)
    }

    /// The index file this directory was read from, if any.
    pub fn index_file(&self) -> Option<&Arc<DirIndex>> {
        match &self.lookup {
            Lookup::Sorted(index) => Some(index),
            Lookup::Hashed(_) => None,
        }
    }

    /// The state of the directory's index file against its chunks as they
    /// are now (`None` for a remote directory or with `GULP_INDEX=off`).
    pub fn index_state(&self) -> Option<IndexState> {
        self.stamps.as_ref()?;
        self.index_state_now()
    }

    /// [`index_state`](Self::index_state) whatever the policy the
    /// directory was opened with (`None` for a remote directory).
    pub fn index_state_now(&self) -> Option<IndexState> {
        if self.chunks.iter().any(ChunkEntry::is_remote) || gulp_store::is_remote(&self.dir) {
            return None;
        }
        let stamps = self.stamps_now().ok()?;
        Some(crate::index_policy::state(&self.dir, &stamps))
    }

    /// The stamps of the chunks' files as they are now (local chunks).
    fn stamps_now(&self) -> Result<Vec<ChunkStamp>> {
        let pairs: Vec<(u64, StoredFile, StoredFile)> = self
            .chunks
            .iter()
            .map(|c| (c.chunk, c.data.clone(), c.meta_source.clone()))
            .collect();
        crate::index_policy::stamps(&pairs)
    }

    /// The bytes the directory's index file should hold, built from its
    /// meta files now (what `gulp check` compares the file with); `None`
    /// when it cannot have one.
    pub fn expected_index(&self) -> Result<Option<Vec<u8>>> {
        self.index_bytes(&self.stamps_now()?)
    }

    /// The bytes of the index file of this directory, whose chunks' files
    /// are `stamps` (every meta parsed whole, a few chunks at a time on all
    /// cores), or `None` when it cannot have one.
    fn index_bytes(&self, stamps: &[ChunkStamp]) -> Result<Option<Vec<u8>>> {
        let mut writer = DirIndexWriter::new(crate::index_policy::LABEL_KEY);
        let chunks = &self.chunks;
        // The parsed metas of one batch only are held.
        let batch = 4 * std::thread::available_parallelism().map_or(1, usize::from);
        for start in (0..chunks.len()).step_by(batch) {
            let end = (start + batch).min(chunks.len());
            let metas = on_all_cores(end - start, || (), |(), k| chunks[start + k].read_meta());
            for (k, meta) in metas.into_iter().enumerate() {
                let c = start + k;
                if writer
                    .push_chunk(stamps[c], &meta?, chunks[c].index())
                    .is_err()
                {
                    return Ok(None);
                }
            }
        }
        Ok(Some(writer.finish()))
    }

    /// The directory's `label2idx.json` ([`LabelIndex`]), `None` if it had
    /// none when it was opened; from a bucket, read through the node cache.
    pub fn labels(&self) -> Result<Option<LabelIndex>> {
        let Some(source) = &self.labels else {
            return Ok(None);
        };
        LabelIndex::parse(&source.path, &source.read()?).map(Some)
    }

    /// The node cache's directory, when this remote directory is read
    /// through one.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache.as_deref().map(Cache::root)
    }

    /// The node cache's size limit, when this remote directory is read
    /// through one that has a limit.
    pub fn cache_limit(&self) -> Option<u64> {
        self.cache.as_deref().and_then(Cache::limit)
    }

    /// The directory path.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The chunks, in numeric order.
    pub fn chunks(&self) -> &[ChunkEntry] {
        &self.chunks
    }

    /// Orphan and temporary files found when opening.
    pub fn warnings(&self) -> &[DirectoryWarning] {
        &self.warnings
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        match &self.lookup {
            Lookup::Hashed(shards) => shards.iter().map(HashTable::len).sum(),
            Lookup::Sorted(index) => index.len(),
        }
    }

    /// Whether the directory holds no item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of frames over all items.
    pub fn n_frames(&self) -> usize {
        usize::try_from(self.n_frames).unwrap_or(usize::MAX)
    }

    /// The number a new chunk should take: one more than any chunk number
    /// present (orphans included), or 0.
    pub fn next_chunk_number(&self) -> u64 {
        self.max_chunk_seen.map_or(0, |n| n.saturating_add(1))
    }

    /// Whether an item has this id.
    pub fn contains(&self, id: &str) -> bool {
        self.find(id).is_some()
    }

    /// The chunk holding `id`.
    pub fn chunk_of(&self, id: &str) -> Option<&ChunkEntry> {
        self.find(id).map(|slot| &self.chunks[slot.chunk as usize])
    }

    /// The meta of `id`. The first call for an id of a chunk parses that
    /// chunk's meta file.
    pub fn item(&self, id: &str) -> Result<&ItemMeta> {
        let slot = self.find(id).ok_or_else(|| self.unknown(id))?;
        let meta = self.chunks[slot.chunk as usize].meta()?;
        // The meta was checked to hold the indexed ids in the same order.
        meta.get_index(slot.item as usize)
            .map(|(_, item)| item)
            .ok_or_else(|| self.unknown(id))
    }

    /// The meta of `id` parsed alone ([`ChunkEntry::read_item`]: not the
    /// whole chunk's, and not kept), with the position of its chunk in
    /// [`chunks`](Self::chunks): what serving one item at random needs.
    pub fn read_item(&self, id: &str) -> Result<(usize, ItemMeta)> {
        let slot = self.find(id).ok_or_else(|| self.unknown(id))?;
        let chunk = slot.chunk as usize;
        let item = self.chunks[chunk].read_item(slot.item as usize)?;
        Ok((chunk, item))
    }

    /// The `meta_data` entry readers see for `id` (the first, as in gulpio2).
    pub fn meta_data(&self, id: &str) -> Result<&Value> {
        let item = self.item(id)?;
        item.first_meta_data().ok_or_else(|| {
            ErrorKind::Selection {
                id: id.to_owned(),
                reason: "item has an empty meta_data list".into(),
            }
            .into()
        })
    }

    /// Every item in directory order: chunks in numeric order, items in the
    /// order of their meta file. Parses every meta not parsed yet (see
    /// [`load_metas`](Self::load_metas)).
    pub fn items(&self) -> Result<impl Iterator<Item = (&str, &ItemMeta)>> {
        Ok(self.load_metas()?.into_iter().flat_map(ChunkMeta::iter))
    }

    /// Every id in directory order (known since opening: parses nothing).
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.chunks.iter().flat_map(ChunkEntry::ids)
    }

    /// Parses the meta of every chunk not parsed yet, on all cores, and
    /// returns them in chunk order; the first error in chunk order wins.
    pub fn load_metas(&self) -> Result<Vec<&ChunkMeta>> {
        let results = on_all_cores(self.chunks.len(), || (), |(), i| self.chunks[i].meta());
        results.into_iter().collect()
    }

    /// How the directory's data files are read.
    pub fn read_mode(&self) -> ReadMode {
        self.mode
    }

    /// The reader of the chunk at `index` in [`chunks`](Self::chunks).
    pub fn reader(&self, index: usize) -> Result<&ChunkReader> {
        let entry = self.chunks.get(index).ok_or_else(|| ErrorKind::Invalid {
            path: self.dir.clone(),
            reason: format!("no chunk at index {index}"),
        })?;
        if let Some(reader) = entry.reader.get() {
            return Ok(reader);
        }
        let reader = entry.open_reader(
            Arc::clone(entry.meta_arc()?),
            self.mode,
            entry.fetches_whole(),
        )?;
        Ok(entry.reader.get_or_init(|| reader))
    }

    /// A reader of the data file of the chunk at `index` in
    /// [`chunks`](Self::chunks) that may not hold the chunk's meta (the
    /// reader with the meta when there is one): frames are read by the
    /// frame_info of [`read_item`](Self::read_item), through
    /// [`ChunkReader::records_at`]. Kept for the next call.
    pub fn data_reader(&self, index: usize) -> Result<&ChunkReader> {
        let entry = self.chunks.get(index).ok_or_else(|| ErrorKind::Invalid {
            path: self.dir.clone(),
            reason: format!("no chunk at index {index}"),
        })?;
        if let Some(reader) = entry.reader.get().or_else(|| entry.bare_reader.get()) {
            return Ok(reader);
        }
        let reader = entry.data_reader(self.mode)?;
        Ok(entry.bare_reader.get_or_init(|| reader))
    }

    /// The reader of the chunk holding `id`.
    pub fn reader_for(&self, id: &str) -> Result<&ChunkReader> {
        let slot = self.find(id).ok_or_else(|| self.unknown(id))?;
        self.reader(slot.chunk as usize)
    }

    /// The selected frames of `id` as JPEG bytes.
    pub fn frames(&self, id: &str, selection: &Selection) -> Result<Vec<Cow<'_, [u8]>>> {
        self.reader_for(id)?.frames(id, selection)
    }

    fn find(&self, id: &str) -> Option<Slot> {
        match &self.lookup {
            Lookup::Hashed(shards) => {
                let hash = self.hasher.hash_one(id);
                shards[shard(hash, shards.len())]
                    .find(hash, |slot| id_at(&self.chunks, *slot) == id)
                    .copied()
            }
            Lookup::Sorted(index) => {
                let item = index.find(id)?;
                let chunk = index.chunk_of(item);
                #[allow(clippy::cast_possible_truncation)] // < 2^32 chunks, checked at open
                Some(Slot {
                    chunk: chunk as u32,
                    item: (item - index.chunk_items(chunk).start) as u32,
                })
            }
        }
    }

    fn unknown(&self, id: &str) -> Error {
        ErrorKind::UnknownId {
            id: id.to_owned(),
            dir: self.dir.clone(),
        }
        .into()
    }
}

/// The id at `slot`.
fn id_at(chunks: &[ChunkEntry], slot: Slot) -> &str {
    chunks[slot.chunk as usize]
        .index
        .id(slot.item as usize)
        .unwrap_or_default()
}

/// The shard of the id index that holds ids with this hash.
fn shard(hash: u64, shards: usize) -> usize {
    // The top bits: hashbrown uses the low ones for the bucket and the top 7
    // for its tags, which stay evenly spread within a shard.
    usize::try_from((hash >> 32) % (shards as u64)).unwrap_or(0)
}

/// The id index over all chunks, one shard per core, each built on its own
/// thread; an id in two chunks is an error naming both meta files.
fn build_lookup(
    chunks: &[ChunkEntry],
    hashes: &[Vec<u64>],
    hasher: &foldhash::fast::RandomState,
) -> Result<Vec<HashTable<Slot>>> {
    let total: usize = chunks.iter().map(ChunkEntry::len).sum();
    // Below some 10,000 ids a thread costs more than it saves.
    let shards = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(total / 10_000)
        .max(1);
    let built = on_all_cores(
        shards,
        || (),
        |(), s| build_shard(chunks, hashes, hasher, s, shards, total / shards),
    );
    // Each shard stops at its first repeated id; the first in directory
    // order is the one a serial build would have found.
    let mut tables = Vec::with_capacity(shards);
    let mut first: Option<((usize, usize), Error)> = None;
    for result in built {
        match result {
            Ok(table) => tables.push(table),
            Err((at, err)) => {
                if first.as_ref().is_none_or(|(earliest, _)| at < *earliest) {
                    first = Some((at, err));
                }
            }
        }
    }
    match first {
        Some((_, err)) => Err(err),
        None => Ok(tables),
    }
}

/// Shard `shard` of `shards` of the id index; a repeated id is an error,
/// returned with its position (chunk, item).
fn build_shard(
    chunks: &[ChunkEntry],
    hashes: &[Vec<u64>],
    hasher: &foldhash::fast::RandomState,
    shard_no: usize,
    shards: usize,
    capacity: usize,
) -> Result<HashTable<Slot>, ((usize, usize), Error)> {
    let mut table = HashTable::with_capacity(capacity + capacity / 8);
    let rehash = |slot: &Slot| hasher.hash_one(id_at(chunks, *slot));
    for (c, (entry, hashes)) in chunks.iter().zip(hashes).enumerate() {
        // The number of chunks was checked to fit.
        let chunk = u32::try_from(c).unwrap_or(u32::MAX);
        for (i, (id, &hash)) in entry.ids().zip(hashes).enumerate() {
            if shards > 1 && shard(hash, shards) != shard_no {
                continue;
            }
            let item = u32::try_from(i).map_err(|_| {
                let err = ErrorKind::Invalid {
                    path: entry.meta_path.clone(),
                    reason: "more than 2^32 items in one chunk".into(),
                };
                ((c, i), Error::from(err))
            })?;
            match table.entry(hash, |slot: &Slot| id_at(chunks, *slot) == id, rehash) {
                Entry::Vacant(vacant) => {
                    vacant.insert(Slot { chunk, item });
                }
                Entry::Occupied(occupied) => {
                    let first = &chunks[occupied.get().chunk as usize];
                    let err = ErrorKind::DuplicateId {
                        id: id.to_owned(),
                        first: first.meta_path.clone(),
                        second: entry.meta_path.clone(),
                    };
                    return Err(((c, i), err.into()));
                }
            }
        }
    }
    Ok(table)
}

/// Reads the ids of every meta file on all cores, with the hash of each id;
/// the first error in chunk order wins.
fn read_indices(
    pairs: &[(u64, StoredFile, StoredFile)],
    hasher: &foldhash::fast::RandomState,
) -> Result<Vec<(MetaIndex, Vec<u64>)>> {
    // Each thread reads every file into one buffer of its own, which keeps
    // its pages from one file to the next. (Mapping the files instead was
    // no faster, and a meta file truncated while mapped would be SIGBUS.)
    let results = on_all_cores(pairs.len(), Vec::new, |buf: &mut Vec<u8>, i| {
        let meta = &pairs[i].2;
        meta.read_into(buf)?;
        let index = read_index(buf).map_err(|source| {
            Error::from(ErrorKind::Meta {
                path: meta.path.clone(),
                source,
            })
        })?;
        let hashes = index.ids().map(|id| hasher.hash_one(id)).collect();
        Ok((index, hashes))
    });
    results.into_iter().collect()
}

/// A directory's listing: its chunk pairs `(number, data, meta)` in
/// numeric order, warnings (orphans, temporary files), its label file, the
/// largest chunk number seen.
struct Listed {
    pairs: Vec<(u64, StoredFile, StoredFile)>,
    warnings: Vec<DirectoryWarning>,
    labels: Option<StoredFile>,
    max_chunk_seen: Option<u64>,
}

/// Lists `dir` and pairs `data_N.gulp` with `meta_N.gmeta` (objects read
/// through `cache`, for a bucket).
fn list_chunks(dir: &Path, cache: &Option<Arc<Cache>>) -> Result<Listed> {
    let mut data = HashMap::new();
    let mut meta = HashMap::new();
    let mut warnings = Vec::new();
    let mut labels = None;
    let store = gulp_store::store(dir)?;
    // The store the directory is in, read through the cache.
    let cache = cache
        .as_ref()
        .map(|c| Arc::new(CachedStore::new(store, Arc::clone(c))));
    for entry in store.list(dir)? {
        let source = StoredFile {
            path: entry.path,
            object: entry.object,
            cache: cache.clone(),
        };
        if entry.name == LABEL_FILE {
            labels = Some(source);
            continue;
        }
        match parse_chunk_file_name(&entry.name) {
            Some(ChunkFile::Data(n)) => {
                data.insert(n, source);
            }
            Some(ChunkFile::Meta(n)) => {
                meta.insert(n, source);
            }
            // An index file being built by another process (one a killed
            // build left is overwritten by the next).
            None if is_index_temp(&entry.name) => {}
            None if entry.name.starts_with(TEMP_PREFIX) => {
                warnings.push(DirectoryWarning::TempFile(source.path))
            }
            None => {}
        }
    }
    let max_chunk_seen = data.keys().chain(meta.keys()).copied().max();
    let mut numbers: Vec<u64> = data.keys().chain(meta.keys()).copied().collect();
    numbers.sort_unstable();
    numbers.dedup();
    let mut pairs = Vec::new();
    for n in numbers {
        match (data.remove(&n), meta.remove(&n)) {
            (Some(d), Some(m)) => pairs.push((n, d, m)),
            (Some(d), None) => warnings.push(DirectoryWarning::OrphanData(d.path)),
            (None, Some(m)) => warnings.push(DirectoryWarning::OrphanMeta(m.path)),
            (None, None) => {}
        }
    }
    warnings.sort_by(|a, b| format!("{a}").cmp(&format!("{b}")));
    if u32::try_from(pairs.len()).is_err() {
        return Err(ErrorKind::Invalid {
            path: dir.to_owned(),
            reason: "more than 2^32 chunks".into(),
        }
        .into());
    }
    Ok(Listed {
        pairs,
        warnings,
        labels,
        max_chunk_seen,
    })
}

/// What a directory's [`CacheFetch`] policy comes to for its data objects,
/// given their sizes and the cache's limit.
fn fetch_policy(cache: Option<&Cache>, pairs: &[(u64, StoredFile, StoredFile)]) -> Fetch {
    match cache.map(|c| (c.fetch(), c.limit())) {
        None | Some((CacheFetch::Chunks, _)) => Fetch::Whole,
        Some((CacheFetch::Ranges, _)) => Fetch::Ranges,
        Some((CacheFetch::Auto, limit)) => {
            let total = pairs.iter().fold(0u64, |acc, (_, d, m)| {
                [d, m].iter().fold(acc, |acc, s| {
                    acc.saturating_add(s.object.as_ref().map_or(0, |o| o.size))
                })
            });
            if limit.is_none_or(|limit| total <= limit) {
                Fetch::RangesThenWhole
            } else {
                Fetch::Ranges
            }
        }
    }
}

/// `work(state, i)` for every `i` in `0..n`, on up to all cores, each thread
/// with a `state` of its own; the results in the order of `i`.
fn on_all_cores<S, T: Send>(
    n: usize,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize) -> T + Sync,
) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(n);
    if threads <= 1 {
        let mut s = state();
        return (0..n).map(|i| work(&mut s, i)).collect();
    }
    let next = AtomicUsize::new(0);
    let run = || {
        let mut s = state();
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                return done;
            }
            done.push((i, work(&mut s, i)));
        }
    };
    let mut results: Vec<Option<T>> = Vec::new();
    results.resize_with(n, || None);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads).map(|_| scope.spawn(run)).collect();
        let mut all = vec![run()];
        for handle in handles {
            // The work never panics; if it did, re-raise it here.
            all.push(
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        for (i, result) in all.into_iter().flatten() {
            results[i] = Some(result);
        }
    });
    // Every index was taken by exactly one thread.
    results.into_iter().flatten().collect()
}
