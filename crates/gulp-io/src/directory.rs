//! A gulp directory: every chunk pair, and an index from id to chunk.

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use gulp_format::{ChunkFile, ChunkMeta, ItemMeta, TEMP_PREFIX, Value, parse_chunk_file_name};

use crate::error::{Error, ErrorKind, Result};
use crate::reader::{ChunkReader, ReadMode, load_meta};
use crate::select::Selection;

/// One chunk of a directory: its number, files and meta.
#[derive(Debug)]
pub struct ChunkEntry {
    /// The chunk number N of `data_N.gulp`.
    pub chunk: u64,
    /// The data file.
    pub data_path: PathBuf,
    /// The meta file.
    pub meta_path: PathBuf,
    /// The parsed meta.
    pub meta: Arc<ChunkMeta>,
    reader: OnceLock<ChunkReader>,
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
        }
    }
}

/// An opened gulp directory.
///
/// Opening lists the directory, pairs `data_N.gulp` with `meta_N.gmeta` in
/// numeric order, parses the metas (on all cores) and builds the id index;
/// data files are mapped only when a chunk is first read.
#[derive(Debug)]
pub struct GulpDirectory {
    dir: PathBuf,
    chunks: Vec<ChunkEntry>,
    lookup: HashMap<String, u32, foldhash::fast::RandomState>,
    warnings: Vec<DirectoryWarning>,
    max_chunk_seen: Option<u64>,
    mode: ReadMode,
}

impl GulpDirectory {
    /// Opens a directory, memory-mapping data files.
    pub fn open(dir: impl AsRef<Path>) -> Result<GulpDirectory> {
        GulpDirectory::open_with(dir, ReadMode::Mmap)
    }

    /// Opens a directory with the given read mode.
    pub fn open_with(dir: impl AsRef<Path>, mode: ReadMode) -> Result<GulpDirectory> {
        let dir = dir.as_ref().to_owned();
        let mut data = HashMap::new();
        let mut meta = HashMap::new();
        let mut warnings = Vec::new();
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::io("listing", &dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("listing", &dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            match parse_chunk_file_name(name) {
                Some(ChunkFile::Data(n)) => {
                    data.insert(n, entry.path());
                }
                Some(ChunkFile::Meta(n)) => {
                    meta.insert(n, entry.path());
                }
                None if name.starts_with(TEMP_PREFIX) => {
                    warnings.push(DirectoryWarning::TempFile(entry.path()))
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
                (Some(d), None) => warnings.push(DirectoryWarning::OrphanData(d)),
                (None, Some(m)) => warnings.push(DirectoryWarning::OrphanMeta(m)),
                (None, None) => {}
            }
        }
        warnings.sort_by(|a, b| format!("{a}").cmp(&format!("{b}")));

        let metas = parse_metas(&pairs)?;
        let total: usize = metas.iter().map(|m| m.len()).sum();
        let mut lookup: HashMap<String, u32, foldhash::fast::RandomState> =
            HashMap::with_capacity_and_hasher(total, Default::default());
        let mut chunks = Vec::with_capacity(pairs.len());
        for (index, ((chunk, data_path, meta_path), meta)) in
            pairs.into_iter().zip(metas).enumerate()
        {
            let index = u32::try_from(index).map_err(|_| ErrorKind::Invalid {
                path: dir.clone(),
                reason: "more than 2^32 chunks".into(),
            })?;
            for id in meta.ids() {
                match lookup.entry(id.to_owned()) {
                    Entry::Vacant(slot) => {
                        slot.insert(index);
                    }
                    Entry::Occupied(slot) => {
                        let first: &ChunkEntry = &chunks[*slot.get() as usize];
                        return Err(ErrorKind::DuplicateId {
                            id: id.to_owned(),
                            first: first.meta_path.clone(),
                            second: meta_path,
                        }
                        .into());
                    }
                }
            }
            chunks.push(ChunkEntry {
                chunk,
                data_path,
                meta_path,
                meta: Arc::new(meta),
                reader: OnceLock::new(),
            });
        }
        Ok(GulpDirectory {
            dir,
            chunks,
            lookup,
            warnings,
            max_chunk_seen,
            mode,
        })
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
        self.lookup.len()
    }

    /// Whether the directory holds no item.
    pub fn is_empty(&self) -> bool {
        self.lookup.is_empty()
    }

    /// Number of frames over all items.
    pub fn n_frames(&self) -> usize {
        self.chunks.iter().map(|c| c.meta.n_frames()).sum()
    }

    /// The number a new chunk should take: one more than any chunk number
    /// present (orphans included), or 0.
    pub fn next_chunk_number(&self) -> u64 {
        self.max_chunk_seen.map_or(0, |n| n.saturating_add(1))
    }

    /// Whether an item has this id.
    pub fn contains(&self, id: &str) -> bool {
        self.lookup.contains_key(id)
    }

    /// The chunk holding `id`.
    pub fn chunk_of(&self, id: &str) -> Option<&ChunkEntry> {
        self.lookup.get(id).map(|&i| &self.chunks[i as usize])
    }

    /// The meta of `id`.
    pub fn item(&self, id: &str) -> Result<&ItemMeta> {
        self.chunk_of(id)
            .and_then(|c| c.meta.get(id))
            .ok_or_else(|| self.unknown(id))
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
    /// order of their meta file.
    pub fn items(&self) -> impl Iterator<Item = (&str, &ItemMeta)> {
        self.chunks.iter().flat_map(|c| c.meta.iter())
    }

    /// Every id in directory order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.items().map(|(id, _)| id)
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
        let reader = ChunkReader::with_meta(
            entry.data_path.clone(),
            entry.meta_path.clone(),
            entry.chunk,
            Arc::clone(&entry.meta),
            self.mode,
        )?;
        Ok(entry.reader.get_or_init(|| reader))
    }

    /// The reader of the chunk holding `id`.
    pub fn reader_for(&self, id: &str) -> Result<&ChunkReader> {
        let index = *self.lookup.get(id).ok_or_else(|| self.unknown(id))?;
        self.reader(index as usize)
    }

    /// The selected frames of `id` as JPEG bytes.
    pub fn frames(&self, id: &str, selection: &Selection) -> Result<Vec<Cow<'_, [u8]>>> {
        self.reader_for(id)?.frames(id, selection)
    }

    fn unknown(&self, id: &str) -> Error {
        ErrorKind::UnknownId {
            id: id.to_owned(),
            dir: self.dir.clone(),
        }
        .into()
    }
}

/// Reads and parses the meta files on all cores; the first error in chunk
/// order wins.
fn parse_metas(pairs: &[(u64, PathBuf, PathBuf)]) -> Result<Vec<ChunkMeta>> {
    let parse = |meta_path: &PathBuf| load_meta(meta_path);
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(pairs.len())
        .max(1);
    if threads == 1 {
        return pairs.iter().map(|(_, _, m)| parse(m)).collect();
    }
    let mut results: Vec<Option<Result<ChunkMeta>>> = Vec::new();
    results.resize_with(pairs.len(), || None);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    pairs
                        .iter()
                        .enumerate()
                        .skip(t)
                        .step_by(threads)
                        .map(|(i, p)| (i, parse(&p.2)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            // A parse never panics; if it did, re-raise it here.
            let done = handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            for (i, result) in done {
                results[i] = Some(result);
            }
        }
    });
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Ok(ChunkMeta::new())))
        .collect()
}
