//! One interface to every place a directory's files are kept: [`Store`],
//! with two implementations. [`LocalFiles`] is the filesystem;
//! `ObjectStores` (cargo feature `s3`) is every object store, through
//! object_store's own trait: S3 buckets, web servers (read only) and
//! stores held in memory (`memory://`, what the tests run the bucket
//! paths on). [`store`] picks one from a location, and is the one place
//! where a build without object stores says so.
//!
//! A location is given as the path or URL it was spelled with (errors name
//! it); the node cache sits above this, in [`StoredFile`](crate::StoredFile),
//! for the reads of a directory that has one.

use std::fs;
use std::io::Write;
use std::ops::Range;
use std::path::Path;

use crate::error::{Error, Result};
use crate::files::DirEntry;
use crate::location::Location;

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

/// The store `path` is in.
pub fn store(path: &Path) -> Result<&'static dyn Store> {
    match Location::parse(path)? {
        Location::Local(_) => Ok(&LocalFiles),
        #[cfg(feature = "s3")]
        _ => Ok(&crate::s3::ObjectStores),
        #[cfg(not(feature = "s3"))]
        _ => Err(Error::no_object_store(path)),
    }
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

#[cfg(test)]
mod tests {
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
