//! Where a directory's files are: the local filesystem, or an object store
//! (`s3://...`, cargo feature `s3`). Paths spell either.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cache::{Cached, ObjectId, RangeStore};
use crate::cached::CachedStore;

use crate::error::{Error, ErrorKind, Result};
use crate::location::{Location, is_remote};
use crate::store::{DirEntry, LocalFiles, Store};

/// The store `path` is in: the filesystem, or (cargo feature `s3`) the
/// object stores; the one place where a build without them says so.
pub fn store(path: &Path) -> Result<&'static dyn Store> {
    match Location::parse(path)? {
        Location::Local(_) => Ok(&LocalFiles),
        #[cfg(feature = "s3")]
        _ => Ok(&crate::s3::ObjectStores),
        #[cfg(not(feature = "s3"))]
        _ => Err(Error::no_object_store(path)),
    }
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
    /// The node cache objects are read through: the store the file is in,
    /// wrapped.
    pub cache: Option<Arc<CachedStore>>,
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
        Some(cache.ranges(&self.path, object))
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
        cache.whole(&self.path, object)
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

#[cfg(test)]
mod store_tests {
    use super::*;

    /// The filesystem as a store: whole writes, ranges, copies, removal of
    /// what is there and of what is not.
    #[test]
    fn local_files_are_a_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a");
        let s = store(&a).expect("a local store");
        s.put(&a, b"0123456789".to_vec()).expect("put");
        assert_eq!(s.get(&a).expect("get").as_deref(), Some(&b"0123456789"[..]));
        assert_eq!(s.len(&a).expect("len"), 10);
        assert_eq!(
            s.get_ranges(&a, &[2..4, 8..10]).expect("ranges"),
            vec![b"23".to_vec(), b"89".to_vec()]
        );
        let e = s.get_ranges(&a, &[0..1, 8..12]).expect_err("past the end");
        assert!(e.to_string().contains(&*a.to_string_lossy()), "{e}");
        let b = dir.path().join("b");
        s.copy(&a, &b).expect("copy");
        let mut names: Vec<String> = s
            .list(dir.path())
            .expect("list")
            .into_iter()
            .map(|e| e.name)
            .collect();
        names.sort();
        assert_eq!(names, ["a", "b"], "no temporary file is left");
        s.remove(&a).expect("remove");
        s.remove(&a).expect("removing what is gone");
        assert_eq!(s.get(&a).expect("get"), None);
    }

    /// A store in memory answers as a bucket does, through the same
    /// object-store code: its objects are listed with their sizes and tags,
    /// copied on its side, and two stores of different names are apart.
    #[cfg(feature = "s3")]
    #[test]
    fn a_store_in_memory_is_a_bucket_without_a_server() {
        let a = Path::new("memory://store-test/dir/a");
        let s = store(a).expect("a store");
        s.put(a, b"0123456789".to_vec()).expect("put");
        assert_eq!(s.read(a).expect("read"), b"0123456789");
        assert_eq!(s.len(a).expect("len"), 10);
        assert_eq!(
            s.get_ranges(a, &[2..4, 8..10]).expect("ranges"),
            vec![b"23".to_vec(), b"89".to_vec()]
        );
        let b = Path::new("memory://store-test/dir/b");
        s.copy(a, b).expect("copy");
        let listed = s.list(Path::new("memory://store-test/dir")).expect("list");
        let mut seen: Vec<(String, u64)> = listed
            .iter()
            .map(|e| (e.name.clone(), e.object.as_ref().map_or(0, |o| o.size)))
            .collect();
        seen.sort();
        assert_eq!(seen, [("a".to_owned(), 10), ("b".to_owned(), 10)]);
        assert_eq!(
            listed[0].path.parent(),
            Some(Path::new("memory://store-test/dir"))
        );
        s.remove(a).expect("remove");
        s.remove(a).expect("removing what is gone");
        assert_eq!(s.get(a).expect("get"), None);
        let e = s.read(a).expect_err("gone");
        assert!(
            matches!(e.kind(), crate::ErrorKind::RemoteNotFound { .. })
                && e.to_string().starts_with("memory://store-test/dir/a"),
            "{e}"
        );
        assert_eq!(
            s.get(Path::new("memory://other-store/dir/b")).expect("get"),
            None
        );
        // A web server is read only: refused before any request.
        let web = Path::new("https://example.invalid/dir/a");
        let e = store(web)
            .expect("a store")
            .put(web, vec![1])
            .expect_err("read only");
        assert!(e.to_string().contains("read only"), "{e}");
    }
}
