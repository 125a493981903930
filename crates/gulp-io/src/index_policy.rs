//! A local directory's index file ([`gulp_format::DirIndex`]): found and
//! checked when the directory is opened, built and written atomically when
//! it is missing or stale and the directory is large enough to gain from it.
//!
//! `GULP_INDEX` decides: `auto` (the default) uses a fresh index file and
//! writes one for a directory of at least [`AUTO_ITEMS`] items; `always`
//! writes one for any directory; `read` uses a fresh one and never writes
//! one; `off` neither reads nor writes it.
//!
//! Builders take a lock of their own, [`INDEX_LOCK_FILE`], never the
//! directory's (which a writer such as an ingest holds for as long as it
//! runs): the ranks of a node that open a directory together build its
//! index once, and an open never waits for a writer. A build racing a
//! writer needs no lock: chunks appear by rename, complete; an index
//! records each chunk's file sizes and meta modification time (its stamp)
//! as they were before its metas were read, and is written only if they
//! are the same after; a chunk added, removed or replaced later makes it
//! stale, and a stale one is never used ([`state`]).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use gulp_format::{ChunkStamp, DirIndex, INDEX_FILE, INDEX_LOCK_FILE, IndexBytes, TEMP_PREFIX};

use crate::error::{Error, Result};
use gulp_store::StoredFile;

/// Below this many items a directory opens fast enough from its meta files
/// and `auto` writes no index file.
pub const AUTO_ITEMS: usize = 100_000;

/// The meta_data key the index's label column is read from.
pub const LABEL_KEY: &str = "label";

/// When a directory's index file is used and written (`GULP_INDEX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IndexPolicy {
    /// Use a fresh index; write one for [`AUTO_ITEMS`] items or more.
    #[default]
    Auto,
    /// Use a fresh index; write one for any directory.
    Always,
    /// Use a fresh index; never write one (what a writer of the directory
    /// opens it with: one built then would be stale as soon as it writes).
    Read,
    /// Neither read nor write it.
    Off,
}

gulp_format::choice!(IndexPolicy, "GULP_INDEX", {
    IndexPolicy::Auto => "auto",
    IndexPolicy::Always => "always",
    IndexPolicy::Read => "read",
    IndexPolicy::Off => "off",
});

impl IndexPolicy {
    /// `GULP_INDEX`, else `auto`; an unknown value is an error naming it.
    pub fn from_env() -> Result<IndexPolicy> {
        match std::env::var("GULP_INDEX") {
            Ok(v) if !v.is_empty() => v.parse().map_err(|e: gulp_format::UnknownChoice| {
                Error::from(crate::ErrorKind::Invalid {
                    path: PathBuf::from("GULP_INDEX"),
                    reason: e.to_string(),
                })
            }),
            _ => Ok(IndexPolicy::Auto),
        }
    }

    /// Whether a directory of `items` items gets an index file written.
    pub fn writes(self, items: usize) -> bool {
        match self {
            IndexPolicy::Auto => items >= AUTO_ITEMS,
            IndexPolicy::Always => true,
            IndexPolicy::Read | IndexPolicy::Off => false,
        }
    }
}

/// The state of a directory's index file against its chunks.
#[derive(Debug)]
pub enum IndexState {
    /// There is none.
    Missing,
    /// It matches the chunks' files.
    Fresh(Arc<DirIndex>),
    /// It was written for other files (a chunk added, removed or rewritten
    /// since): what differs.
    Stale(String),
    /// It cannot be read as an index (cut short, a wrong checksum, an
    /// inconsistent section): what is wrong.
    Damaged(String),
}

/// The stamps of local chunk pairs `(number, data, meta)`, in order.
pub(crate) fn stamps(pairs: &[(u64, StoredFile, StoredFile)]) -> Result<Vec<ChunkStamp>> {
    pairs
        .iter()
        .map(|(chunk, data, meta)| {
            let m =
                std::fs::metadata(&meta.path).map_err(|e| Error::io("reading", &meta.path, e))?;
            let d =
                std::fs::metadata(&data.path).map_err(|e| Error::io("reading", &data.path, e))?;
            let mtime = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
            Ok(ChunkStamp {
                chunk: *chunk,
                meta_len: m.len(),
                meta_mtime_ns: mtime,
                data_len: d.len(),
            })
        })
        .collect()
}

/// The index file of `dir` checked against the chunks' `stamps`.
pub(crate) fn state(dir: &Path, stamps: &[ChunkStamp]) -> IndexState {
    let path = dir.join(INDEX_FILE);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return IndexState::Missing,
        Err(e) => return IndexState::Damaged(format!("cannot be opened: {e}")),
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let bytes: IndexBytes = match crate::mmap::map_index(&file, len) {
        Some(map) => Arc::new(map),
        None => return IndexState::Damaged("empty or cannot be mapped".into()),
    };
    let index = match DirIndex::parse(bytes) {
        Ok(index) => index,
        Err(reason) => return IndexState::Damaged(reason),
    };
    if index.n_chunks() != stamps.len() {
        return IndexState::Stale(format!(
            "it lists {} chunks, the directory has {}",
            index.n_chunks(),
            stamps.len()
        ));
    }
    for (c, now) in stamps.iter().enumerate() {
        let then = index.stamp(c);
        if then != *now {
            return IndexState::Stale(format!(
                "chunk {} changed since it was written (meta {} bytes then, {} now; data {} \
                 bytes then, {} now; or its modification time)",
                now.chunk, then.meta_len, now.meta_len, then.data_len, now.data_len
            ));
        }
    }
    IndexState::Fresh(Arc::new(index))
}

/// The name an index file is written under before it is renamed into
/// place: one for every builder, as they hold the builders' lock.
fn index_temp() -> String {
    format!("{TEMP_PREFIX}{INDEX_FILE}")
}

/// Whether a directory entry `name` is an index file being written (or
/// one a killed build left, which the next build overwrites).
pub(crate) fn is_index_temp(name: &str) -> bool {
    name == index_temp()
}

/// The builders' lock of `dir` ([`INDEX_LOCK_FILE`], made if missing),
/// taken: waiting for the builder that holds it when `wait`, else `None`
/// while one does. `Ok(None)` too when the lock file cannot be made (a
/// read-only directory, which cannot have an index written either).
pub(crate) fn lock_builders(dir: &Path, wait: bool) -> Result<Option<File>> {
    let path = dir.join(INDEX_LOCK_FILE);
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if read_only(&e) => return Ok(None),
        Err(e) => return Err(Error::io("opening", &path, e)),
    };
    if wait {
        file.lock().map_err(|e| Error::io("locking", &path, e))?;
        return Ok(Some(file));
    }
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::io("locking", &path, e)),
    }
}

/// Whether `e` says the directory cannot be written (then it is read as
/// before, from its meta files).
fn read_only(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
    )
}

/// Writes the index file of `dir`, whose chunks' files are `stamps`, with
/// the bytes `make` builds (`None`: the directory cannot have one),
/// atomically and under the builders' lock, so that the ranks of a node
/// that open it together build it once (the others wait for that build,
/// never for a writer of the directory, then map it). `now` stamps the
/// chunks' files again once their metas are read: an index is written only
/// if nothing changed meanwhile. `Ok(None)` when it has none afterwards
/// (`make` gave none, the directory is read-only, or its chunks changed):
/// it is then read from its meta files, as without an index.
pub(crate) fn build(
    dir: &Path,
    stamps: &[ChunkStamp],
    now: impl FnOnce() -> Result<Vec<ChunkStamp>>,
    make: impl FnOnce() -> Result<Option<Vec<u8>>>,
) -> Result<Option<Arc<DirIndex>>> {
    let Some(lock) = lock_builders(dir, true)? else {
        return Ok(None);
    };
    // Another process may have written it while this one waited.
    if let IndexState::Fresh(index) = state(dir, stamps) {
        return Ok(Some(index));
    }
    let Some(bytes) = make()? else {
        return Ok(None);
    };
    // A chunk added, removed or replaced while the metas were read (a
    // writer at work): the bytes may mix its states.
    if now().ok().as_deref() != Some(stamps) {
        return Ok(None);
    }
    let tmp = dir.join(index_temp());
    let path = dir.join(INDEX_FILE);
    let written = std::fs::write(&tmp, &bytes)
        .and_then(|()| File::open(&tmp)?.sync_all())
        .and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        if read_only(&e) {
            return Ok(None);
        }
        return Err(Error::io("writing", &path, e));
    }
    crate::writer::sync_dir(dir)?;
    drop(lock);
    match state(dir, stamps) {
        IndexState::Fresh(index) => Ok(Some(index)),
        _ => Ok(None),
    }
}
