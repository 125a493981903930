//! Cleaning up after an interrupted write.

use std::fs;
use std::path::{Path, PathBuf};

use gulp_format::{ChunkFile, TEMP_PREFIX, data_file_name, meta_file_name, parse_chunk_file_name};

use crate::error::{Error, Result};
use crate::reader::load_meta;
use crate::writer::sync_dir;

/// One thing [`recover`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// A commit was cut off between its two renames: the data file was in
    /// place, its complete meta still under the temporary name. The meta was
    /// moved into place, finishing the commit.
    RolledForward {
        /// The chunk number.
        chunk: u64,
        /// The meta file now in place.
        meta: PathBuf,
    },
    /// A temporary file of a write that never reached its commit, removed.
    RemovedTemp(PathBuf),
}

impl std::fmt::Display for Recovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Recovery::RolledForward { chunk, meta } => write!(
                f,
                "chunk {chunk}: finished an interrupted commit ({})",
                meta.display()
            ),
            Recovery::RemovedTemp(p) => {
                write!(f, "removed {} (an unfinished write)", p.display())
            }
        }
    }
}

/// Brings `dir` back to a clean state after a writer was killed.
///
/// [`ChunkWriter::finish`](crate::ChunkWriter::finish) renames the synced
/// data file into place, then the synced meta file. A kill between the two
/// leaves `data_N.gulp` with its meta still at the temporary name, and
/// gulpio2 then refuses the whole directory; this finishes such a commit when
/// the meta parses and fits the data file. Every other temporary file (a
/// write that never reached its commit) is removed.
///
/// Call it only while no other writer is working in `dir` (an ingest holds a
/// lock for that), or it removes that writer's temporary files.
pub fn recover(dir: impl AsRef<Path>) -> Result<Vec<Recovery>> {
    recover_where(dir.as_ref(), |_| true)
}

/// [`recover`] for the chunks `owns` accepts only: their cut commits are
/// finished and their temporary files removed; every other temporary file
/// is left alone. Several writers sharing a directory (the tasks of a
/// sharded ingest, each owning its chunks) recover their own chunks while
/// the others work.
pub fn recover_chunks(dir: impl AsRef<Path>, owns: impl Fn(u64) -> bool) -> Result<Vec<Recovery>> {
    recover_where(dir.as_ref(), |rest| match parse_chunk_file_name(rest) {
        Some(ChunkFile::Data(n) | ChunkFile::Meta(n)) => owns(n),
        None => false,
    })
}

/// Recovers the temporary files whose name after [`TEMP_PREFIX`] `take`
/// accepts.
fn recover_where(dir: &Path, take: impl Fn(&str) -> bool) -> Result<Vec<Recovery>> {
    let mut temps = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))? {
        let entry = entry.map_err(|e| Error::io("listing", dir, e))?;
        let name = entry.file_name();
        if let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TEMP_PREFIX))
            && take(rest)
        {
            temps.push(rest.to_owned());
        }
    }
    temps.sort();
    let mut done = Vec::new();
    for rest in &temps {
        let Some(ChunkFile::Meta(chunk)) = parse_chunk_file_name(rest) else {
            continue;
        };
        let data_tmp = dir.join(format!("{TEMP_PREFIX}{}", data_file_name(chunk)));
        let data = dir.join(data_file_name(chunk));
        if data_tmp.exists() || !data.exists() {
            continue; // the commit never started: the temporaries go below
        }
        let tmp_meta = dir.join(format!("{TEMP_PREFIX}{rest}"));
        if !meta_fits(&tmp_meta, &data) {
            continue;
        }
        let meta = dir.join(meta_file_name(chunk));
        fs::rename(&tmp_meta, &meta).map_err(|e| Error::io("renaming", &tmp_meta, e))?;
        done.push(Recovery::RolledForward { chunk, meta });
    }
    // An index file being built (its builder holds the builders' lock) is
    // no writer's leftover: kept until that build is done.
    let index_temp =
        |rest: &str| crate::index_policy::is_index_temp(&format!("{TEMP_PREFIX}{rest}"));
    let builders = if temps.iter().any(|rest| index_temp(rest)) {
        crate::index_policy::lock_builders(dir, false)?
    } else {
        None
    };
    for rest in temps {
        if index_temp(&rest) && builders.is_none() {
            continue;
        }
        let path = dir.join(format!("{TEMP_PREFIX}{rest}"));
        match fs::remove_file(&path) {
            Ok(()) => done.push(Recovery::RemovedTemp(path)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("removing", &path, e)),
        }
    }
    if !done.is_empty() {
        sync_dir(dir)?;
    }
    Ok(done)
}

/// Whether the meta at `meta` parses and every record lies inside `data`.
fn meta_fits(meta: &Path, data: &Path) -> bool {
    let Ok(parsed) = load_meta(meta) else {
        return false;
    };
    let Ok(len) = fs::metadata(data).map(|m| m.len()) else {
        return false;
    };
    parsed.data_extent().is_some_and(|extent| extent <= len)
}
