//! The node cache as a store of its own, over any other: [`CachedStore`].
//!
//! What it reads of the store it wraps is kept in the node's [`Cache`],
//! whole files and byte ranges alike, by the version a listing saw (size
//! and entity tag), so that the processes of a node fetch each byte once
//! and a file replaced in the store is a new entry, never a mix. Writes go
//! to the store it wraps: a new version is a new entry, and the old one is
//! evicted in its turn.

use std::fs;
use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::cache::{Cache, Cached, ObjectId, RangeStore};
use crate::error::{Error, Result};
use crate::store::{DirEntry, Store};

/// A [`Store`] whose reads go through the node cache: the files whole
/// ([`whole`](Self::whole)) or their byte ranges ([`ranges`](Self::ranges)),
/// fetched from `inner` when the cache lacks them.
pub struct CachedStore {
    inner: &'static dyn Store,
    cache: Arc<Cache>,
}

impl std::fmt::Debug for CachedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedStore")
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl CachedStore {
    /// `inner` read through `cache`.
    pub fn new(inner: &'static dyn Store, cache: Arc<Cache>) -> CachedStore {
        CachedStore { inner, cache }
    }

    /// The cache.
    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    /// The store the cache is over.
    pub fn inner(&self) -> &'static dyn Store {
        self.inner
    }

    /// Version `version` of the file at `path` whole in the cache, in use
    /// while the result lives: fetched into it when missing (the ranges of
    /// it the cache holds copied, the rest fetched). `None` when the cache
    /// has no room for it (what it holds is in use): read the store then.
    pub fn whole(&self, path: &Path, version: &ObjectId) -> Result<Option<Cached>> {
        use std::os::unix::fs::FileExt;
        let url = key(path);
        self.cache.get(url, version, |file| {
            let have = self.cache.ranges(url, version).each_span(|span, bytes| {
                file.write_all_at(bytes, span.start)
                    .map_err(|e| Error::io("writing", path, e))
            })?;
            self.inner.download(path, version, file, &have)
        })
    }

    /// The byte ranges of version `version` of the file kept in the cache;
    /// [`fetch`](Self::fetch) gives what they lack.
    pub fn ranges(&self, path: &Path, version: &ObjectId) -> RangeStore {
        self.cache.ranges(key(path), version)
    }

    /// What fetches the ranges a [`RangeStore`] of the file lacks: each
    /// span one request, for version `version` only.
    pub fn fetch<'a>(
        &'a self,
        path: &'a Path,
        version: &'a ObjectId,
    ) -> impl FnOnce(&[Range<u64>]) -> Result<Vec<Bytes>> + 'a {
        move |spans| self.inner.get_version_ranges(path, version, spans)
    }
}

/// The name a file is kept under in the cache: its path or URL as given.
fn key(path: &Path) -> &str {
    path.to_str().unwrap_or_default()
}

impl Store for CachedStore {
    fn list(&self, dir: &Path) -> Result<Vec<DirEntry>> {
        self.inner.list(dir)
    }

    fn get(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        let version = match self.inner.version(path) {
            Ok(version) => version,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        match self.whole(path, &version)? {
            Some(mut cached) => {
                let mut buf = Vec::new();
                cached
                    .file
                    .read_to_end(&mut buf)
                    .map_err(|e| Error::io("reading", &cached.path, e))?;
                Ok(Some(buf))
            }
            None => self.inner.get(path),
        }
    }

    fn get_ranges(&self, path: &Path, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>> {
        let version = self.inner.version(path)?;
        self.ranges(path, &version)
            .read(ranges, self.fetch(path, &version))
    }

    fn len(&self, path: &Path) -> Result<u64> {
        self.inner.len(path)
    }

    fn put(&self, path: &Path, bytes: Vec<u8>) -> Result<()> {
        self.inner.put(path, bytes)
    }

    fn copy(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.copy(from, to)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.inner.remove(path)
    }

    fn version(&self, path: &Path) -> Result<ObjectId> {
        self.inner.version(path)
    }

    fn get_version_ranges(
        &self,
        path: &Path,
        version: &ObjectId,
        ranges: &[Range<u64>],
    ) -> Result<Vec<Bytes>> {
        Ok(self
            .ranges(path, version)
            .read(ranges, self.fetch(path, version))?
            .into_iter()
            .map(Bytes::from)
            .collect())
    }

    fn download(
        &self,
        path: &Path,
        version: &ObjectId,
        file: &fs::File,
        have: &[Range<u64>],
    ) -> Result<()> {
        self.inner.download(path, version, file, have)
    }
}

#[cfg(test)]
// A list of one byte range is what is meant, not a list of numbers.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use crate::cache::CacheOptions;
    use crate::store::LocalFiles;

    fn cache(dir: &Path) -> Arc<Cache> {
        Arc::new(Cache::open(&CacheOptions::new(dir.join("cache"))).expect("open the cache"))
    }

    #[test]
    fn the_cache_wraps_the_filesystem_as_it_wraps_a_bucket() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("data_0.gulp");
        let bytes: Vec<u8> = (0..50_000u32).map(|i| (i % 241) as u8).collect();
        fs::write(&file, &bytes).expect("write");
        let store = CachedStore::new(&LocalFiles, cache(dir.path()));
        let got = store
            .get_ranges(&file, &[10..20, 40_000..40_100])
            .expect("ranges");
        assert_eq!(
            got,
            vec![bytes[10..20].to_vec(), bytes[40_000..40_100].to_vec()]
        );
        // The same version (the size, here) is served from the cache: bytes
        // written under it since are not read.
        fs::write(&file, vec![0u8; bytes.len()]).expect("overwrite");
        let again = store.get_ranges(&file, &[12..18]).expect("ranges again");
        assert_eq!(again, vec![bytes[12..18].to_vec()]);
        // Another version (another size) is another entry, read anew.
        fs::write(&file, vec![7u8; 100]).expect("rewrite");
        assert_eq!(store.get(&file).expect("get"), Some(vec![7u8; 100]));
        assert_eq!(store.len(&file).expect("len"), 100);
        assert_eq!(store.get(&dir.path().join("missing")).expect("get"), None);
        // Writes go to the store wrapped.
        store.put(&file, b"new".to_vec()).expect("put");
        assert_eq!(fs::read(&file).expect("read"), b"new");
    }

    #[cfg(feature = "s3")]
    #[test]
    fn over_a_store_in_memory_each_byte_is_fetched_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = Path::new("memory://cached-test/dir/data_0.gulp");
        let bytes: Vec<u8> = (0..3_000_000u32).map(|i| (i % 239) as u8).collect();
        let inner = crate::files::store(path).expect("the memory store");
        inner.put(path, bytes.clone()).expect("put");
        let store = CachedStore::new(inner, cache(dir.path()));
        let version = store.version(path).expect("version");
        assert_eq!(version.size, bytes.len() as u64);
        let before = crate::s3::requests_here();
        let got = store
            .get_version_ranges(path, &version, &[100..200, 2_500_000..2_500_010])
            .expect("ranges");
        assert_eq!(&got[0][..], &bytes[100..200]);
        assert_eq!(&got[1][..], &bytes[2_500_000..2_500_010]);
        // Two requests: the ranges lie more than 1 MiB apart.
        assert_eq!(crate::s3::requests_here() - before, 2);
        // Made whole from the ranges kept and the rest fetched; then every
        // read is the cache's.
        let whole = store.whole(path, &version).expect("whole").expect("room");
        assert_eq!(fs::read(&whole.path).expect("read"), bytes);
        let before = crate::s3::requests_here();
        let got = store
            .get_version_ranges(path, &version, &[0..10, 1_000_000..1_000_010])
            .expect("ranges");
        assert_eq!(&got[1][..], &bytes[1_000_000..1_000_010]);
        assert_eq!(crate::s3::requests_here() - before, 0);
        // A version the store no longer has is an error, never a mix.
        inner.put(path, vec![1u8; 10]).expect("replace");
        let stale = ObjectId {
            size: bytes.len() as u64,
            etag: Some("\"not-the-tag\"".into()),
        };
        let fresh = dir.path().join("fresh");
        let other = CachedStore::new(inner, cache(&fresh));
        assert!(other.get_version_ranges(path, &stale, &[0..5]).is_err());
    }
}
