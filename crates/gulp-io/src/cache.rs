//! The node cache of remote directories: each object of an `s3://`
//! directory is fetched once per node into a local directory that every
//! process of the node shares, and evicted least-recently-used under a size
//! limit. Layout and rules: `docs/object-storage.md`, "The node cache".
//!
//! ```text
//! CACHE/
//!   CACHEDIR.TAG                      marks the directory as a cache (backup tools skip it)
//!   lock                              held while space is reserved or freed
//!   objects/BUCKET/KEY...~SIZE-TAG    an object, whole, complete (renamed into place)
//!   objects/BUCKET/KEY...~SIZE-TAG.lock   held while that object is being fetched
//!   parts/PID-N-SIZE.part             a fetch in progress, locked by its process
//! ```
//!
//! An entry's name holds the object's size and a hash of its ETag, as the
//! directory's listing gave them: another version of the object is another
//! entry, and a file of another length (truncated) is not served but
//! fetched again. Entries appear by `rename` once complete and synced, so
//! nothing half-fetched is ever read. A process using an entry holds a
//! shared lock on it (the kernel drops it if the process dies); eviction
//! takes an exclusive lock first, so an entry in use is never evicted.
// Without object stores (no cargo feature `s3`) nothing is cached; the
// options stay, so that front ends take them alike.
#![cfg_attr(not(feature = "s3"), allow(dead_code))]

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use crate::error::{Error, ErrorKind, Result};

/// The variable naming the cache directory of remote directories.
pub const CACHE_DIR_ENV: &str = "GULP_CACHE_DIR";
/// The variable giving the cache's size limit (`500G`, `20GiB`, bytes).
pub const CACHE_LIMIT_ENV: &str = "GULP_CACHE_LIMIT";

const TAG_FILE: &str = "CACHEDIR.TAG";
const TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
# This directory is gulp's node cache of remote gulp directories.\n\
# Everything in it can be fetched again; see docs/object-storage.md.\n";
const LOCK_FILE: &str = "lock";
const OBJECTS: &str = "objects";
const PARTS: &str = "parts";
const PART_EXT: &str = "part";
const LOCK_EXT: &str = "lock";
/// Between an object's key and its version tag in an entry's name; never
/// in an encoded key.
const SEP: char = '~';

/// Which version of an object a directory's listing saw: what a cached
/// copy of it is named by and checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectId {
    /// Its size in bytes.
    pub(crate) size: u64,
    /// Its entity tag, where the store gives one.
    pub(crate) etag: Option<String>,
}

/// Where remote directories are cached on this node, and how much it may
/// hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheOptions {
    /// The cache directory (made if missing); processes that give the same
    /// directory share it.
    pub dir: PathBuf,
    /// The most bytes of objects it keeps; `None` for no limit. Objects in
    /// use are never evicted: when they alone fill the limit, reads go to
    /// the store without caching.
    pub limit: Option<u64>,
}

impl CacheOptions {
    /// A cache in `dir` without a limit.
    pub fn new(dir: impl Into<PathBuf>) -> CacheOptions {
        CacheOptions {
            dir: dir.into(),
            limit: None,
        }
    }

    /// The same with a size limit.
    pub fn with_limit(self, limit: Option<u64>) -> CacheOptions {
        CacheOptions { limit, ..self }
    }

    /// The cache that `GULP_CACHE_DIR` and `GULP_CACHE_LIMIT` name, `None`
    /// when `GULP_CACHE_DIR` is unset or empty.
    pub fn from_env() -> Result<Option<CacheOptions>> {
        let Some(dir) = std::env::var_os(CACHE_DIR_ENV).filter(|d| !d.is_empty()) else {
            return Ok(None);
        };
        let limit = match std::env::var(CACHE_LIMIT_ENV) {
            Ok(text) if !text.trim().is_empty() => {
                Some(parse_size(&text).ok_or_else(|| ErrorKind::Invalid {
                    path: PathBuf::from(&dir),
                    reason: format!(
                        "{CACHE_LIMIT_ENV}={text:?} is not a size (e.g. 500G, 20GiB, 1048576)"
                    ),
                })?)
            }
            _ => None,
        };
        Ok(Some(CacheOptions::new(dir).with_limit(limit)))
    }
}

/// A size in bytes: a number with an optional unit, `K`/`M`/`G`/`T` (powers
/// of 1000, also `KB`...) or `KiB`/`MiB`/`GiB`/`TiB` (powers of 1024), e.g.
/// `500G`, `1.5TiB`, `1048576`.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "t" | "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = (number * scale).round();
    // 2^63: any cache limit fits far below.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    (0.0..9.2e18).contains(&bytes).then_some(bytes as u64)
}

/// An entry of the cache in use by this process: its file, opened and
/// holding a shared lock, so that no process evicts it while this lives.
#[derive(Debug)]
pub(crate) struct Cached {
    /// The entry's file (read from it, or map it).
    pub(crate) file: File,
    /// Its path in the cache.
    pub(crate) path: PathBuf,
}

/// A node cache (see the module's documentation).
#[derive(Debug)]
pub(crate) struct Cache {
    root: PathBuf,
    limit: Option<u64>,
}

impl Cache {
    /// Opens (making it if missing) the cache `options` name.
    pub(crate) fn open(options: &CacheOptions) -> Result<Cache> {
        let root = options.dir.clone();
        for dir in [root.join(OBJECTS), root.join(PARTS)] {
            fs::create_dir_all(&dir)
                .map_err(|e| Error::io("making the cache directory", &dir, e))?;
        }
        let tag = root.join(TAG_FILE);
        if !tag.exists() {
            // Best effort: the tag only helps backup tools.
            let _ = fs::write(&tag, TAG);
        }
        Ok(Cache {
            root,
            limit: options.limit,
        })
    }

    /// The cache directory.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The size limit, if any.
    pub(crate) fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// Where the object `url` of this size and ETag is kept.
    pub(crate) fn entry_path(&self, url: &str, id: &ObjectId) -> PathBuf {
        let mut path = self.root.join(OBJECTS);
        let key = url.split_once("://").map_or(url, |(_, rest)| rest);
        let parts: Vec<&str> = key.split('/').filter(|p| !p.is_empty()).collect();
        for (i, part) in parts.iter().enumerate() {
            let mut name = encode(part);
            if i + 1 == parts.len() {
                let tag = id.etag.as_deref().map_or(0, fnv1a);
                name.push_str(&format!("{SEP}{}-{tag:016x}", id.size));
            }
            path.push(name);
        }
        path
    }

    /// The cached copy of the object `url` (fetched by `fetch` into the
    /// file it is given when missing, once per node: other processes that
    /// want it meanwhile wait for that fetch), in use until the result is
    /// dropped; `None` when the cache cannot make room for it (everything
    /// it could evict is in use), in which case the caller reads the store.
    pub(crate) fn get(
        &self,
        url: &str,
        id: &ObjectId,
        fetch: impl FnOnce(&File) -> Result<()>,
    ) -> Result<Option<Cached>> {
        let path = self.entry_path(url, id);
        if let Some(cached) = open_valid(&path, id.size)? {
            return Ok(Some(cached));
        }
        let parent = path.parent().unwrap_or(&self.root).to_owned();
        fs::create_dir_all(&parent)
            .map_err(|e| Error::io("making the cache directory", &parent, e))?;
        // One fetch per entry on this node: the others wait here, then find
        // the entry made.
        let lock_path = with_ext(&path, LOCK_EXT);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::io("opening", &lock_path, e))?;
        lock.lock()
            .map_err(|e| Error::io("locking", &lock_path, e))?;
        if let Some(cached) = open_valid(&path, id.size)? {
            return Ok(Some(cached));
        }
        let Some((part, part_path)) = self.reserve(id.size)? else {
            return Ok(None);
        };
        let fetched = fetch(&part).and_then(|()| {
            part.sync_all()
                .map_err(|e| Error::io("syncing", &part_path, e))?;
            fs::rename(&part_path, &path).map_err(|e| Error::io("renaming", &part_path, e))?;
            // The rename is durable once the directory is synced.
            if let Ok(dir) = File::open(&parent) {
                let _ = dir.sync_all();
            }
            Ok(())
        });
        if let Err(e) = fetched {
            let _ = fs::remove_file(&part_path);
            return Err(e);
        }
        // The part's file is the entry now: from its exclusive lock to a
        // shared one, so that the entry counts as in use.
        part.lock_shared()
            .map_err(|e| Error::io("locking", &path, e))?;
        self.remove_other_versions(&path);
        Ok(Some(Cached { file: part, path }))
    }

    /// A new part file for a fetch of `size` bytes, holding an exclusive
    /// lock, once the cache has room for it (evicting entries least
    /// recently used first, never one in use); `None` if it cannot have.
    fn reserve(&self, size: u64) -> Result<Option<(File, PathBuf)>> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let global = self.root.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&global)
            .map_err(|e| Error::io("opening", &global, e))?;
        lock.lock().map_err(|e| Error::io("locking", &global, e))?;
        if let Some(limit) = self.limit {
            if size > limit {
                return Ok(None);
            }
            let parts = self.live_parts()?;
            let mut entries = self.entries()?;
            let mut used: u64 = parts + entries.iter().map(|e| e.len).sum::<u64>();
            if used + size > limit {
                entries.sort_by_key(|e| e.used);
                for entry in &entries {
                    if used + size <= limit {
                        break;
                    }
                    if evict(&entry.path) {
                        used -= entry.len;
                    }
                }
                if used + size > limit {
                    return Ok(None);
                }
            }
        }
        let name = format!(
            "{}-{}-{size}.{PART_EXT}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = self.root.join(PARTS).join(name);
        let part = OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io("creating", &path, e))?;
        part.lock().map_err(|e| Error::io("locking", &path, e))?;
        Ok(Some((part, path)))
    }

    /// The bytes that fetches in progress will take (their sizes are in
    /// their names); part files that no live process holds (a killed
    /// fetch's) are removed. Called with the cache's lock held, under which
    /// parts are made and locked, so a part seen unlocked is abandoned.
    fn live_parts(&self) -> Result<u64> {
        let dir = self.root.join(PARTS);
        let mut total = 0;
        for entry in fs::read_dir(&dir).map_err(|e| Error::io("listing", &dir, e))? {
            let Ok(entry) = entry else { continue };
            let path = entry.path();
            let Some(size) = path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.rsplit('-').next())
                .and_then(|s| s.parse::<u64>().ok())
            else {
                continue;
            };
            match File::open(&path) {
                Ok(file) if file.try_lock().is_ok() => {
                    let _ = fs::remove_file(&path);
                }
                Ok(_) => total += size,
                Err(_) => {}
            }
        }
        Ok(total)
    }

    /// Every entry in the cache, with its size and last use.
    fn entries(&self) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        let mut dirs = vec![self.root.join(OBJECTS)];
        while let Some(dir) = dirs.pop() {
            let listing = match fs::read_dir(&dir) {
                Ok(listing) => listing,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io("listing", &dir, e)),
            };
            for entry in listing {
                let Ok(entry) = entry else { continue };
                let Ok(meta) = entry.metadata() else { continue };
                let path = entry.path();
                if meta.is_dir() {
                    dirs.push(path);
                } else if is_entry(&path) {
                    out.push(Entry {
                        len: meta.len(),
                        used: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                        path,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Removes the entries of other versions of the object at `path`
    /// (their ETag or size differs) that no process uses.
    fn remove_other_versions(&self, path: &Path) {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return;
        };
        let Some((key, _)) = name.rsplit_once(SEP) else {
            return;
        };
        let Ok(listing) = fs::read_dir(dir) else {
            return;
        };
        for entry in listing.flatten() {
            let other = entry.path();
            let same_key = other
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.rsplit_once(SEP))
                .is_some_and(|(k, _)| k == key);
            if same_key && other != path && is_entry(&other) {
                evict(&other);
            }
        }
    }
}

/// A cache entry found by [`Cache::entries`].
struct Entry {
    path: PathBuf,
    len: u64,
    used: SystemTime,
}

/// Whether `path` names an entry (not its lock file).
fn is_entry(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains(SEP) && !n.ends_with(&format!(".{LOCK_EXT}")))
}

/// Removes the entry at `path` unless a process uses it; whether it did.
fn evict(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    if file.try_lock().is_err() {
        return false;
    }
    fs::remove_file(path).is_ok()
}

/// The entry at `path` opened and in use, if it is there whole (`size`
/// bytes; another length is removed and fetched again); its use time is
/// now.
fn open_valid(path: &Path, size: u64) -> Result<Option<Cached>> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("opening", path, e)),
    };
    file.lock_shared()
        .map_err(|e| Error::io("locking", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| Error::io("reading", path, e))?
        .len();
    if len != size {
        // Damaged (the cache only renames whole files into place): not
        // served; removed if no other process has it open.
        drop(file);
        evict(path);
        return Ok(None);
    }
    // Evicted between the open and the lock: the file is whole but no
    // longer the entry; fetch it again so that the node keeps one copy.
    let same = fs::metadata(path).is_ok_and(|m| {
        use std::os::unix::fs::MetadataExt;
        file.metadata()
            .is_ok_and(|f| (f.dev(), f.ino()) == (m.dev(), m.ino()))
    });
    if !same {
        return Ok(None);
    }
    // Least recently used first: the use time is the file's mtime.
    let _ = file.set_modified(SystemTime::now());
    Ok(Some(Cached {
        file,
        path: path.to_owned(),
    }))
}

/// `path` with `.ext` added to its file name.
fn with_ext(path: &Path, ext: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(format!(".{ext}"));
    path.with_file_name(name)
}

/// A key's part as a file name: bytes other than letters, digits, `-`,
/// `_` and `.` (and a leading `.`) as `%XX`, so that no name is `.`, `..`
/// or holds the version separator.
fn encode(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for (i, b) in part.bytes().enumerate() {
        let safe = b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (b == b'.' && i > 0);
        if safe {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// FNV-1a, 64 bits: a stable short tag of an ETag.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Writes `bytes` into `file` (what a test's fetch does).
#[cfg(test)]
fn write_all(file: &File, path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    (&*file)
        .write_all(bytes)
        .map_err(|e| Error::io("writing", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(size: u64, etag: &str) -> ObjectId {
        ObjectId {
            size,
            etag: Some(etag.to_owned()),
        }
    }

    fn fill(bytes: &'static [u8]) -> impl FnOnce(&File) -> Result<()> {
        move |file| write_all(file, Path::new("test"), bytes)
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("1048576"), Some(1 << 20));
        assert_eq!(parse_size("500G"), Some(500_000_000_000));
        assert_eq!(parse_size("20GiB"), Some(20 << 30));
        assert_eq!(parse_size(" 1.5 TiB "), Some(3 << 39));
        assert_eq!(parse_size("10 mb"), Some(10_000_000));
        assert_eq!(parse_size("ten"), None);
        assert_eq!(parse_size("5X"), None);
        assert_eq!(parse_size("-5"), None);
    }

    #[test]
    fn entry_names_hold_the_version_and_cannot_escape() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Cache::open(&CacheOptions::new(dir.path())).expect("open");
        let a = cache.entry_path("s3://b/p/data_0.gulp", &id(10, "\"x\""));
        let b = cache.entry_path("s3://b/p/data_0.gulp", &id(10, "\"y\""));
        let c = cache.entry_path("s3://b/p/data_0.gulp", &id(11, "\"x\""));
        assert!(a != b && a != c && b != c);
        assert!(a.starts_with(dir.path().join("objects/b/p")));
        let odd = cache.entry_path("s3://b/../x~y/./.hidden", &id(1, "e"));
        assert!(odd.starts_with(dir.path().join(OBJECTS)));
        let name = odd
            .strip_prefix(dir.path())
            .expect("inside")
            .to_string_lossy()
            .into_owned();
        assert!(!name.contains("/../") && !name.contains("/./"), "{name}");
        assert_eq!(name.matches(SEP).count(), 1, "{name}");
    }

    #[test]
    fn an_object_is_fetched_once_and_then_served() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Cache::open(&CacheOptions::new(dir.path())).expect("open");
        let v1 = id(5, "one");
        let got = cache.get("s3://b/k", &v1, fill(b"hello")).expect("get");
        let got = got.expect("room");
        assert_eq!(fs::read(&got.path).expect("read"), b"hello");
        drop(got);
        let again = cache
            .get("s3://b/k", &v1, |_| panic!("fetched twice"))
            .expect("get")
            .expect("room");
        assert_eq!(fs::read(&again.path).expect("read"), b"hello");
        // Nothing is left in parts/.
        assert_eq!(fs::read_dir(dir.path().join(PARTS)).expect("ls").count(), 0);
    }

    #[test]
    fn a_truncated_entry_is_fetched_again_and_a_new_version_replaces_the_old() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Cache::open(&CacheOptions::new(dir.path())).expect("open");
        let v1 = id(5, "one");
        let path = cache
            .get("s3://b/k", &v1, fill(b"hello"))
            .expect("get")
            .expect("room")
            .path;
        fs::write(&path, b"hel").expect("truncate");
        let got = cache
            .get("s3://b/k", &v1, fill(b"hello"))
            .expect("get")
            .expect("room");
        assert_eq!(fs::read(&got.path).expect("read"), b"hello");
        drop(got);
        let v2 = id(6, "two");
        let new = cache
            .get("s3://b/k", &v2, fill(b"hello!"))
            .expect("get")
            .expect("room");
        assert!(!path.exists(), "the old version is removed");
        assert_eq!(fs::read(&new.path).expect("read"), b"hello!");
    }

    #[test]
    fn a_failed_fetch_leaves_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Cache::open(&CacheOptions::new(dir.path())).expect("open");
        let v1 = id(5, "one");
        let err = cache
            .get("s3://b/k", &v1, |file| {
                write_all(file, Path::new("t"), b"he")?;
                Err(ErrorKind::Invalid {
                    path: "s3://b/k".into(),
                    reason: "connection reset".into(),
                }
                .into())
            })
            .expect_err("fails");
        assert!(err.to_string().contains("connection reset"));
        assert!(!cache.entry_path("s3://b/k", &v1).exists());
        assert_eq!(fs::read_dir(dir.path().join(PARTS)).expect("ls").count(), 0);
    }

    #[test]
    fn eviction_is_least_recently_used_and_spares_entries_in_use() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Cache::open(&CacheOptions::new(dir.path()).with_limit(Some(10))).expect("open");
        let a = cache
            .get("s3://b/a", &id(4, "a"), fill(b"aaaa"))
            .expect("a")
            .expect("room");
        let b = cache
            .get("s3://b/b", &id(4, "b"), fill(b"bbbb"))
            .expect("b")
            .expect("room");
        let (pa, pb) = (a.path.clone(), b.path.clone());
        // a is older than b.
        let old = SystemTime::now() - std::time::Duration::from_secs(60);
        a.file.set_modified(old).expect("age a");
        drop(b);
        // a is in use: b is evicted although it is newer.
        let c = cache
            .get("s3://b/c", &id(4, "c"), fill(b"cccc"))
            .expect("c")
            .expect("room");
        assert!(pa.exists() && !pb.exists() && c.path.exists());
        // Both in use: no room for d, which is then not cached.
        assert!(
            cache
                .get("s3://b/d", &id(4, "d"), fill(b"dddd"))
                .expect("d")
                .is_none()
        );
        drop(a);
        // a is the least recently used now.
        let d = cache
            .get("s3://b/d", &id(4, "d"), fill(b"dddd"))
            .expect("d")
            .expect("room");
        assert!(!pa.exists() && c.path.exists() && d.path.exists());
        // An object larger than the limit is never cached.
        assert!(
            cache
                .get("s3://b/e", &id(11, "e"), fill(b""))
                .expect("e")
                .is_none()
        );
    }

    #[test]
    fn a_killed_fetch_part_is_swept_and_not_counted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Cache::open(&CacheOptions::new(dir.path()).with_limit(Some(10))).expect("open");
        // What a killed process leaves: a part whose lock nobody holds.
        let stale = dir.path().join(PARTS).join("999999-0-8.part");
        fs::write(&stale, b"xx").expect("stale part");
        let a = cache
            .get("s3://b/a", &id(8, "a"), fill(b"aaaaaaaa"))
            .expect("a");
        assert!(a.is_some(), "the stale part's 8 bytes were not counted");
        assert!(!stale.exists());
    }
}
