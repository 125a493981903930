//! One interface to every place a directory's files are kept: [`Store`],
//! with two implementations. [`LocalFiles`] is the filesystem;
//! `ObjectStores` (cargo feature `s3`, in `s3.rs`) is every object store,
//! through object_store's own trait: S3 buckets, web servers (read only)
//! and stores held in memory (`memory://`, what the tests run the bucket
//! paths on). [`store`](crate::store()) picks one from a location, and is
//! the one place where a build without object stores says so.
//!
//! A location is given as the path or URL it was spelled with (errors name
//! it); the node cache sits above this, in [`StoredFile`](crate::StoredFile),
//! for the reads of a directory that has one.

use std::fs;
use std::io::Write;
use std::ops::Range;
use std::path::Path;

use crate::cache::ObjectId;
use crate::error::{Error, Result};

/// A file of a directory as its listing gives it.
#[derive(Debug, Clone)]
pub struct DirEntry {
    /// The file name.
    pub name: String,
    /// Its path (a URL for an object).
    pub path: std::path::PathBuf,
    /// For an object, the version listed; `None` for a local file.
    pub object: Option<ObjectId>,
}

/// What gulp asks of a place that keeps files.
pub trait Store: Send + Sync {
    /// The files directly in `dir` (a web server, which cannot list, gives
    /// the gulp directory's files found by asking for them).
    fn list(&self, dir: &Path) -> Result<Vec<DirEntry>>;
    /// The whole file; `None` if there is none.
    fn get(&self, path: &Path) -> Result<Option<Vec<u8>>>;
    /// The whole file, which must be there (the error says why it is not).
    fn read(&self, path: &Path) -> Result<Vec<u8>> {
        self.get(path)?
            .ok_or_else(|| Error::io("reading", path, std::io::ErrorKind::NotFound.into()))
    }
    /// Byte ranges of the file, each whole (a short file is an error).
    fn get_ranges(&self, path: &Path, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>>;
    /// The file's size.
    fn len(&self, path: &Path) -> Result<u64>;
    /// Writes the whole file: it appears whole or not at all.
    fn put(&self, path: &Path, bytes: Vec<u8>) -> Result<()>;
    /// Copies a file within the store (an object store copies on its side).
    fn copy(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes a file; one that is not there is not an error.
    fn remove(&self, path: &Path) -> Result<()>;
}

/// The local filesystem. Writes are atomic: a temporary file in the same
/// folder, synced, then renamed.
#[derive(Debug, Clone, Copy)]
pub struct LocalFiles;

/// The name a file is written under before it is renamed into place.
const TEMP_PREFIX: &str = ".gulp-tmp.store.";

impl LocalFiles {
    fn write_atomic(
        &self,
        path: &Path,
        fill: impl FnOnce(&mut fs::File) -> Result<()>,
    ) -> Result<()> {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
        let temp = path.with_file_name(format!("{TEMP_PREFIX}{name}.{}", std::process::id()));
        let result = (|| {
            let mut file = fs::File::create(&temp).map_err(|e| Error::io("creating", &temp, e))?;
            fill(&mut file)?;
            file.sync_all()
                .map_err(|e| Error::io("syncing", &temp, e))?;
            fs::rename(&temp, path).map_err(|e| Error::io("renaming", &temp, e))
        })();
        if result.is_err() {
            let _ = fs::remove_file(&temp);
        }
        result
    }
}

impl Store for LocalFiles {
    fn list(&self, dir: &Path) -> Result<Vec<DirEntry>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))? {
            let entry = entry.map_err(|e| Error::io("listing", dir, e))?;
            if let Some(name) = entry.file_name().to_str() {
                out.push(DirEntry {
                    name: name.to_owned(),
                    path: entry.path(),
                    object: None,
                });
            }
        }
        Ok(out)
    }

    fn get(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        match fs::read(path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("reading", path, e)),
        }
    }

    fn get_ranges(&self, path: &Path, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>> {
        use std::os::unix::fs::FileExt;
        let file = fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
        ranges
            .iter()
            .map(|r| {
                let len = usize::try_from(r.end - r.start).map_err(|_| {
                    Error::io("reading", path, std::io::ErrorKind::InvalidInput.into())
                })?;
                let mut buf = vec![0; len];
                file.read_exact_at(&mut buf, r.start)
                    .map_err(|e| Error::io("reading", path, e))?;
                Ok(buf)
            })
            .collect()
    }

    fn len(&self, path: &Path) -> Result<u64> {
        fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| Error::io("reading", path, e))
    }

    fn put(&self, path: &Path, bytes: Vec<u8>) -> Result<()> {
        self.write_atomic(path, |file| {
            file.write_all(&bytes)
                .map_err(|e| Error::io("writing", path, e))
        })
    }

    fn copy(&self, from: &Path, to: &Path) -> Result<()> {
        let mut input = fs::File::open(from).map_err(|e| Error::io("opening", from, e))?;
        self.write_atomic(to, |file| {
            std::io::copy(&mut input, file)
                .map(|_| ())
                .map_err(|e| Error::io("copying", from, e))
        })
    }

    fn remove(&self, path: &Path) -> Result<()> {
        match fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io("removing", path, e))
            }
            _ => Ok(()),
        }
    }
}
