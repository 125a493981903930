//! One interface to every place a directory's files are kept: [`Store`],
//! with two implementations. [`LocalFiles`] is the filesystem;
//! `ObjectStores` (cargo feature `s3`, in `s3.rs`) is every object store,
//! through object_store's own trait: S3 buckets, web servers (read only)
//! and stores held in memory (`memory://`, what the tests run the bucket
//! paths on). [`store`](crate::store()) picks one from a location, and is
//! the one place where a build without object stores says so.
//!
//! A location is given as the path or URL it was spelled with (errors name
//! it). The node cache is a store too, over any other
//! ([`CachedStore`](crate::CachedStore)): a directory that has one reads
//! through it.

use std::fs;
use std::io::Write;
use std::ops::Range;
use std::path::Path;

use bytes::Bytes;

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

    /// The file's version: its size, and its entity tag where the store
    /// gives one (what a listing gives as [`DirEntry::object`]).
    fn version(&self, path: &Path) -> Result<ObjectId> {
        Ok(ObjectId {
            size: self.len(path)?,
            etag: None,
        })
    }

    /// Byte ranges of version `version` of the file, each whole and each
    /// its own request where the store makes requests (the caller groups
    /// neighbours). A store that tags versions asks for that one: another
    /// is an error that says to open the directory again, never a mix.
    fn get_version_ranges(
        &self,
        path: &Path,
        version: &ObjectId,
        ranges: &[Range<u64>],
    ) -> Result<Vec<Bytes>> {
        let _ = version;
        Ok(self
            .get_ranges(path, ranges)?
            .into_iter()
            .map(Bytes::from)
            .collect())
    }

    /// Writes version `version` of the file into `file` at its offsets, but
    /// for the ranges `have` (already written): what the node cache makes a
    /// whole copy with. Parts of at most 2 MiB; cached spans shorter than
    /// 256 KiB are fetched again with the holes around them.
    fn download(
        &self,
        path: &Path,
        version: &ObjectId,
        file: &fs::File,
        have: &[Range<u64>],
    ) -> Result<()> {
        use std::os::unix::fs::FileExt;
        for part in missing_parts(version.size, have, PART, KEEP_SPAN) {
            let start = part.start;
            for bytes in self.get_version_ranges(path, version, &[part])? {
                file.write_all_at(&bytes, start)
                    .map_err(|e| Error::io("writing", path, e))?;
            }
        }
        Ok(())
    }
}

/// The largest part a whole fetch asks for at once: an object store's
/// fetches four at a time (`s3::Object::download`), so a chunk of a
/// few MB arrives over several connections (8 MiB sent a 7 MB chunk over
/// one, at 0.92x the clips/s of bench_formats.py's bucket row with Garage
/// on the loader's cores).
pub(crate) const PART: u64 = 2 << 20;

/// The shortest span of an object already in the cache that a whole fetch
/// leaves out between two holes. Shorter ones (a frame, or the frames of a
/// small item) are fetched again with the holes on either side, in one
/// request: a request costs a store about what a few hundred KB do (on
/// Garage, about 1 ms of its CPU against 3–4 ms for a MiB), and fetching
/// less than that again saves a request for few bytes. The ranges an epoch
/// fetches through a cache that will hold the object are kept with what
/// lies between them ([`RangeStore::keeping_gaps`](crate::cache::RangeStore::keeping_gaps)), so most
/// cached spans are a clip's and far longer.
pub(crate) const KEEP_SPAN: u64 = 256 << 10;

/// The parts, of at most `part` bytes, of `0..size` that `have` does not
/// cover; two holes with less than `keep` covered bytes between them are
/// one (those bytes fetched again).
pub(crate) fn missing_parts(
    size: u64,
    have: &[Range<u64>],
    part: u64,
    keep: u64,
) -> Vec<Range<u64>> {
    let mut holes: Vec<Range<u64>> = Vec::new();
    let mut at = 0;
    // Each covered range ends the hole before it; the end of the object
    // ends the last.
    for (start, end) in crate::cache::coalesce(have, 0)
        .iter()
        .map(|c| (c.start.min(size), c.end.min(size)))
        .chain(std::iter::once((size, size)))
    {
        if at < start {
            match holes.last_mut() {
                Some(last) if at - last.end < keep => last.end = start,
                _ => holes.push(at..start),
            }
        }
        at = at.max(end);
    }
    let mut parts = Vec::new();
    for hole in holes {
        let mut from = hole.start;
        while from < hole.end {
            let to = (from + part).min(hole.end);
            parts.push(from..to);
            from = to;
        }
    }
    parts
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

    #[test]
    // A list of one byte range is what is meant, not a list of numbers.
    #[allow(clippy::single_range_in_vec_init)]
    fn a_whole_fetch_asks_for_what_the_ranges_do_not_cover() {
        assert_eq!(missing_parts(10, &[], 4, 1), vec![0..4, 4..8, 8..10]);
        assert_eq!(missing_parts(10, &[2..4, 3..6], 4, 1), vec![0..2, 6..10]);
        assert_eq!(missing_parts(10, &[0..10], 4, 1), Vec::<Range<u64>>::new());
        assert_eq!(missing_parts(10, &[8..10, 0..1], 100, 1), vec![1..8]);
        // Covered spans shorter than `keep` between two holes are fetched
        // again with them, in as few parts as the part size allows; those
        // at either end, or covering everything, are not.
        assert_eq!(missing_parts(10, &[2..3, 5..9], 100, 2), vec![0..5, 9..10]);
        assert_eq!(missing_parts(10, &[2..3, 5..6], 100, 2), vec![0..10]);
        assert_eq!(
            missing_parts(10, &[0..10], 100, 100),
            Vec::<Range<u64>>::new()
        );
        assert_eq!(missing_parts(10, &[0..4, 5..10], 100, 100), vec![4..5]);
        assert_eq!(
            missing_parts(10, &[0..1, 3..4, 6..10], 100, 100),
            vec![1..6]
        );
    }
}
