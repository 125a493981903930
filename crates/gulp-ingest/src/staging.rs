//! Local staging directories of ingests into an object store.
//!
//! An ingest into `s3://...` writes each chunk in a directory of the system
//! temporary directory and uploads it when the chunk is committed. A run
//! that is killed cannot remove its directory, so every run removes those
//! that killed runs left: a staging directory holds a lock file that its run
//! keeps locked, and one whose lock nobody holds belongs to no live run (the
//! kernel releases a killed process's locks). A directory only gets its
//! staging name once its lock is held (it is made under another name and
//! renamed), so a run that is starting is never taken for a dead one.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The name of every staging directory starts with this.
const PREFIX: &str = "gulp-staging.";
/// A staging directory is made under this name, then renamed.
const NEW_PREFIX: &str = ".gulp-staging-new.";
/// The lock file in a staging directory; chunks go to [`OUT`] beside it.
const LOCK: &str = "lock";
const OUT: &str = "out";

/// A staging directory, locked while this lives and removed on drop.
#[derive(Debug)]
pub(crate) struct Staging {
    dir: PathBuf,
    out: PathBuf,
    _lock: File,
}

impl Staging {
    /// Makes a staging directory in the system temporary directory, after
    /// removing those that killed runs left there.
    pub(crate) fn create() -> Result<Staging> {
        let base = std::env::temp_dir();
        sweep(&base);
        Staging::create_in(&base)
    }

    /// Makes a locked staging directory in `base`.
    fn create_in(base: &Path) -> Result<Staging> {
        let fail = |e| Error::io("creating a staging directory in", base, e);
        let new = tempfile::Builder::new()
            .prefix(NEW_PREFIX)
            .tempdir_in(base)
            .map_err(fail)?;
        let lock = File::create(new.path().join(LOCK)).map_err(fail)?;
        lock.lock().map_err(fail)?;
        fs::create_dir(new.path().join(OUT)).map_err(fail)?;
        let suffix = new
            .path()
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(NEW_PREFIX))
            .unwrap_or_default()
            .to_owned();
        let dir = base.join(format!("{PREFIX}{suffix}"));
        fs::rename(new.path(), &dir).map_err(fail)?;
        // The renamed directory is this value's to remove now.
        let _ = new.keep();
        Ok(Staging {
            out: dir.join(OUT),
            dir,
            _lock: lock,
        })
    }

    /// Where the chunks are written.
    pub(crate) fn path(&self) -> &Path {
        &self.out
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Best effort: a directory left here is removed by a later run.
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Removes the staging directories in `base` whose lock no process holds
/// (what killed runs left); the paths removed. Best effort: a directory that
/// cannot be examined or removed is left alone.
fn sweep(base: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(base) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let is_staging = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(PREFIX));
        if !is_staging || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = entry.path();
        let Ok(lock) = File::open(dir.join(LOCK)) else {
            continue;
        };
        // Held by nobody: its run is gone. Removed while this holds it.
        if lock.try_lock().is_ok() && fs::remove_dir_all(&dir).is_ok() {
            removed.push(dir);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a killed run leaves: a staging directory with chunks, its lock
    /// file held by nobody.
    fn abandoned(base: &Path, suffix: &str) -> PathBuf {
        let dir = base.join(format!("{PREFIX}{suffix}"));
        fs::create_dir_all(dir.join(OUT)).unwrap();
        File::create(dir.join(LOCK)).unwrap();
        fs::write(dir.join(OUT).join("data_0.gulp"), b"partial").unwrap();
        dir
    }

    #[test]
    fn a_live_staging_directory_is_kept_and_an_abandoned_one_removed() {
        let base = tempfile::tempdir().unwrap();
        let live = Staging::create_in(base.path()).unwrap();
        assert!(live.path().is_dir());
        assert!(
            live.dir
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(PREFIX)
        );
        fs::write(live.path().join("data_0.gulp"), b"chunk").unwrap();
        let dead = abandoned(base.path(), "killed");
        // Not a staging directory: kept whatever it holds.
        let other = base.path().join("gulp-other");
        fs::create_dir(&other).unwrap();
        File::create(other.join(LOCK)).unwrap();

        assert_eq!(sweep(base.path()), vec![dead.clone()]);
        assert!(!dead.exists());
        assert!(live.path().join("data_0.gulp").is_file());
        assert!(other.is_dir());
        // Nothing else to remove; the live directory goes with its value.
        assert!(sweep(base.path()).is_empty());
        let dir = live.dir.clone();
        drop(live);
        assert!(!dir.exists());
        let left: Vec<_> = fs::read_dir(base.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("gulp-other")]);
    }

    #[test]
    fn a_staging_directory_without_its_lock_file_is_left_alone() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join(format!("{PREFIX}nolock"));
        fs::create_dir(&dir).unwrap();
        assert!(sweep(base.path()).is_empty());
        assert!(dir.is_dir());
    }
}
