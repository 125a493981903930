//! Where a directory's files are: the local filesystem, or an object store
//! (`s3://...`, cargo feature `s3`). Paths spell either.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cache::{Cache, Cached, ObjectId, RangeStore};

use crate::error::{Error, ErrorKind, Result};
use crate::store::store;

use crate::location::is_remote;

/// A file of a directory as its listing gives it.
#[derive(Debug, Clone)]
pub struct DirEntry {
    /// The file name.
    pub name: String,
    /// Its path (a URL for an object).
    pub path: PathBuf,
    /// For an object, the version listed; `None` for a local file.
    pub object: Option<ObjectId>,
}

/// The entries of directory `dir`.
pub fn list_dir(dir: &Path) -> Result<Vec<DirEntry>> {
    store(dir)?.list(dir)
}

/// A file of a directory and how to read it: a local file, or an object of
/// a store, through the node cache when the directory has one.
#[derive(Debug, Clone)]
pub struct StoredFile {
    /// The file's path (an object's URL).
    pub path: PathBuf,
    /// For an object, the version the directory's listing saw.
    pub object: Option<ObjectId>,
    /// The node cache objects are read through.
    pub cache: Option<Arc<Cache>>,
}

impl StoredFile {
    /// A local file, or an object read without a cache.
    pub fn plain(path: PathBuf) -> StoredFile {
        StoredFile {
            path,
            object: None,
            cache: None,
        }
    }

    /// The byte ranges of the object kept in the node cache; `None` for a
    /// local file or an object without a cache.
    pub fn range_store(&self) -> Option<RangeStore> {
        let (Some(cache), Some(object)) = (&self.cache, &self.object) else {
            return None;
        };
        Some(cache.ranges(self.path.to_str().unwrap_or_default(), object))
    }

    /// The object's cached copy, in use while the result lives: fetched
    /// whole into the cache when missing (the ranges of it the cache holds
    /// copied, the rest fetched). `None` for a local file, an object
    /// without a cache, or when the cache has no room (then the object is
    /// read from the store).
    pub fn cached(&self) -> Result<Option<Cached>> {
        let (Some(cache), Some(object)) = (&self.cache, &self.object) else {
            return Ok(None);
        };
        #[cfg(feature = "s3")]
        {
            use std::os::unix::fs::FileExt;
            let url = self.path.to_str().unwrap_or_default();
            let remote = crate::s3::Object::at(&self.path)?;
            cache.get(url, object, |file| {
                let have = cache.ranges(url, object).each_span(|span, bytes| {
                    file.write_all_at(bytes, span.start)
                        .map_err(|e| Error::io("writing", &self.path, e))
                })?;
                remote.download(file, object.size, object.etag.as_deref(), &have)
            })
        }
        #[cfg(not(feature = "s3"))]
        {
            let _ = (cache, object);
            Ok(None)
        }
    }

    /// Reads the whole file into `buf` (cleared first), from the cache
    /// where it can.
    pub fn read_into(&self, buf: &mut Vec<u8>) -> Result<()> {
        use std::io::Read;
        match self.cached()? {
            Some(mut cached) => {
                buf.clear();
                cached
                    .file
                    .read_to_end(buf)
                    .map(|_| ())
                    .map_err(|e| Error::io("reading", &cached.path, e))
            }
            None => read_into(&self.path, buf),
        }
    }

    /// Reads the whole file.
    pub fn read(&self) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_into(&mut buf)?;
        Ok(buf)
    }
}

/// Reads a whole file into `buf` (cleared first).
pub fn read_into(path: &Path, buf: &mut Vec<u8>) -> Result<()> {
    if !is_remote(path) {
        // Into the caller's buffer, which the loader reuses.
        use std::io::Read;
        buf.clear();
        return fs::File::open(path)
            .and_then(|mut file| file.read_to_end(buf))
            .map(|_| ())
            .map_err(|e| Error::io("reading", path, e));
    }
    *buf = read(path)?;
    Ok(())
}

/// Reads a whole file.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    store(path)?.read(path)
}

/// Reads a whole file of a directory, local or remote; `None` if it does
/// not exist (e.g. a directory's `label2idx.json`).
pub fn read_optional(path: &Path) -> Result<Option<Vec<u8>>> {
    store(path)?.get(path)
}

/// Writes a whole file or object: it appears whole or not at all (a local
/// file is written under another name and renamed; an object is one PUT).
pub fn write_object(path: &Path, bytes: Vec<u8>) -> Result<()> {
    store(path)?.put(path, bytes)
}

/// The size of a file, local or remote.
pub fn file_len(path: &Path) -> Result<u64> {
    store(path)?.len(path)
}

/// Copies a file within its store (`from` and `to` in one bucket, or both
/// local).
pub fn copy_file(from: &Path, to: &Path) -> Result<()> {
    if is_remote(from) != is_remote(to) {
        return Err(ErrorKind::Invalid {
            path: to.to_owned(),
            reason: format!("cannot copy {} here within a store", from.display()),
        }
        .into());
    }
    store(from)?.copy(from, to)
}

/// Removes a file or an object; one that is not there is not an error.
pub fn remove_file(path: &Path) -> Result<()> {
    store(path)?.remove(path)
}

#[cfg(all(test, not(feature = "s3")))]
mod tests {
    use super::*;

    /// A build without object stores says so in one wording, naming the
    /// location, wherever one is given.
    #[test]
    fn a_build_without_object_stores_names_the_location() {
        let url = Path::new("s3://bucket/train");
        let errors = [
            list_dir(url).unwrap_err(),
            read(&url.join("data_0.gulp")).unwrap_err(),
            read_optional(&url.join("label2idx.json")).unwrap_err(),
            write_object(&url.join("x"), vec![1]).unwrap_err(),
            remove_file(&url.join("x")).unwrap_err(),
            file_len(&url.join("data_0.gulp")).unwrap_err(),
        ];
        for e in errors {
            assert!(
                matches!(e.kind(), crate::ErrorKind::NoObjectStore { .. }),
                "{e}"
            );
            assert!(
                e.to_string().starts_with("s3://bucket/train")
                    && e.to_string()
                        .ends_with(": this build of gulp has no object store (cargo feature `s3`)"),
                "{e}"
            );
        }
    }
}
