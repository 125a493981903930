//! The node cache of remote directories: each object of an `s3://`
//! directory is fetched once per node into a local directory that every
//! process of the node shares, and evicted least-recently-used under a size
//! limit. Layout and rules: `docs/object-storage.md`, "The node cache".
//!
//! ```text
//! CACHE/
//!   CACHEDIR.TAG                      marks the directory as a cache (backup tools skip it)
//!   lock                              held while space is reserved or freed
//!   boot                              the kernel's boot id when the cache was last opened
//!   objects/BUCKET/KEY...~SIZE-TAG    an object, whole, complete (renamed into place)
//!   objects/BUCKET/KEY...~SIZE-TAG.lock   held while that object is being fetched
//!   objects/BUCKET/KEY...~SIZE-TAG.ranges/S-E,S-E,...   bytes S..E of it, ..., each with its CRC-32 (renamed into place)
//!   parts/PID-N-SIZE.part             a fetch in progress, locked by its process
//! ```
//!
//! What is kept of a data object, whole or the byte ranges read, is the
//! [`CacheFetch`] policy's choice (`docs/object-storage.md`, "What is
//! fetched").
//!
//! An entry's name holds the object's size and a hash of its ETag, as the
//! directory's listing gave them: another version of the object is another
//! entry, and a file of another length (truncated) is not served but
//! fetched again. Entries appear by `rename` once complete, so nothing
//! half-fetched is ever read. What a power loss (or a kernel crash) may
//! leave of a file that was not synced is never served:
//! - A whole object is not synced when it is fetched: a loader streaming
//!   chunks through a small cache evicts most of them within seconds, and
//!   the kernel never writes those to disk. It is marked not synced (the
//!   owner's execute bit), and synced, then unmarked, when it is opened
//!   again at least [`SYNC_AFTER`] after it was made (the kernel has
//!   usually written it back by then, so the sync costs little). The
//!   `boot` file holds the kernel's boot id: the first opening of the
//!   cache after a reboot removes every entry still marked. Where the
//!   system gives no boot id, a whole object is synced before its rename.
//! - A file of ranges is not synced (a loader keeps thousands a minute),
//!   but it holds the CRC-32 of each range, checked at each read, so that
//!   what a power loss left of it is fetched again, never served.
//!
//! A process using an entry holds a shared lock on it (the kernel drops it
//! if the process dies); eviction takes an exclusive lock first, so an
//! entry in use is never evicted.
// Without object stores (no cargo feature `s3`) nothing is cached; the
// options stay, so that front ends take them alike.
#![cfg_attr(not(feature = "s3"), allow(dead_code))]

use gulp_format::Choice;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use crate::error::{Error, ErrorKind, Result};

/// The variable naming the cache directory of remote directories.
pub const CACHE_DIR_ENV: &str = "GULP_CACHE_DIR";
/// The variable giving the cache's size limit (`500G`, `20GiB`, bytes).
pub const CACHE_LIMIT_ENV: &str = "GULP_CACHE_LIMIT";
/// The variable choosing what is fetched of data objects ([`CacheFetch`]).
pub const CACHE_FETCH_ENV: &str = "GULP_CACHE_FETCH";

const TAG_FILE: &str = "CACHEDIR.TAG";
const TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
# This directory is gulp's node cache of remote gulp directories.\n\
# Everything in it can be fetched again; see docs/object-storage.md.\n";
const LOCK_FILE: &str = "lock";
/// The kernel's boot id at the cache's last opening.
const BOOT_FILE: &str = "boot";
/// Where Linux gives the id of this boot.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";
/// The mode bit that marks a whole object not synced (the owner's execute
/// bit: never set on a cache's files otherwise, and kept by any umask).
const NOT_SYNCED: u32 = 0o100;
/// A whole object not synced is synced when it is opened again this long
/// after it was made: the kernel writes dirty pages back within about
/// 30 s (`vm.dirty_expire_centisecs`), so by then the sync mostly waits for
/// nothing, and an object evicted before (a chunk streamed through a small
/// cache) never reaches the disk.
pub const SYNC_AFTER: std::time::Duration = std::time::Duration::from_secs(30);
const OBJECTS: &str = "objects";
const PARTS: &str = "parts";
const PART_EXT: &str = "part";
const LOCK_EXT: &str = "lock";
/// The directory of an object's cached byte ranges is its entry's name
/// with this extension.
const RANGES_EXT: &str = "ranges";
/// Ranges of one read closer than this share a file in the cache: the
/// padding between consecutive records, not the frames a sampler skips.
const RANGE_GAP: u64 = 4 << 10;
/// Ranges of one read closer than this share a request, as they do without
/// a cache (object_store's coalescing): a request costs a store more than a
/// MiB of bytes does (on Garage, about 1 ms of its CPU against 3–4 ms for a
/// MiB; `docs/object-storage.md`, "What is fetched").
pub const FETCH_GAP: u64 = 1 << 20;
/// A hole of an object shorter than this, beside a range a cache that will
/// hold the object fetches, is fetched in the same request: a request's
/// worth of bytes (about what a request costs a store; the fill behind the
/// epochs fetches cached spans shorter than this again for the same
/// reason). Longer holes wait for the fill: no epoch decodes them.
const WIDEN_GAP: u64 = 256 << 10;
/// An entry used again within this time of its last recorded use keeps
/// that time ([`touch`]).
const TOUCH_AFTER: std::time::Duration = std::time::Duration::from_secs(10);
/// Between an object's key and its version tag in an entry's name; never
/// in an encoded key.
const SEP: char = '~';

/// Which version of an object a directory's listing saw: what a cached
/// copy of it is named by and checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectId {
    /// Its size in bytes.
    pub size: u64,
    /// Its entity tag, where the store gives one.
    pub etag: Option<String>,
}

/// What the node cache fetches of a remote directory's data objects
/// (`docs/object-storage.md`, "What is fetched"). Meta objects are always
/// fetched whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheFetch {
    /// `ranges` while the cache's limit is smaller than the directory's
    /// data objects; when the cache holds them all, a chunk's ranges while
    /// nothing of it is cached, and the whole chunk (the bytes not yet
    /// cached) once it was read before — on its second pass, or in a later
    /// opening.
    #[default]
    Auto,
    /// Each data object whole, on its first read.
    Chunks,
    /// The byte ranges of the frames read, fetched as without a cache
    /// (ranges less than 1 MiB apart in one request); the frames' bytes
    /// kept.
    Ranges,
}

gulp_format::choice!(CacheFetch, "cache_fetch", {
    CacheFetch::Auto => "auto",
    CacheFetch::Chunks => "chunks",
    CacheFetch::Ranges => "ranges",
});

impl std::fmt::Display for CacheFetch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The node cache a front end asked for ([`CacheOptions::resolve`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CacheChoice {
    /// `GULP_CACHE_DIR` / `GULP_CACHE_LIMIT`, if set.
    #[default]
    FromEnv,
    /// No cache.
    Off,
    /// This one.
    On(CacheOptions),
}

/// Where remote directories are cached on this node, how much it may hold
/// and what it fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheOptions {
    /// The cache directory (made if missing); processes that give the same
    /// directory share it.
    pub dir: PathBuf,
    /// The most bytes of objects it keeps; `None` for no limit. Objects in
    /// use are never evicted: when they alone fill the limit, reads go to
    /// the store without caching.
    pub limit: Option<u64>,
    /// What is fetched of data objects: whole, or the ranges read.
    pub fetch: CacheFetch,
}

impl CacheOptions {
    /// The node cache of a front end's options, in one rule for the command
    /// line and Python: `off` is no cache; a directory is that cache (with
    /// the limit given, and the fetch policy given or `GULP_CACHE_FETCH`'s);
    /// a limit or a policy alone applies to `GULP_CACHE_DIR`'s cache (an
    /// error without one); nothing given leaves it to the environment.
    pub fn resolve(
        off: bool,
        dir: Option<PathBuf>,
        limit: Option<u64>,
        fetch: Option<CacheFetch>,
    ) -> Result<CacheChoice> {
        if off {
            return Ok(CacheChoice::Off);
        }
        let fetch_or_env = || match fetch {
            Some(fetch) => Ok(fetch),
            None => CacheOptions::fetch_from_env(),
        };
        match dir {
            Some(dir) => Ok(CacheChoice::On(
                CacheOptions::new(dir)
                    .with_limit(limit)
                    .with_fetch(fetch_or_env()?),
            )),
            None if limit.is_none() && fetch.is_none() => Ok(CacheChoice::FromEnv),
            None => match CacheOptions::from_env()? {
                Some(env) => {
                    let limit = limit.or(env.limit);
                    Ok(CacheChoice::On(
                        env.with_limit(limit).with_fetch(fetch_or_env()?),
                    ))
                }
                None => Err(ErrorKind::Invalid {
                    path: PathBuf::from("GULP_CACHE_DIR"),
                    reason: "a cache limit or fetch policy needs a cache directory (or \
                             GULP_CACHE_DIR)"
                        .into(),
                }
                .into()),
            },
        }
    }

    /// A cache in `dir` without a limit.
    pub fn new(dir: impl Into<PathBuf>) -> CacheOptions {
        CacheOptions {
            dir: dir.into(),
            limit: None,
            fetch: CacheFetch::Auto,
        }
    }

    /// The same with a size limit.
    pub fn with_limit(self, limit: Option<u64>) -> CacheOptions {
        CacheOptions { limit, ..self }
    }

    /// The same with a fetch policy.
    pub fn with_fetch(self, fetch: CacheFetch) -> CacheOptions {
        CacheOptions { fetch, ..self }
    }

    /// The fetch policy `GULP_CACHE_FETCH` names (`auto` when unset).
    pub fn fetch_from_env() -> Result<CacheFetch> {
        match std::env::var(CACHE_FETCH_ENV) {
            Ok(text) if !text.trim().is_empty() => {
                text.trim()
                    .parse()
                    .map_err(|e: gulp_format::UnknownChoice| {
                        ErrorKind::Invalid {
                            path: PathBuf::from(CACHE_FETCH_ENV),
                            reason: e.to_string(),
                        }
                        .into()
                    })
            }
            _ => Ok(CacheFetch::Auto),
        }
    }

    /// The cache that `GULP_CACHE_DIR`, `GULP_CACHE_LIMIT` and
    /// `GULP_CACHE_FETCH` name, `None` when `GULP_CACHE_DIR` is unset or
    /// empty.
    pub fn from_env() -> Result<Option<CacheOptions>> {
        let Some(dir) = std::env::var_os(CACHE_DIR_ENV).filter(|d| !d.is_empty()) else {
            return Ok(None);
        };
        let limit = match std::env::var(CACHE_LIMIT_ENV) {
            Ok(text) if !text.trim().is_empty() => {
                Some(parse_byte_size(&text).ok_or_else(|| ErrorKind::Invalid {
                    path: PathBuf::from(&dir),
                    reason: format!(
                        "{CACHE_LIMIT_ENV}={text:?} is not a size (e.g. 500G, 20GiB, 1048576)"
                    ),
                })?)
            }
            _ => None,
        };
        Ok(Some(
            CacheOptions::new(dir)
                .with_limit(limit)
                .with_fetch(CacheOptions::fetch_from_env()?),
        ))
    }
}

/// A size in bytes: a number with an optional unit, `K`/`M`/`G`/`T` (powers
/// of 1000, also `KB`...) or `KiB`/`MiB`/`GiB`/`TiB` (powers of 1024), e.g.
/// `500G`, `1.5TiB`, `1048576`.
pub fn parse_byte_size(text: &str) -> Option<u64> {
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
pub struct Cached {
    /// The entry's file (read from it, or map it).
    pub file: File,
    /// Its path in the cache.
    pub path: PathBuf,
}

/// A node cache (see the module's documentation).
#[derive(Debug)]
pub struct Cache {
    root: PathBuf,
    limit: Option<u64>,
    fetch: CacheFetch,
    /// Whether whole objects are synced when they are opened again rather
    /// than when fetched (the system gives a boot id).
    sync_later: bool,
    /// How old an object not synced is when an opening syncs it.
    sync_after: std::time::Duration,
}

impl Cache {
    /// Opens (making it if missing) the cache `options` name.
    pub fn open(options: &CacheOptions) -> Result<Cache> {
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
        let mut cache = Cache {
            root,
            limit: options.limit,
            fetch: options.fetch,
            sync_later: false,
            sync_after: SYNC_AFTER,
        };
        if let Some(boot) = boot_id() {
            cache.after_reboot(&boot)?;
            cache.sync_later = true;
        }
        Ok(cache)
    }

    /// [`open_valid`] with this cache's time to sync after.
    fn open_valid(&self, path: &Path, size: u64) -> Result<Option<Cached>> {
        open_valid(path, size, self.sync_after)
    }

    /// The cache's lock file (which holds the ledger), opened and locked:
    /// held while space is reserved or freed, or the cache swept.
    fn lock(&self) -> Result<File> {
        let path = self.root.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io("opening", &path, e))?;
        lock.lock().map_err(|e| Error::io("locking", &path, e))?;
        Ok(lock)
    }

    /// Removes, on the first opening of the cache since the kernel booted
    /// as `boot`, every whole object still marked not synced: what a crash
    /// left of it may not be what was fetched. Then records `boot`.
    fn after_reboot(&self, boot: &str) -> Result<()> {
        let boot_file = self.root.join(BOOT_FILE);
        let recorded = |path: &Path| fs::read_to_string(path).ok();
        if recorded(&boot_file).as_deref() == Some(boot) {
            return Ok(());
        }
        let _lock = self.lock()?;
        let last = recorded(&boot_file);
        if last.as_deref() == Some(boot) {
            return Ok(());
        }
        // A cache without a boot file was made by a gulp that synced every
        // object before its rename: nothing in it is marked.
        if last.is_some() {
            use std::os::unix::fs::PermissionsExt;
            for entry in self.entries()? {
                let marked = fs::metadata(&entry.path)
                    .is_ok_and(|m| m.permissions().mode() & NOT_SYNCED != 0);
                if marked {
                    evict(&entry.path);
                }
            }
        }
        // Synced and renamed into place, so that a crash now leaves the
        // old id (and the sweep is done again) or the new one.
        let part = with_ext(&boot_file, PART_EXT);
        let written = File::create(&part)
            .and_then(|mut f| f.write_all(boot.as_bytes()).and_then(|()| f.sync_all()))
            .and_then(|()| fs::rename(&part, &boot_file));
        written.map_err(|e| Error::io("writing", &boot_file, e))
    }

    /// What is fetched of data objects.
    pub fn fetch(&self) -> CacheFetch {
        self.fetch
    }

    /// The cache directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The size limit, if any.
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// Where the object `url` of this size and ETag is kept.
    pub fn entry_path(&self, url: &str, id: &ObjectId) -> PathBuf {
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
    pub fn get(
        &self,
        url: &str,
        id: &ObjectId,
        fetch: impl FnOnce(&File) -> Result<()>,
    ) -> Result<Option<Cached>> {
        let path = self.entry_path(url, id);
        if let Some(cached) = self.open_valid(&path, id.size)? {
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
        if let Some(cached) = self.open_valid(&path, id.size)? {
            return Ok(Some(cached));
        }
        let Some((part, part_path)) = self.reserve(id.size)? else {
            return Ok(None);
        };
        let fetched = fetch(&part).and_then(|()| {
            if self.sync_later {
                // Marked before it is renamed into place, so that an entry
                // is never seen unmarked before it is synced.
                set_mode_bits(&part, NOT_SYNCED, true)
                    .map_err(|e| Error::io("marking", &part_path, e))?;
            } else {
                part.sync_all()
                    .map_err(|e| Error::io("syncing", &part_path, e))?;
            }
            fs::rename(&part_path, &path).map_err(|e| Error::io("renaming", &part_path, e))?;
            // The rename is durable once the directory is synced (an entry
            // that a crash loses is fetched again).
            if !self.sync_later
                && let Ok(dir) = File::open(&parent)
            {
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
        // The object is whole now: its ranges are kept twice.
        remove_ranges(&with_ext(&path, RANGES_EXT));
        Ok(Some(Cached { file: part, path }))
    }

    /// The byte ranges of the object `url` of this version kept in the
    /// cache (an empty store when none is).
    pub fn ranges(self: &std::sync::Arc<Self>, url: &str, id: &ObjectId) -> RangeStore {
        let entry = self.entry_path(url, id);
        RangeStore {
            cache: std::sync::Arc::clone(self),
            dir: with_ext(&entry, RANGES_EXT),
            lock: with_ext(&entry, LOCK_EXT),
            whole: entry,
            size: id.size,
            known: Mutex::new(Vec::new()),
            keep_gaps: false,
        }
    }

    /// A new part file for a fetch of `size` bytes, holding an exclusive
    /// lock, once the cache has room for it; `None` if it cannot have.
    fn reserve(&self, size: u64) -> Result<Option<(File, PathBuf)>> {
        Ok(self.reserve_all(&[size])?.and_then(|mut parts| parts.pop()))
    }

    /// New part files for fetches of `sizes` bytes, each holding an
    /// exclusive lock, once the cache has room for them all (evicting
    /// entries least recently used first, never one in use); `None` if it
    /// cannot have.
    ///
    /// The lock file holds a ledger: the bytes the cache held at its last
    /// count plus those reserved since, by every process of the node. It
    /// only overestimates (what was removed since is still in it), so the
    /// cache is walked and counted only when the ledger says the limit is
    /// near, and then evicted down to 90 % of it, so that a cache kept full
    /// by a stream of small ranges is not walked for each of them.
    fn reserve_all(&self, sizes: &[u64]) -> Result<Option<Vec<(File, PathBuf)>>> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let lock = self.lock()?;
        let total: u64 = sizes.iter().sum();
        if let Some(limit) = self.limit {
            if total > limit {
                return Ok(None);
            }
            let mut ledger = [0u8; 8];
            let known = lock.read_exact_at(&mut ledger, 0).is_ok();
            let mut used = u64::from_le_bytes(ledger);
            if !known || used.saturating_add(total) > limit {
                let parts = self.live_parts()?;
                let mut entries = self.entries()?;
                used = parts + entries.iter().map(|e| e.len).sum::<u64>();
                let low = limit - limit / 10;
                if used + total > low {
                    entries.sort_by_key(|e| e.used);
                    for entry in &entries {
                        if used + total <= low {
                            break;
                        }
                        if evict(&entry.path) {
                            used -= entry.len;
                        }
                    }
                }
                if used + total > limit {
                    let _ = lock.write_all_at(&used.to_le_bytes(), 0);
                    return Ok(None);
                }
            }
            // Best effort: a ledger that is not written is counted again.
            let _ = lock.write_all_at(&(used + total).to_le_bytes(), 0);
        }
        let mut parts = Vec::with_capacity(sizes.len());
        for &size in sizes {
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
            parts.push((part, path));
        }
        Ok(Some(parts))
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
            if !same_key || other == path {
                continue;
            }
            if other.extension().is_some_and(|e| e == RANGES_EXT) {
                if other != with_ext(path, RANGES_EXT) {
                    remove_ranges(&other);
                }
            } else if is_entry(&other) {
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

/// Whether `path` names an entry (a whole object, or a range of one; not
/// a lock file).
fn is_entry(path: &Path) -> bool {
    let in_ranges = path
        .parent()
        .and_then(Path::extension)
        .is_some_and(|e| e == RANGES_EXT);
    in_ranges
        || path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.contains(SEP) && !n.ends_with(&format!(".{LOCK_EXT}")))
}

/// Removes the ranges kept in `dir` that no process uses, and `dir` once
/// empty.
fn remove_ranges(dir: &Path) {
    let Ok(listing) = fs::read_dir(dir) else {
        return;
    };
    for entry in listing.flatten() {
        evict(&entry.path());
    }
    let _ = fs::remove_dir(dir);
}

/// The bytes of `range` among the fetched `spans` (in increasing order,
/// `bytes` theirs); `None` if no span holds it whole.
fn slice_of<'a, B: AsRef<[u8]>>(
    spans: &[Range<u64>],
    bytes: &'a [B],
    range: &Range<u64>,
) -> Option<&'a [u8]> {
    let at = spans.partition_point(|s| s.end < range.end);
    let (span, got) = (spans.get(at)?, bytes.get(at)?);
    if span.start > range.start || range.end > span.end {
        return None;
    }
    let from = usize::try_from(range.start - span.start).ok()?;
    let to = usize::try_from(range.end - span.start).ok()?;
    got.as_ref().get(from..to)
}

/// `ranges` merged where they overlap or lie less than `gap` bytes apart,
/// in increasing order.
pub fn coalesce(ranges: &[Range<u64>], gap: u64) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| r.start < r.end).cloned().collect();
    sorted.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(gap) => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// The byte ranges of one object (one version) kept in the node cache:
/// each fetched span a file `START-END` in the object's `.ranges`
/// directory, written under a temporary name and renamed into place as
/// whole objects are, evicted under the same limit and rules. Fetches of
/// one object are serialised by its lock file (the one a whole fetch
/// takes), so that the processes of a node fetch each byte once.
#[derive(Debug)]
pub struct RangeStore {
    cache: std::sync::Arc<Cache>,
    /// The directory of the spans.
    dir: PathBuf,
    /// The object's lock file.
    lock: PathBuf,
    /// The object's whole entry.
    whole: PathBuf,
    /// The object's size.
    size: u64,
    /// The spans this process knows of, in increasing order of start; read
    /// again from the directory when a range is missing from them.
    known: Mutex<Vec<Span>>,
    /// Whether the bytes fetched between the ranges read are kept too
    /// ([`keeping_gaps`](Self::keeping_gaps)).
    keep_gaps: bool,
}

/// A byte range of an object kept in the node cache: where its bytes are.
///
/// The ranges of one fetch (a clip's frames) share a file, named by their
/// ranges in increasing order (`S-E,S-E,...`, at most [`SPANS_PER_FILE`]),
/// that holds the CRC-32 of each range (4 bytes, little-endian) and then
/// their bytes in order: one file made, not one per frame.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Span {
    range: Range<u64>,
    /// The name of its file.
    file: std::sync::Arc<str>,
    /// The offset of its CRC-32 in the file, and of its bytes.
    crc_at: u64,
    bytes_at: u64,
    /// The file's length.
    file_len: u64,
}

/// At most this many ranges share a file (its name stays far below 255
/// bytes).
const SPANS_PER_FILE: usize = 8;

impl Span {
    /// The name of the file of `ranges`.
    fn file_name(ranges: &[Range<u64>]) -> String {
        let names: Vec<String> = ranges
            .iter()
            .map(|r| format!("{}-{}", r.start, r.end))
            .collect();
        names.join(",")
    }

    /// The ranges the file `name` holds; `None` for a name that is not a
    /// file of ranges.
    fn parse(name: &str) -> Option<Vec<Span>> {
        let mut ranges = Vec::new();
        for part in name.split(',') {
            let (start, end) = part.split_once('-')?;
            let (start, end): (u64, u64) = (start.parse().ok()?, end.parse().ok()?);
            if start >= end || ranges.last().is_some_and(|r: &Range<u64>| r.end > start) {
                return None;
            }
            ranges.push(start..end);
        }
        if ranges.len() > SPANS_PER_FILE {
            return None;
        }
        let file: std::sync::Arc<str> = name.into();
        let mut bytes_at = 4 * ranges.len() as u64;
        let file_len = bytes_at + ranges.iter().map(|r| r.end - r.start).sum::<u64>();
        let spans = ranges
            .into_iter()
            .enumerate()
            .map(|(k, range)| {
                let span = Span {
                    file: std::sync::Arc::clone(&file),
                    crc_at: 4 * k as u64,
                    bytes_at,
                    file_len,
                    range,
                };
                bytes_at += span.range.end - span.range.start;
                span
            })
            .collect();
        Some(spans)
    }
}

impl RangeStore {
    /// Keeps in the cache all the bytes of each request (`true`: what a
    /// cache that will hold the object whole wants, so that the object is
    /// made whole later from few, large holes) or only those of the ranges
    /// read (`false`, the default: a cache smaller than the data).
    pub fn keeping_gaps(mut self, keep: bool) -> RangeStore {
        self.keep_gaps = keep;
        self
    }

    /// Whether anything of the object is in the cache: the object whole, or
    /// some of its ranges.
    pub fn any_cached(&self) -> bool {
        self.whole.exists()
            || fs::read_dir(&self.dir).is_ok_and(|mut listing| listing.next().is_some())
    }

    /// Whether the object is in the cache whole.
    pub fn whole_cached(&self) -> bool {
        fs::metadata(&self.whole).is_ok_and(|m| m.len() == self.size)
    }

    /// The bytes of `ranges`, in order: from the cache where it has them,
    /// the others fetched by `fetch` (given the spans to fetch: the
    /// missing ranges coalesced, it returns their bytes in order) and kept.
    pub fn read<B: AsRef<[u8]>>(
        &self,
        ranges: &[Range<u64>],
        fetch: impl FnOnce(&[Range<u64>]) -> Result<Vec<B>>,
    ) -> Result<Vec<Vec<u8>>> {
        let mut out: Vec<Option<Vec<u8>>> = vec![None; ranges.len()];
        self.get(ranges, &mut out, Some(fetch))?;
        out.into_iter()
            .zip(ranges)
            .map(|(got, r)| {
                got.ok_or_else(|| {
                    ErrorKind::Invalid {
                        path: self.whole.clone(),
                        reason: format!("bytes {}..{} were not fetched", r.start, r.end),
                    }
                    .into()
                })
            })
            .collect()
    }

    /// Fetches into the cache those of `ranges` it does not hold (what a
    /// loader does ahead of its decoding threads); the number of bytes
    /// fetched.
    pub fn fill<B: AsRef<[u8]>>(
        &self,
        ranges: &[Range<u64>],
        fetch: impl FnOnce(&[Range<u64>]) -> Result<Vec<B>>,
    ) -> Result<u64> {
        self.get(ranges, &mut [], Some(fetch))
    }

    /// Serves `ranges` into `out` (or, when `out` is empty, only checks
    /// that the cache holds them); fetches what is missing with `fetch`.
    /// Returns the bytes fetched.
    fn get<B: AsRef<[u8]>>(
        &self,
        ranges: &[Range<u64>],
        out: &mut [Option<Vec<u8>>],
        fetch: Option<impl FnOnce(&[Range<u64>]) -> Result<Vec<B>>>,
    ) -> Result<u64> {
        let read = !out.is_empty();
        let mut missing = self.serve(ranges, out, read);
        if missing.is_empty() {
            return Ok(0);
        }
        self.refresh();
        missing = self.serve(ranges, out, read);
        if missing.is_empty() {
            return Ok(0);
        }
        // One fetch of an object at a time on the node: another process
        // (or thread) may be fetching these very ranges.
        let lock = in_dir(self.lock.parent(), || {
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&self.lock)
        })
        .map_err(|e| Error::io("opening", &self.lock, e))?;
        lock.lock()
            .map_err(|e| Error::io("locking", &self.lock, e))?;
        self.refresh();
        missing = self.serve(ranges, out, read);
        if missing.is_empty() {
            return Ok(0);
        }
        // Another process may have fetched the object whole meanwhile.
        if let Some(whole) = open_valid(&self.whole, self.size, SYNC_AFTER)? {
            for k in missing {
                if read {
                    let r = &ranges[k];
                    let mut buf = vec![0; usize::try_from(r.end - r.start).unwrap_or(0)];
                    whole
                        .file
                        .read_exact_at(&mut buf, r.start)
                        .map_err(|e| Error::io("reading", &self.whole, e))?;
                    out[k] = Some(buf);
                }
            }
            return Ok(0);
        }
        let wanted: Vec<Range<u64>> = missing.iter().map(|&k| ranges[k].clone()).collect();
        let mut spans = coalesce(&wanted, FETCH_GAP);
        if self.keep_gaps {
            spans = self.widen(spans);
        }
        let Some(fetch) = fetch else { return Ok(0) };
        let bytes = fetch(&spans)?;
        let fetched = bytes.iter().map(|b| b.as_ref().len() as u64).sum();
        if self.keep_gaps {
            self.keep(&spans, &bytes)?;
        } else {
            let kept = coalesce(&wanted, RANGE_GAP);
            let slices: Vec<&[u8]> = kept
                .iter()
                .filter_map(|r| slice_of(&spans, &bytes, r))
                .collect();
            if slices.len() == kept.len() {
                self.keep(&kept, &slices)?;
            }
        }
        if read {
            for k in missing {
                out[k] = slice_of(&spans, &bytes, &ranges[k]).map(<[u8]>::to_vec);
            }
        }
        Ok(fetched)
    }

    /// `spans` (to be fetched, in increasing order) each stretched over the
    /// hole on either side when it is less than [`WIDEN_GAP`] bytes long:
    /// up to the end of the cached span before it (or the object's start)
    /// and to the start of the one after it (or the object's end). For a
    /// cache that will hold the object whole: the hole is fetched in the
    /// same request rather than in one of its own later, so that an object
    /// read through once is nearly whole, for the same bytes.
    fn widen(&self, spans: Vec<Range<u64>>) -> Vec<Range<u64>> {
        let have = coalesce(&self.spans_known(), 0);
        let widened: Vec<Range<u64>> = spans
            .into_iter()
            .map(|s| {
                let at = have.partition_point(|h| h.end <= s.start);
                let before = at.checked_sub(1).map_or(0, |k| have[k].end);
                let after = have[at..]
                    .iter()
                    .find(|h| h.start >= s.end)
                    .map_or(self.size, |h| h.start);
                // `before` ends at or before `s`, `after` starts at or after
                // its end (by how they are found).
                let start = if s.start - before < WIDEN_GAP {
                    before
                } else {
                    s.start
                };
                let end = if after - s.end < WIDEN_GAP {
                    after
                } else {
                    s.end
                };
                start..end
            })
            .collect();
        coalesce(&widened, 0)
    }

    /// The ranges of the spans this process knows of.
    fn spans_known(&self) -> Vec<Range<u64>> {
        let known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        known.iter().map(|s| s.range.clone()).collect()
    }

    /// Writes the fetched `spans` into the cache, if it has room for them.
    fn keep<B: AsRef<[u8]>>(&self, spans: &[Range<u64>], bytes: &[B]) -> Result<()> {
        let sizes: Vec<u64> = bytes
            .chunks(SPANS_PER_FILE)
            .map(|got| got.iter().map(|b| 4 + b.as_ref().len() as u64).sum())
            .collect();
        let Some(parts) = self.cache.reserve_all(&sizes)? else {
            return Ok(());
        };
        let mut kept = Vec::with_capacity(spans.len());
        let groups = spans
            .chunks(SPANS_PER_FILE)
            .zip(bytes.chunks(SPANS_PER_FILE));
        for ((ranges, got), (mut part, part_path)) in groups.zip(parts) {
            let name = Span::file_name(ranges);
            let crcs: Vec<u8> = got
                .iter()
                .flat_map(|b| crc32fast::hash(b.as_ref()).to_le_bytes())
                .collect();
            // Not synced: the CRC-32s are checked at each read. The part is
            // new (at offset 0): its CRC-32s, then the bytes, as they came.
            let path = self.dir.join(&name);
            let done = std::iter::once(&crcs[..])
                .chain(got.iter().map(AsRef::as_ref))
                .try_for_each(|b| part.write_all(b))
                .and_then(|()| in_dir(Some(&self.dir), || fs::rename(&part_path, &path)));
            match done {
                Ok(()) => kept.extend(Span::parse(&name).unwrap_or_default()),
                Err(e) => {
                    let _ = fs::remove_file(&part_path);
                    return Err(Error::io("writing", &part_path, e));
                }
            }
        }
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        known.extend(kept);
        known.sort_by_key(|s| s.range.start);
        Ok(())
    }

    /// Reads the spans in the directory again.
    fn refresh(&self) {
        let mut spans: Vec<Span> = fs::read_dir(&self.dir)
            .map(|listing| {
                listing
                    .flatten()
                    .filter_map(|e| Span::parse(e.file_name().to_str()?))
                    .flatten()
                    .filter(|s| s.range.end <= self.size)
                    .collect()
            })
            .unwrap_or_default();
        spans.sort_by_key(|s| s.range.start);
        *self.known.lock().unwrap_or_else(PoisonError::into_inner) = spans;
    }

    /// The span known to hold `r`, if any.
    fn span_of(&self, r: &Range<u64>) -> Option<Span> {
        let known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        let end = known.partition_point(|s| s.range.start <= r.start);
        known[..end]
            .iter()
            .rev()
            .take(8)
            .find(|s| r.end <= s.range.end)
            .cloned()
    }

    /// Serves what the known spans hold of `ranges` into `out` (when
    /// `read`; else only checks they are known); the indices of the
    /// others. A span whose file is gone or has another length is
    /// forgotten (and removed).
    fn serve(&self, ranges: &[Range<u64>], out: &mut [Option<Vec<u8>>], read: bool) -> Vec<usize> {
        let mut missing = Vec::new();
        let mut open = None;
        // The span read last, checked: a clip's frames often share one.
        let mut last = None;
        for (k, r) in ranges.iter().enumerate() {
            if read && out[k].is_some() {
                continue;
            }
            let got = self.span_of(r).and_then(|span| {
                if !read {
                    return Some(Vec::new());
                }
                let got = self.read_span(&span, r, &mut open, &mut last);
                if got.is_none() {
                    self.known
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .retain(|s| s.file != span.file);
                }
                got
            });
            match got {
                Some(bytes) if read => out[k] = Some(bytes),
                Some(_) => {}
                None => missing.push(k),
            }
        }
        missing
    }

    /// Bytes `r` from the file of `span`, `None` if it is not there whole
    /// and right (then it is removed). A span is read and checked whole
    /// (its CRC-32 covers all of it), so the last one read is kept in
    /// `last` for the next range that lies in it.
    fn read_span(
        &self,
        span: &Span,
        r: &Range<u64>,
        open: &mut Option<(std::sync::Arc<str>, File)>,
        last: &mut Option<(Span, Vec<u8>)>,
    ) -> Option<Vec<u8>> {
        if last.as_ref().is_none_or(|(held, _)| held != span) {
            *last = None;
            *last = Some((span.clone(), self.span_bytes(span, open)?));
        }
        let (_, bytes) = last.as_ref()?;
        let from = usize::try_from(r.start - span.range.start).ok()?;
        let to = usize::try_from(r.end - span.range.start).ok()?;
        bytes.get(from..to).map(<[u8]>::to_vec)
    }

    /// The bytes of `span`, checked against its file's length and the
    /// CRC-32 it holds; `None` (and the file removed) if they are not right.
    /// `open` is the file last read (the ranges of a clip share one): kept
    /// open for the next range.
    fn span_bytes(
        &self,
        span: &Span,
        open: &mut Option<(std::sync::Arc<str>, File)>,
    ) -> Option<Vec<u8>> {
        let path = self.dir.join(&*span.file);
        if open.as_ref().is_none_or(|(name, _)| *name != span.file) {
            *open = None;
            let file = File::open(&path).ok()?;
            let meta = file.metadata().ok()?;
            if meta.len() != span.file_len {
                drop(file);
                evict(&path);
                return None;
            }
            touch(&file, &meta);
            *open = Some((std::sync::Arc::clone(&span.file), file));
        }
        let (_, file) = open.as_ref()?;
        let mut buf = vec![0; usize::try_from(span.range.end - span.range.start).ok()?];
        let mut crc = [0u8; 4];
        if file.read_exact_at(&mut crc, span.crc_at).is_err()
            || file.read_exact_at(&mut buf, span.bytes_at).is_err()
            || crc32fast::hash(&buf) != u32::from_le_bytes(crc)
        {
            *open = None;
            evict(&path);
            return None;
        }
        Some(buf)
    }

    /// The byte ranges in the cache.
    #[cfg(test)]
    fn spans(&self) -> Vec<Range<u64>> {
        self.refresh();
        self.spans_known()
    }

    /// Gives each range in the cache and its bytes (checked) to `each`
    /// (for a whole fetch that starts from them); the ranges given.
    pub fn each_span(
        &self,
        mut each: impl FnMut(&Range<u64>, &[u8]) -> Result<()>,
    ) -> Result<Vec<Range<u64>>> {
        self.refresh();
        let known = self
            .known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut given: Vec<Range<u64>> = Vec::with_capacity(known.len());
        let mut open = None;
        for span in known {
            if given.last().is_some_and(|g| g.end > span.range.start) {
                continue;
            }
            if let Some(bytes) = self.span_bytes(&span, &mut open) {
                each(&span.range, &bytes)?;
                given.push(span.range);
            }
        }
        Ok(given)
    }
}

/// `op` (a file made in `dir`), and once more after making `dir` if it
/// failed for want of it: the cache's directories are made by their first
/// file (or again, if they were removed since), not checked before each.
fn in_dir<T>(dir: Option<&Path>, op: impl Fn() -> std::io::Result<T>) -> std::io::Result<T> {
    match (op(), dir) {
        (Err(e), Some(dir)) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(dir)?;
            op()
        }
        (done, _) => done,
    }
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
/// now. One marked not synced is synced (then unmarked) if it was made at
/// least `sync_after` ago.
fn open_valid(path: &Path, size: u64, sync_after: std::time::Duration) -> Result<Option<Cached>> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("opening", path, e)),
    };
    file.lock_shared()
        .map_err(|e| Error::io("locking", path, e))?;
    let meta = file.metadata().map_err(|e| Error::io("reading", path, e))?;
    if meta.len() != size {
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
    sync_if_due(&file, &meta, sync_after);
    touch(&file, &meta);
    Ok(Some(Cached {
        file,
        path: path.to_owned(),
    }))
}

/// Syncs the entry `file` if it is marked not synced and was made at least
/// `after` ago (or when it was made is not known), then unmarks it: synced
/// first, so that a mark lost with a crash is lost only after its data is
/// on the disk. Best effort: an entry left marked is removed after a reboot.
fn sync_if_due(file: &File, meta: &fs::Metadata, after: std::time::Duration) {
    use std::os::unix::fs::PermissionsExt;
    if meta.permissions().mode() & NOT_SYNCED == 0 {
        return;
    }
    let young = meta
        .created()
        .ok()
        .and_then(|made| SystemTime::now().duration_since(made).ok())
        .is_some_and(|age| age < after);
    if !young && file.sync_all().is_ok() {
        let _ = set_mode_bits(file, NOT_SYNCED, false);
    }
}

/// Sets (`on`) or clears the mode bits `bits` of `file`.
fn set_mode_bits(file: &File, bits: u32, on: bool) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut permissions = file.metadata()?.permissions();
    let mode = permissions.mode();
    permissions.set_mode(if on { mode | bits } else { mode & !bits });
    file.set_permissions(permissions)
}

/// The id of this boot of the kernel; `None` where the system gives none.
fn boot_id() -> Option<String> {
    static ID: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let id = fs::read_to_string(BOOT_ID).ok()?;
        Some(id.trim().to_owned()).filter(|id| !id.is_empty())
    })
    .clone()
}

/// Marks an entry used now (least recently used first: the use time is
/// the file's mtime). An mtime of the last ten seconds is left as it is: it
/// orders the entry as well, without a write to the filesystem's journal
/// for each frame a loader reads.
fn touch(file: &File, meta: &fs::Metadata) {
    let recent = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_some_and(|age| age < TOUCH_AFTER);
    if !recent {
        let _ = file.set_modified(SystemTime::now());
    }
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
    (&*file)
        .write_all(bytes)
        .map_err(|e| Error::io("writing", path, e))
}

#[cfg(test)]
// A list of one byte range is what these tests mean, not a list of numbers.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    /// Bytes `r` of `object`.
    fn part<'a>(object: &'a [u8], r: &Range<u64>) -> &'a [u8] {
        let start = usize::try_from(r.start).expect("small");
        let end = usize::try_from(r.end).expect("small");
        &object[start..end]
    }

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
        assert_eq!(parse_byte_size("1048576"), Some(1 << 20));
        assert_eq!(parse_byte_size("500G"), Some(500_000_000_000));
        assert_eq!(parse_byte_size("20GiB"), Some(20 << 30));
        assert_eq!(parse_byte_size(" 1.5 TiB "), Some(3 << 39));
        assert_eq!(parse_byte_size("10 mb"), Some(10_000_000));
        assert_eq!(parse_byte_size("ten"), None);
        assert_eq!(parse_byte_size("5X"), None);
        assert_eq!(parse_byte_size("-5"), None);
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

    fn marked(path: &Path) -> bool {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path).expect("stat").permissions().mode() & NOT_SYNCED != 0
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_whole_object_is_synced_when_used_again_and_dropped_after_a_reboot_if_not() {
        assert!(boot_id().is_some(), "Linux gives a boot id");
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cache = Cache::open(&CacheOptions::new(dir.path())).expect("open");
        assert_eq!(
            fs::read_to_string(dir.path().join(BOOT_FILE)).ok(),
            boot_id()
        );
        let (v1, v2) = (id(5, "one"), id(3, "two"));
        let kept = cache
            .get("s3://b/kept", &v1, fill(b"hello"))
            .expect("get")
            .expect("room")
            .path;
        let lost = cache
            .get("s3://b/lost", &v2, fill(b"bye"))
            .expect("get")
            .expect("room")
            .path;
        assert!(marked(&kept) && marked(&lost), "fetched, not synced");
        // Used again soon after: still not synced.
        drop(cache.get("s3://b/kept", &v1, |_| panic!("fetched twice")));
        assert!(marked(&kept));
        // Used again once old enough: synced and unmarked.
        cache.sync_after = std::time::Duration::ZERO;
        let again = cache
            .get("s3://b/kept", &v1, |_| panic!("fetched twice"))
            .expect("get")
            .expect("room");
        assert!(!marked(&kept) && marked(&lost));
        drop(again);
        // Opened after the same boot: nothing removed.
        drop(Cache::open(&CacheOptions::new(dir.path())).expect("open"));
        assert!(kept.exists() && lost.exists());
        // After a reboot, the first opening removes what was not synced.
        fs::write(dir.path().join(BOOT_FILE), "another boot").expect("write");
        let cache = Cache::open(&CacheOptions::new(dir.path())).expect("open");
        assert!(kept.exists() && !lost.exists());
        let served = cache
            .get("s3://b/kept", &v1, |_| panic!("fetched twice"))
            .expect("get")
            .expect("room");
        assert_eq!(fs::read(&served.path).expect("read"), b"hello");
        let fetched = cache
            .get("s3://b/lost", &v2, fill(b"bye"))
            .expect("get")
            .expect("room");
        assert_eq!(fs::read(&fetched.path).expect("read"), b"bye");
        assert_eq!(
            fs::read_to_string(dir.path().join(BOOT_FILE)).ok(),
            boot_id()
        );
    }

    #[test]
    fn without_a_boot_id_a_whole_object_is_synced_before_its_rename() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cache = Cache::open(&CacheOptions::new(dir.path())).expect("open");
        cache.sync_later = false;
        let path = cache
            .get("s3://b/k", &id(5, "one"), fill(b"hello"))
            .expect("get")
            .expect("room")
            .path;
        assert!(!marked(&path));
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

    /// A fetch from `object` that records the spans it was asked for.
    fn from<'a>(
        object: &'a [u8],
        asked: &'a Mutex<Vec<Range<u64>>>,
    ) -> impl FnOnce(&[Range<u64>]) -> Result<Vec<Vec<u8>>> + 'a {
        move |spans| {
            asked.lock().expect("lock").extend(spans.iter().cloned());
            Ok(spans.iter().map(|s| part(object, s).to_vec()).collect())
        }
    }

    #[test]
    fn ranges_are_fetched_once_coalesced_and_served_from_the_cache() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = std::sync::Arc::new(Cache::open(&CacheOptions::new(dir.path())).expect("open"));
        let object: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let v1 = id(object.len() as u64, "one");
        let store = cache.ranges("s3://b/data_0.gulp", &v1);
        assert!(!store.any_cached());
        let asked = Mutex::new(Vec::new());
        // Two neighbours (one request) and one more than 1 MiB away.
        let want = [100..200, 204..300, 2_000_000..2_000_100];
        let got = store.read(&want, from(&object, &asked)).expect("read");
        for (r, bytes) in want.iter().zip(&got) {
            assert_eq!(&bytes[..], part(&object, r));
        }
        assert_eq!(
            *asked.lock().expect("lock"),
            vec![100..300, 2_000_000..2_000_100]
        );
        assert!(store.any_cached() && !store.whole_cached());
        // Another process's store finds them on disk: nothing fetched.
        let other = cache.ranges("s3://b/data_0.gulp", &v1);
        let asked = Mutex::new(Vec::new());
        let got = other
            .read(&[150..250, 2_000_010..2_000_020], from(&object, &asked))
            .expect("read");
        assert!(asked.lock().expect("lock").is_empty());
        assert_eq!(&got[0][..], &object[150..250]);
        assert_eq!(&got[1][..], &object[2_000_010..2_000_020]);
        // Only what is missing is fetched, and `fill` keeps without reading.
        let asked = Mutex::new(Vec::new());
        let fetched = other
            .fill(&[250..400, 2_500_000..2_500_010], from(&object, &asked))
            .expect("fill");
        assert_eq!(
            *asked.lock().expect("lock"),
            vec![250..400, 2_500_000..2_500_010]
        );
        assert_eq!(fetched, 160);
        // The ranges of one fetch share a file: their CRC-32s, then their
        // bytes.
        let mut names: Vec<String> = fs::read_dir(&store.dir)
            .expect("ls")
            .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["100-300,2000000-2000100", "250-400,2500000-2500010"]
        );
        let shared = fs::read(store.dir.join(&names[0])).expect("file");
        assert_eq!(shared.len(), 8 + 300);
        assert_eq!(
            shared[..4],
            crc32fast::hash(&object[100..300]).to_le_bytes()
        );
        assert_eq!(shared[8..208], object[100..300]);
        // A damaged span is never served: fetched again.
        let span = store.dir.join("2000000-2000100");
        let mut good = crc32fast::hash(&object[2_000_000..2_000_100])
            .to_le_bytes()
            .to_vec();
        good.extend_from_slice(&object[2_000_000..2_000_100]);
        let mut zeroed = good.clone();
        zeroed[40..60].fill(0);
        fs::remove_file(store.dir.join(&names[0])).expect("remove");
        for damage in [&b"short"[..], &zeroed[..], &object[2_000_000..2_000_100]] {
            // Truncated; the right length with the wrong bytes (what a
            // power loss may leave of a file that was not synced); a range
            // without its CRC-32.
            fs::write(&span, damage).expect("damage");
            let asked = Mutex::new(Vec::new());
            let got = cache
                .ranges("s3://b/data_0.gulp", &v1)
                .read(
                    &[2_000_000..2_000_100, 2_000_010..2_000_020],
                    from(&object, &asked),
                )
                .expect("read");
            assert_eq!(&got[0][..], &object[2_000_000..2_000_100]);
            assert_eq!(&got[1][..], &object[2_000_010..2_000_020]);
            assert_eq!(*asked.lock().expect("lock"), vec![2_000_000..2_000_100]);
            assert_eq!(fs::read(&span).expect("span"), good);
        }
        assert_eq!(fs::read_dir(dir.path().join(PARTS)).expect("ls").count(), 0);
        // The cache's objects removed under a store that knows its spans
        // (a user clearing the cache): fetched again, and kept again in
        // the directories made anew.
        fs::remove_dir_all(dir.path().join(OBJECTS)).expect("clear");
        let asked = Mutex::new(Vec::new());
        let got = store
            .read(&[100..200, 2_000_000..2_000_100], from(&object, &asked))
            .expect("read after clearing");
        assert_eq!(&got[0][..], &object[100..200]);
        assert_eq!(&got[1][..], &object[2_000_000..2_000_100]);
        assert_eq!(
            *asked.lock().expect("lock"),
            vec![100..200, 2_000_000..2_000_100]
        );
        let asked = Mutex::new(Vec::new());
        store
            .read(&[100..200], from(&object, &asked))
            .expect("read again");
        assert!(asked.lock().expect("lock").is_empty());
        assert!(store.dir.join("100-200,2000000-2000100").is_file());
    }

    #[test]
    fn ranges_less_than_a_mib_apart_share_a_request_and_the_gaps_are_kept_when_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = std::sync::Arc::new(Cache::open(&CacheOptions::new(dir.path())).expect("open"));
        let object: Vec<u8> = (0..4_000_000u32).map(|i| (i % 253) as u8).collect();
        let v1 = id(object.len() as u64, "one");
        // Frames 500 KB apart (a sampler skipping frames) and one 2 MB on.
        let want = [0..1_000, 500_000..501_000, 2_600_000..2_601_000];
        for keep_gaps in [false, true] {
            let url = format!("s3://b/gaps_{keep_gaps}");
            let store = cache.ranges(&url, &v1).keeping_gaps(keep_gaps);
            let asked = Mutex::new(Vec::new());
            let got = store.read(&want, from(&object, &asked)).expect("read");
            for (r, bytes) in want.iter().zip(&got) {
                assert_eq!(&bytes[..], part(&object, r));
            }
            // As without a cache: one request for the first two.
            assert_eq!(
                *asked.lock().expect("lock"),
                vec![0..501_000, 2_600_000..2_601_000]
            );
            if keep_gaps {
                assert_eq!(store.spans(), vec![0..501_000, 2_600_000..2_601_000]);
            } else {
                assert_eq!(store.spans(), want.to_vec());
            }
            // What lies between the first two is cached only when kept.
            let asked = Mutex::new(Vec::new());
            let got = store
                .read(&[250_000..250_100], from(&object, &asked))
                .expect("read between");
            assert_eq!(&got[0][..], &object[250_000..250_100]);
            let fetched = asked.lock().expect("lock").clone();
            assert_eq!(fetched.is_empty(), keep_gaps, "{fetched:?}");
        }
    }

    #[test]
    fn a_cache_that_will_hold_the_object_fetches_short_holes_with_the_ranges_beside_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = std::sync::Arc::new(Cache::open(&CacheOptions::new(dir.path())).expect("open"));
        let object: Vec<u8> = (0..5_000_000u32).map(|i| (i % 251) as u8).collect();
        let v1 = id(object.len() as u64, "one");
        let store = cache.ranges("s3://b/widen", &v1).keeping_gaps(true);
        let asked = Mutex::new(Vec::new());
        // Less than 256 KiB from the object's start: fetched from it.
        store
            .read(&[200_000..200_100], from(&object, &asked))
            .expect("read");
        // 2 MB on, then 200 KB past the span before: that hole comes
        // along; one of 300 KB does not.
        store
            .read(&[2_300_000..2_300_100], from(&object, &asked))
            .expect("read");
        store
            .read(&[2_500_000..2_500_100], from(&object, &asked))
            .expect("read");
        store
            .read(&[2_800_000..2_800_100], from(&object, &asked))
            .expect("read");
        // Less than 256 KiB from the object's end: fetched to it.
        let got = store
            .read(&[4_800_000..4_800_100], from(&object, &asked))
            .expect("read");
        assert_eq!(&got[0][..], &object[4_800_000..4_800_100]);
        assert_eq!(
            *asked.lock().expect("lock"),
            vec![
                0..200_100,
                2_300_000..2_300_100,
                2_300_100..2_500_100,
                2_800_000..2_800_100,
                4_800_000..5_000_000
            ]
        );
        // Without a whole copy to come, only the ranges read.
        let small = cache.ranges("s3://b/narrow", &v1);
        let asked = Mutex::new(Vec::new());
        small
            .read(&[200_000..200_100], from(&object, &asked))
            .expect("read");
        assert_eq!(*asked.lock().expect("lock"), vec![200_000..200_100]);
    }

    #[test]
    fn a_whole_copy_replaces_the_ranges_and_the_limit_counts_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = std::sync::Arc::new(
            Cache::open(&CacheOptions::new(dir.path()).with_limit(Some(25_000))).expect("open"),
        );
        let object: Vec<u8> = (0..20_000u32).map(|i| (i % 7) as u8).collect();
        let v1 = id(20_000, "one");
        let store = cache.ranges("s3://b/k", &v1);
        let asked = Mutex::new(Vec::new());
        store
            .fill(&[0..100, 10_000..10_100], from(&object, &asked))
            .expect("fill");
        assert_eq!(store.spans(), vec![0..100, 10_000..10_100]);
        // 200 bytes of ranges + 24,900 of another object: over the limit, so
        // the ranges (least recently used) are evicted.
        let other = cache
            .get("s3://b/other", &id(24_900, "x"), |f| {
                write_all(f, Path::new("t"), &[1; 24_900])
            })
            .expect("get")
            .expect("room");
        assert!(store.spans().is_empty(), "the ranges were evicted");
        drop(other);
        // A whole copy of an object removes its ranges.
        store.fill(&[0..100], from(&object, &asked)).expect("fill");
        assert_eq!(store.spans().len(), 1);
        let whole = cache
            .get("s3://b/k", &v1, |f| write_all(f, Path::new("t"), &object))
            .expect("get")
            .expect("room");
        assert!(store.whole_cached() && store.spans().is_empty());
        assert!(!store.dir.exists());
        drop(whole);
    }

    #[test]
    fn fetch_policies_parse_by_name() {
        for name in <CacheFetch as gulp_format::Choice>::NAMES {
            assert_eq!(name.parse::<CacheFetch>().expect("parses").name(), *name);
        }
        assert_eq!("ranges".parse::<CacheFetch>(), Ok(CacheFetch::Ranges));
        let err = "some".parse::<CacheFetch>().expect_err("unknown");
        assert!(
            err.to_string().contains("'auto', 'chunks', 'ranges'"),
            "{err}"
        );
    }
}
